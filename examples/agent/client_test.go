package main

import (
	"context"
	"net"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/httpbody"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// agentClient calls the agent's API (runtime/api) over the gRPC protocol,
// with a connect-go client, as kvctl does.
type agentClient struct {
	cl apiv1connect.AgentServiceClient
}

// grpcClient is a client of the agent's Unix socket sock.
func grpcClient(t *testing.T, sock string) agentClient {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }
	t.Cleanup(tr.CloseIdleConnections)
	return agentClient{apiv1connect.NewAgentServiceClient(&http.Client{Transport: tr}, "http://localhost",
		connect.WithGRPC(), connect.WithReadMaxBytes(apilimits.MaxMessageBytes))}
}

// httpClient is a client of the agent's TCP listener base (http://...),
// over the Connect protocol (HTTP/1.1, JSON).
func httpClient(base string) agentClient {
	return agentClient{apiv1connect.NewAgentServiceClient(http.DefaultClient, base, connect.WithProtoJSON())}
}

func call[Req, Resp any](ctx context.Context, f func(context.Context, *connect.Request[Req]) (*connect.Response[Resp], error), req *Req) (*Resp, error) {
	resp, err := f(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

func (c agentClient) Commit(ctx context.Context, req *apiv1.CommitRequest) (*apiv1.CommitResponse, error) {
	return call(ctx, c.cl.Commit, req)
}

func (c agentClient) Confirm(ctx context.Context, req *apiv1.ConfirmRequest) (*apiv1.ConfirmResponse, error) {
	return call(ctx, c.cl.Confirm, req)
}

func (c agentClient) RollbackTo(ctx context.Context, req *apiv1.RollbackToRequest) (*apiv1.RollbackToResponse, error) {
	return call(ctx, c.cl.RollbackTo, req)
}

func (c agentClient) Plan(ctx context.Context, req *apiv1.PlanRequest) (*apiv1.CommitResponse, error) {
	return call(ctx, c.cl.Plan, req)
}

func (c agentClient) Status(ctx context.Context, req *apiv1.StatusRequest) (*apiv1.StatusResponse, error) {
	return call(ctx, c.cl.Status, req)
}

func (c agentClient) Dump(ctx context.Context, req *apiv1.DumpRequest) (*apiv1.DumpResponse, error) {
	return call(ctx, c.cl.Dump, req)
}

func (c agentClient) History(ctx context.Context, req *apiv1.HistoryRequest) (*apiv1.HistoryResponse, error) {
	return call(ctx, c.cl.History, req)
}

func (c agentClient) Timeline(ctx context.Context, req *apiv1.TimelineRequest) (*apiv1.TimelineResponse, error) {
	return call(ctx, c.cl.Timeline, req)
}

func (c agentClient) Graph(ctx context.Context, req *apiv1.GraphRequest) (*httpbody.HttpBody, error) {
	return call(ctx, c.cl.Graph, req)
}

func (c agentClient) Watch(ctx context.Context, req *apiv1.WatchRequest) (*connect.ServerStreamForClient[apiv1.WatchResponse], error) {
	return c.cl.Watch(ctx, connect.NewRequest(req))
}

// status returns the status of key over the agent's HTTP listener (nil
// when the key has no value: NOT_FOUND).
func (a *agentProc) status(key string) *apiv1.ValueStatus {
	a.t.Helper()
	st, err := httpClient(a.base).Status(context.Background(), &apiv1.StatusRequest{Key: key})
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil
	}
	if err != nil {
		a.t.Fatalf("status %s: %v", key, err)
	}
	return st.GetStatuses()[0]
}
