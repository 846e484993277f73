package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/descriptorpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/grpcapi"
)

// agentAPI is every call kvctl makes to the agent, one method per call of
// its API (models/kvdescriptor/api/v1). kvctl's commands see only this
// interface: grpcAgent implements it over today's gRPC client, and a
// client of another transport replaces it here, with dial and rpcError.
type agentAPI interface {
	Status(ctx context.Context, req *apiv1.StatusRequest) (*apiv1.StatusResponse, error)
	Dump(ctx context.Context, req *apiv1.DumpRequest) (*apiv1.DumpResponse, error)
	History(ctx context.Context, req *apiv1.HistoryRequest) (*apiv1.HistoryResponse, error)
	Timeline(ctx context.Context, req *apiv1.TimelineRequest) (*apiv1.TimelineResponse, error)
	Models(ctx context.Context, req *apiv1.ModelsRequest) (*apiv1.ModelsResponse, error)
	Graph(ctx context.Context, req *apiv1.GraphRequest) (*httpbody.HttpBody, error)
	Commit(ctx context.Context, req *apiv1.CommitRequest) (*apiv1.CommitResponse, error)
	Confirm(ctx context.Context, req *apiv1.ConfirmRequest) (*apiv1.ConfirmResponse, error)
	RollbackTo(ctx context.Context, req *apiv1.RollbackToRequest) (*apiv1.RollbackToResponse, error)
	// Watch streams status changes until ctx ends.
	Watch(ctx context.Context, req *apiv1.WatchRequest) (watchStream, error)
}

// watchStream is the stream of a Watch.
type watchStream interface {
	Recv() (*apiv1.WatchResponse, error)
}

// grpcAgent is agentAPI over the agent's gRPC API.
type grpcAgent struct{ cl apiv1.AgentServiceClient }

var _ agentAPI = grpcAgent{}

func (g grpcAgent) Status(ctx context.Context, req *apiv1.StatusRequest) (*apiv1.StatusResponse, error) {
	return g.cl.Status(ctx, req)
}

func (g grpcAgent) Dump(ctx context.Context, req *apiv1.DumpRequest) (*apiv1.DumpResponse, error) {
	return g.cl.Dump(ctx, req)
}

func (g grpcAgent) History(ctx context.Context, req *apiv1.HistoryRequest) (*apiv1.HistoryResponse, error) {
	return g.cl.History(ctx, req)
}

func (g grpcAgent) Timeline(ctx context.Context, req *apiv1.TimelineRequest) (*apiv1.TimelineResponse, error) {
	return g.cl.Timeline(ctx, req)
}

func (g grpcAgent) Models(ctx context.Context, req *apiv1.ModelsRequest) (*apiv1.ModelsResponse, error) {
	return g.cl.Models(ctx, req)
}

func (g grpcAgent) Graph(ctx context.Context, req *apiv1.GraphRequest) (*httpbody.HttpBody, error) {
	return g.cl.Graph(ctx, req)
}

func (g grpcAgent) Commit(ctx context.Context, req *apiv1.CommitRequest) (*apiv1.CommitResponse, error) {
	return g.cl.Commit(ctx, req)
}

func (g grpcAgent) Confirm(ctx context.Context, req *apiv1.ConfirmRequest) (*apiv1.ConfirmResponse, error) {
	return g.cl.Confirm(ctx, req)
}

func (g grpcAgent) RollbackTo(ctx context.Context, req *apiv1.RollbackToRequest) (*apiv1.RollbackToResponse, error) {
	return g.cl.RollbackTo(ctx, req)
}

func (g grpcAgent) Watch(ctx context.Context, req *apiv1.WatchRequest) (watchStream, error) {
	return g.cl.Watch(ctx, req)
}

// rpcError classifies an error of a call of agentAPI.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.Unavailable:
		return &exitError{code: exitUnreachable, err: fmt.Errorf("cannot reach the agent: %s", status.Convert(err).Message())}
	case codes.InvalidArgument:
		return &exitError{code: exitFailed, err: errors.New(status.Convert(err).Message())}
	}
	if s, ok := status.FromError(err); ok {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", s.Code(), s.Message())}
	}
	return &exitError{code: exitFailed, err: err}
}

// dial connects to the agent (lazily: the first call reports an
// unreachable agent).
func (c *cli) dial() (agentAPI, error) {
	if c.client != nil {
		return c.client, nil
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	useTLS := c.tls || c.tlsCA != ""
	if useTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.tlsCA != "" {
			pem, err := os.ReadFile(c.tlsCA)
			if err != nil {
				return nil, usage("--tls-ca: %v", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, usage("--tls-ca %s: no PEM certificate", c.tlsCA)
			}
		}
		opts[0] = grpc.WithTransportCredentials(credentials.NewTLS(cfg))
	}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, usage("--token-file: %v", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, usage("--token-file %s: empty (or white space only): it must hold the token", c.tokenFile)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(grpcapi.TokenCredentials(token, !useTLS)))
	}
	target := c.server
	if strings.HasPrefix(target, "/") {
		target = "unix:" + target
	} else if !strings.HasPrefix(target, "unix:") && !strings.Contains(target, "://") {
		target = "passthrough:///" + target
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, usage("--server %q: %v", c.server, err)
	}
	c.conn = conn
	c.client = grpcAgent{apiv1.NewAgentServiceClient(conn)}
	return c.client, nil
}

// call runs f with a client and a context bounded by --timeout.
func (c *cli) call(cmd *cobra.Command, f func(ctx context.Context, cl agentAPI) error) error {
	cl, err := c.dial()
	if err != nil {
		return err
	}
	// A call that waits on the agent for at most --timeout gets a
	// little more, so that the agent's answer arrives.
	ctx, cancel := context.WithTimeout(cmd.Context(), c.timeout+c.grace)
	defer cancel()
	return rpcError(f(ctx, cl))
}

// schema asks the agent for the .proto files of its models (types calls
// it once, the first time kvctl lacks a type).
func (c *cli) schema() (*descriptorpb.FileDescriptorSet, error) {
	cl, err := c.dial()
	if err != nil {
		return nil, err
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := cl.Models(ctx, &apiv1.ModelsRequest{IncludeSchema: true})
	if err != nil {
		return nil, err
	}
	return resp.GetSchema(), nil
}

// httpGet reads path from the agent's HTTP API at base (a URL, or
// host:port for plain HTTP): what only that API serves (metrics, the
// readiness detail). A status other than 200 is an error with the body's
// first line.
func (c *cli) httpGet(ctx context.Context, base, path string) ([]byte, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usage("--http %q: want http://HOST:PORT (or HOST:PORT)", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the agent's HTTP API: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPBody+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(body) > maxHTTPBody {
		return nil, fmt.Errorf("GET %s: the answer is larger than %d bytes", u, maxHTTPBody)
	}
	// /readyz answers 503 with its detail while the agent is not ready:
	// the detail is what a report wants.
	if resp.StatusCode != http.StatusOK && !(path == "/readyz" && resp.StatusCode == http.StatusServiceUnavailable) {
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, line)
	}
	return body, nil
}

// maxHTTPBody bounds what httpGet reads (metrics of a large agent run to
// megabytes).
const maxHTTPBody = 64 << 20
