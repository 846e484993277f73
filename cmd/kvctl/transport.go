package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/types/descriptorpb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// agentAPI is every call kvctl makes to the agent, one method per call of
// its API (models/kvdescriptor/api/v1). kvctl's commands see only this
// interface: connectAgent implements it with a connect-go client, and a
// client of another transport would replace it here, with dial and
// rpcError.
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
	Readiness(ctx context.Context, req *apiv1.ReadinessRequest) (*apiv1.ReadinessResponse, error)
	SetLogLevel(ctx context.Context, req *apiv1.SetLogLevelRequest) (*apiv1.SetLogLevelResponse, error)
	AgentInfo(ctx context.Context, req *apiv1.AgentInfoRequest) (*apiv1.AgentInfoResponse, error)
}

// watchStream is the stream of a Watch.
type watchStream interface {
	Recv() (*apiv1.WatchResponse, error)
}

// connectAgent is agentAPI over the agent's API (runtime/api) with a
// connect-go client speaking the gRPC protocol (HTTP/2: h2c, or TLS with
// ALPN), whose receive limit is the agent's message limit.
type connectAgent struct {
	cl apiv1connect.AgentServiceClient
}

var _ agentAPI = connectAgent{}

func unary[Req, Resp any](ctx context.Context, f func(context.Context, *connect.Request[Req]) (*connect.Response[Resp], error), req *Req) (*Resp, error) {
	resp, err := f(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

func (g connectAgent) Status(ctx context.Context, req *apiv1.StatusRequest) (*apiv1.StatusResponse, error) {
	return unary(ctx, g.cl.Status, req)
}

func (g connectAgent) Dump(ctx context.Context, req *apiv1.DumpRequest) (*apiv1.DumpResponse, error) {
	return unary(ctx, g.cl.Dump, req)
}

func (g connectAgent) History(ctx context.Context, req *apiv1.HistoryRequest) (*apiv1.HistoryResponse, error) {
	return unary(ctx, g.cl.History, req)
}

func (g connectAgent) Timeline(ctx context.Context, req *apiv1.TimelineRequest) (*apiv1.TimelineResponse, error) {
	return unary(ctx, g.cl.Timeline, req)
}

func (g connectAgent) Models(ctx context.Context, req *apiv1.ModelsRequest) (*apiv1.ModelsResponse, error) {
	return unary(ctx, g.cl.Models, req)
}

func (g connectAgent) Graph(ctx context.Context, req *apiv1.GraphRequest) (*httpbody.HttpBody, error) {
	return unary(ctx, g.cl.Graph, req)
}

func (g connectAgent) Commit(ctx context.Context, req *apiv1.CommitRequest) (*apiv1.CommitResponse, error) {
	return unary(ctx, g.cl.Commit, req)
}

func (g connectAgent) Confirm(ctx context.Context, req *apiv1.ConfirmRequest) (*apiv1.ConfirmResponse, error) {
	return unary(ctx, g.cl.Confirm, req)
}

func (g connectAgent) RollbackTo(ctx context.Context, req *apiv1.RollbackToRequest) (*apiv1.RollbackToResponse, error) {
	return unary(ctx, g.cl.RollbackTo, req)
}

func (g connectAgent) AgentInfo(ctx context.Context, req *apiv1.AgentInfoRequest) (*apiv1.AgentInfoResponse, error) {
	return unary(ctx, g.cl.AgentInfo, req)
}

func (g connectAgent) Readiness(ctx context.Context, req *apiv1.ReadinessRequest) (*apiv1.ReadinessResponse, error) {
	return unary(ctx, g.cl.Readiness, req)
}

func (g connectAgent) SetLogLevel(ctx context.Context, req *apiv1.SetLogLevelRequest) (*apiv1.SetLogLevelResponse, error) {
	return unary(ctx, g.cl.SetLogLevel, req)
}

func (g connectAgent) Watch(ctx context.Context, req *apiv1.WatchRequest) (watchStream, error) {
	st, err := g.cl.Watch(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return connectStream{st}, nil
}

type connectStream struct {
	st *connect.ServerStreamForClient[apiv1.WatchResponse]
}

func (s connectStream) Recv() (*apiv1.WatchResponse, error) {
	if s.st.Receive() {
		return s.st.Msg(), nil
	}
	if err := s.st.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// rpcError classifies an error of a call of agentAPI.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return &exitError{code: exitFailed, err: err}
	}
	switch ce.Code() {
	case connect.CodeUnavailable:
		return &exitError{code: exitUnreachable, err: fmt.Errorf("cannot reach the agent: %s", ce.Message())}
	case connect.CodeInvalidArgument:
		return &exitError{code: exitFailed, err: errors.New(ce.Message())}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", codeName(ce.Code()), ce.Message())}
}

// codeName is a code's name as gRPC spells it (not_found: NotFound).
func codeName(c connect.Code) string {
	var b strings.Builder
	for _, w := range strings.Split(c.String(), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// dial makes the client of the agent (lazily: the first call reports an
// unreachable agent): an HTTP/2 client of --server, the same for the API's
// calls and the HTTP GETs beside it (metrics).
func (c *cli) dial() (agentAPI, error) {
	if c.client != nil {
		return c.client, nil
	}
	tr := &http.Transport{Protocols: new(http.Protocols), ForceAttemptHTTP2: true}
	scheme := "http"
	if c.tls || c.tlsCA != "" {
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
		tr.TLSClientConfig = cfg
		tr.Protocols.SetHTTP2(true)
		scheme = "https"
	} else {
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	var token string
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, usage("--token-file: %v", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return nil, usage("--token-file %s: empty (or white space only): it must hold the token", c.tokenFile)
		}
	}
	host := c.server
	if path, ok := strings.CutPrefix(host, "unix:"); ok || strings.HasPrefix(host, "/") {
		if !ok {
			path = host
		}
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
		host = "localhost"
	} else if _, _, err := net.SplitHostPort(host); err != nil {
		return nil, usage("--server %q: want unix:PATH or host:port", c.server)
	}
	traceparent := os.Getenv("TRACEPARENT")
	if traceparent != "" && !validTraceparent(traceparent) {
		return nil, usage("TRACEPARENT %q: not a W3C traceparent (00-<32 hex digits: trace id>-<16 hex digits: span id>-<2 hex digits: flags>)", traceparent)
	}
	c.httpClient = &http.Client{Transport: bearerTransport{next: tr, token: token, traceparent: traceparent}}
	c.base = scheme + "://" + host
	c.client = connectAgent{apiv1connect.NewAgentServiceClient(c.httpClient, c.base,
		connect.WithGRPC(),
		connect.WithReadMaxBytes(apilimits.MaxMessageBytes),
		connect.WithSendMaxBytes(apilimits.MaxMessageBytes),
	)}
	return c.client, nil
}

// bearerTransport sends the token, if any, with every request, and the
// trace context of the environment's TRACEPARENT, if set: an agent that
// traces makes the transactions of kvctl's requests children of the span
// it names (a CI job's, say).
type bearerTransport struct {
	next        http.RoundTripper
	token       string
	traceparent string
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" || b.traceparent != "" {
		r = r.Clone(r.Context())
	}
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.traceparent != "" {
		r.Header.Set("Traceparent", b.traceparent)
	}
	return b.next.RoundTrip(r)
}

// validTraceparent reports whether s is a W3C traceparent: version,
// trace id, parent span id and flags in lower-case hex, the ids not zero,
// version ff invalid.
func validTraceparent(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || (parts[0] == "00" && len(parts) != 4) {
		return false
	}
	for i, n := range []int{2, 32, 16, 2} {
		p := parts[i]
		if len(p) != n || strings.Trim(p, "0123456789abcdef") != "" {
			return false
		}
		if (i == 1 || i == 2) && strings.Trim(p, "0") == "" {
			return false
		}
	}
	return true
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

// httpGet reads path (GET) from the agent's listener at --server, beside
// its API: the metrics. A status other than 200 is an error with the
// body's first line.
func (c *cli) httpGet(ctx context.Context, path string) ([]byte, error) {
	if _, err := c.dial(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the agent: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPBody+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if len(body) > maxHTTPBody {
		return nil, fmt.Errorf("GET %s: the answer is larger than %d bytes", path, maxHTTPBody)
	}
	if resp.StatusCode != http.StatusOK {
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, line)
	}
	return body, nil
}

// maxHTTPBody bounds what httpGet reads (metrics of a large agent run to
// megabytes).
const maxHTTPBody = 64 << 20
