package grpcapi_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/grpcapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The gRPC API on a Unix socket in a temporary directory, and a client:
// a plan only executes nothing, a commit applies the values as the "grpc"
// source, Status reads them back with their owner, and a bad request is
// INVALID_ARGUMENT naming the field.
func Example() {
	ctx := context.Background()
	s, err := scheduler.New(scheduler.WithTxnLog(false))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	sb := kvtest.NewSB()
	iface, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		log.Fatal(err)
	}
	route, err := sb.Descriptor(kvtest.Config{Name: "route", KeyTemplate: "route/{dst:ipprefix}"})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Register(iface, route); err != nil {
		log.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "grpcapi-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := nb.NewMux(s, nb.WithMuxLogger(quiet))
	defer mux.Close()
	srv, err := grpcapi.NewServer(grpcapi.Config{
		Scheduler: s,
		Mux:       mux,
		StateFile: filepath.Join(dir, "grpc.json"),
		Logger:    quiet,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	sock := filepath.Join(dir, "grpc.sock")
	ln, err := grpcapi.Listen("unix:"+sock, false)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)

	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := apiv1.NewAgentServiceClient(conn)

	value := func(key, text string) *apiv1.Value {
		a, err := anypb.New(kvtest.Value(text))
		if err != nil {
			log.Fatal(err)
		}
		return &apiv1.Value{Key: key, Value: &apiv1.Value_Any{Any: a}}
	}
	values := []*apiv1.Value{value("route/10.0.0.0/8", "dep:iface/eth0"), value("iface/eth0", "up")}

	plan, err := client.Commit(ctx, &apiv1.CommitRequest{Values: values, PlanOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, op := range plan.GetPlanned() {
		fmt.Println("plan:", op.GetKind(), op.GetKey(), op.GetState())
	}
	fmt.Println("after the plan:", s.Status("iface/eth0").State)

	res, err := client.Commit(ctx, &apiv1.CommitRequest{Values: values, Description: "example", Wait: true})
	if err != nil {
		log.Fatal(err)
	}
	// Transaction 1 was the startup resync, when the source loaded.
	fmt.Println("committed: transaction", res.GetSeq())

	st, err := client.Status(ctx, &apiv1.StatusRequest{Prefix: "route/"})
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range st.GetStatuses() {
		fmt.Println("status:", v.GetKey(), v.GetState(), "owner:", v.GetOwner())
	}

	_, err = client.Commit(ctx, &apiv1.CommitRequest{Values: []*apiv1.Value{value("x", "up")}})
	fmt.Println(status.Code(err) == codes.InvalidArgument, status.Convert(err).Message())
	// Output:
	// plan: CREATE iface/eth0 CONFIGURED
	// plan: CREATE route/10.0.0.0/8 CONFIGURED
	// after the plan: NONEXISTENT
	// committed: transaction 2
	// status: route/10.0.0.0/8 CONFIGURED owner: grpc
	// true values[0].key: "x" is not a key of any model
}
