package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
)

// etcdFlags are the flags of kvctl etcd: where etcd is, how to reach it,
// and the prefix of the agent's configuration.
type etcdFlags struct {
	endpoints          []string
	agent, prefix      string
	caFile             string
	certFile, keyFile  string
	username, password string // password: the file holding it
}

const etcdLong = `etcd reads and writes an agent's configuration in etcd, where the
agent's etcd source reads it (docs/fleet.md): the value of key K at
<prefix>K, the prefix /kvdescriptor/<agent>/config/ unless --prefix (the
agent's -etcd-prefix) replaces it; values written as protojson.

Every value written is checked first as the agent checks it: decoded as
its key's model (a key that no model handles, an unknown field or a
wrong type is refused) and validated by the model's schema (a value the
agent would make INVALID is refused), with the agent's error naming the
key and the field; nothing is written then (exit code 1). kvctl checks
with the models it is built with (Linux and VPP); what a plugin checks
beyond its schema is the agent's alone.

etcd is reached at --endpoints (env KVCTL_ETCD_ENDPOINTS); https://
endpoints, or --ca-file, use TLS; --cert-file and --key-file
authenticate kvctl by certificate, --username and --password-file by
password. --timeout bounds each request; an etcd that does not answer
is exit code 3.`

func (c *cli) etcdCmd() *cobra.Command {
	f := &etcdFlags{}
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Read and write an agent's configuration in etcd: get, put, delete, import",
		Long:  etcdLong,
		Args:  args(cobra.NoArgs),
	}
	pf := cmd.PersistentFlags()
	f.addConnFlags(pf)
	pf.StringVar(&f.agent, "agent", etcd.DefaultAgent, "the agent's name (-name): its configuration is under /kvdescriptor/NAME/config/")
	pf.StringVar(&f.prefix, "prefix", "", "the configuration prefix, as the agent's -etcd-prefix (default /kvdescriptor/<agent>/config/)")
	cmd.AddCommand(c.etcdGetCmd(f), c.etcdPutCmd(f), c.etcdDeleteCmd(f), c.etcdImportCmd(f))
	return cmd
}

// addConnFlags adds the flags that say where etcd is and how to reach it.
func (f *etcdFlags) addConnFlags(pf *pflag.FlagSet) {
	endpoints := []string{"http://127.0.0.1:2379"}
	if e := os.Getenv("KVCTL_ETCD_ENDPOINTS"); e != "" {
		endpoints = strings.Split(e, ",")
	}
	pf.StringSliceVar(&f.endpoints, "endpoints", endpoints, "etcd endpoints, comma-separated (env KVCTL_ETCD_ENDPOINTS)")
	pf.StringVar(&f.caFile, "ca-file", "", "PEM file of the CA that signed etcd's certificate (implies TLS)")
	pf.StringVar(&f.certFile, "cert-file", "", "client certificate file, for etcd's TLS client authentication (with --key-file)")
	pf.StringVar(&f.keyFile, "key-file", "", "client key file (with --cert-file)")
	pf.StringVar(&f.username, "username", "", "etcd user (with --password-file)")
	pf.StringVar(&f.password, "password-file", "", "file holding the etcd user's password")
}

// configPrefix is the prefix of the agent's configuration, as its etcd
// source makes it.
func (f *etcdFlags) configPrefix() string {
	return etcd.New(nil, nil, etcd.WithAgent(f.agent), etcd.WithPrefix(f.prefix)).Prefix()
}

// tlsConfig returns the TLS configuration of the flags, nil for none.
func (f *etcdFlags) tlsConfig() (*tls.Config, error) {
	https := false
	for _, e := range f.endpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	if !https && f.caFile == "" && f.certFile == "" && f.keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, usage("--ca-file: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usage("--ca-file %s: no PEM certificate", f.caFile)
		}
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return nil, usage("--cert-file and --key-file go together")
	}
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, usage("--cert-file, --key-file: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// client connects to etcd, within timeout; the caller closes it.
func (f *etcdFlags) client(timeout time.Duration) (*clientv3.Client, error) {
	if len(f.endpoints) == 0 {
		return nil, usage("--endpoints: none given")
	}
	tlsCfg, err := f.tlsConfig()
	if err != nil {
		return nil, err
	}
	// DialTimeout bounds the connection and, with a user, the
	// authentication, which New makes (without it, an etcd that refuses
	// the handshake holds kvctl for ever).
	cfg := clientv3.Config{Endpoints: f.endpoints, TLS: tlsCfg, Logger: zap.NewNop(), DialTimeout: timeout}
	if (f.username == "") != (f.password == "") {
		return nil, usage("--username and --password-file go together")
	}
	if f.username != "" {
		b, err := os.ReadFile(f.password)
		if err != nil {
			return nil, usage("--password-file: %v", err)
		}
		cfg.Username, cfg.Password = f.username, strings.TrimRight(string(b), "\r\n")
	}
	// With a user, New authenticates: its error may be etcd's answer.
	cl, err := clientv3.New(cfg)
	if err != nil {
		return nil, etcdError(f, err)
	}
	return cl, nil
}

// withEtcd runs fn with an etcd client and a context bounded by
// --timeout, and classifies its error.
func (c *cli) withEtcd(cmd *cobra.Command, f *etcdFlags, fn func(ctx context.Context, cl *clientv3.Client) error) error {
	cl, err := f.client(c.timeout)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), c.timeout)
	defer cancel()
	return etcdError(f, fn(ctx, cl))
}

// etcdError classifies an error of a request to etcd: one that did not
// reach it is exit code 3.
func etcdError(f *etcdFlags, err error) error {
	var ee *exitError
	switch {
	case err == nil || errors.As(err, &ee):
		return err
	case errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded:
		return &exitError{code: exitUnreachable, err: fmt.Errorf("cannot reach etcd at %s: %v", strings.Join(f.endpoints, ","), err)}
	case errors.Is(err, rpctypes.ErrAuthFailed):
		return failed("etcd at %s: %v (--username, --password-file)", strings.Join(f.endpoints, ","), err)
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return failed("%v: etcd bounds the operations of one transaction (its --max-txn-ops, 128 by default)", err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		return failed("%v: etcd bounds the size of one request (its --max-request-bytes, 1.5 MiB by default)", err)
	}
	return failed("etcd: %v", err)
}
