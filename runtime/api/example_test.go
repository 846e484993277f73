package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// An agent's API on the loopback: the service over the scheduler and its
// Mux, the API's own source, and a client of the Connect protocol (any of
// gRPC, gRPC-Web, Connect or REST would do).
func Example() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	s, _ := scheduler.New(scheduler.WithLogger(quiet))
	defer s.Close(ctx)
	d, _ := kvtest.NewSB().Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	_ = s.Register(d)

	mux := nb.NewMux(s, nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0))
	defer mux.Close()
	remote, err := nb.NewRemote(mux, nb.SchedulerModels(s), nb.RemoteConfig{Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer remote.Close()
	svc, err := api.New(api.Deps{Scheduler: s, Mux: mux, Remote: remote, LogLevel: new(slog.LevelVar), Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	srv, err := api.NewServer(svc, api.ServerConfig{Address: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		panic(err)
	}
	go srv.Serve()
	defer srv.Close()

	client := apiv1connect.NewAgentServiceClient(http.DefaultClient, "http://"+srv.Addr())
	_, err = client.Commit(ctx, connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{jsonValue("iface/eth0", "up")}}))
	if err != nil {
		panic(err)
	}
	st, err := client.Status(ctx, connect.NewRequest(&apiv1.StatusRequest{Key: "iface/eth0"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Msg.GetStatuses()[0].GetState(), st.Msg.GetStatuses()[0].GetOwner())
	_, err = client.Status(ctx, connect.NewRequest(&apiv1.StatusRequest{Key: "iface/eth1"}))
	fmt.Println(connect.CodeOf(err), err.(*connect.Error).Message())
	// Output:
	// CONFIGURED api
	// not_found key: "iface/eth1" has no value
}
