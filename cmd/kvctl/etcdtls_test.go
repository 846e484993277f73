package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd/etcdtest"
)

// TestEtcdTLSAuth: kvctl etcd against an etcd server that serves TLS,
// requires a client certificate, and has authentication on (user root):
// with --ca-file, --cert-file, --key-file, --username and
// --password-file it writes; without the client certificate, or with a
// wrong password, it writes nothing and fails.
func TestEtcdTLSAuth(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTLSFiles(t, dir)
	url := "https://" + freeAddr(t)
	peer := "http://" + freeAddr(t)
	srv := exec.Command(etcdtest.Binary(t), "--name", "tls", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "tls="+peer,
		"--cert-file", cert, "--key-file", key, "--client-cert-auth", "--trusted-ca-file", ca, "--log-level", "error")
	var log syncBuffer
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() })

	// The root user, then authentication on, over the test's own client.
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	pemCA, _ := os.ReadFile(ca)
	roots.AppendCertsFromPEM(pemCA)
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, Logger: zap.NewNop(),
		TLS: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, Certificates: []tls.Certificate{pair}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := cl.UserAdd(ctx, "root", "r00t-pw"); return err },
		func() error { _, err := cl.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cl.AuthEnable(ctx); return err },
	} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			err := step()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("setting up etcd: %v\n%s", err, log.String())
			}
		}
	}
	pw := writeConfig(t, dir, "pw", "r00t-pw\n")
	wrong := writeConfig(t, dir, "wrong", "n0t-it\n")
	et := func(args ...string) (string, int) {
		t.Helper()
		return kvctl(t, append([]string{"--timeout", "10s", "etcd", "--endpoints", url, "--agent", "tls", "--ca-file", ca}, args...)...)
	}
	put := func(name string) []string {
		return []string{"put", "linux/interface/" + name, "{name: " + name + ", type: TYPE_DUMMY}"}
	}
	if out, code := et(append([]string{"--username", "root", "--password-file", wrong, "--cert-file", cert, "--key-file", key}, put("t0")...)...); code != 1 || !strings.Contains(out, "authentication failed") {
		t.Errorf("a wrong password: exit code %d, want 1\n%s", code, out)
	}
	start := time.Now()
	out, code := et(append([]string{"--username", "root", "--password-file", pw}, put("t2")...)...)
	t.Logf("no client certificate: exit code %d after %s: %s", code, time.Since(start), out)
	if code != 3 {
		t.Errorf("no client certificate: exit code %d, want 3 (etcd refuses the handshake)\n%s", code, out)
	}
	out, code = et(append([]string{"--username", "root", "--password-file", pw, "--cert-file", cert, "--key-file", key}, put("t1")...)...)
	if code != 0 {
		t.Fatalf("put over TLS with a password: exit code %d\n%s\n%s", code, out, log.String())
	}
	out, code = et("--username", "root", "--password-file", pw, "--cert-file", cert, "--key-file", key, "get")
	if code != 0 || strings.Count(out, "linux/interface/t1") != 1 || strings.Contains(out, "t0") || strings.Contains(out, "t2") {
		t.Errorf("get over TLS: exit code %d, want t1 only\n%s", code, out)
	}
}

// writeTLSFiles writes a self-signed certificate for 127.0.0.1, for
// servers and clients, and its key; the certificate is its own CA.
func writeTLSFiles(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kvctl etcd test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert = writeConfig(t, dir, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	key = writeConfig(t, dir, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return cert, cert, key
}
