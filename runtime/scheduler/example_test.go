package scheduler_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// exampleSouthbound stands in for the system being configured: it prints
// each call it gets.
type exampleSouthbound struct{}

func (exampleSouthbound) Create(_ context.Context, key string, _ *wrapperspb.StringValue) (struct{}, error) {
	fmt.Println("southbound: create", key)
	return struct{}{}, nil
}

func (exampleSouthbound) Delete(_ context.Context, key string, _ *wrapperspb.StringValue, _ struct{}) error {
	fmt.Println("southbound: delete", key)
	return nil
}

// A route committed before the interface it depends on waits as PENDING,
// and is created in the transaction that brings the interface.
func Example() {
	// Two descriptors written by hand; generated code will provide the Spec.
	// An interface's value is its description; a route's value is the name
	// of its outgoing interface, which it depends on.
	iface, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{
		Name:        "interface",
		KeyTemplate: "example/interface/{name}",
	}, exampleSouthbound{})
	if err != nil {
		log.Fatal(err)
	}
	route, err := kv.NewDescriptor(kv.Spec[string, *wrapperspb.StringValue, struct{}]{
		Name:        "route",
		KeyTemplate: "example/route/{dst:ipprefix}",
		Dependencies: func(_ string, v *wrapperspb.StringValue) []kv.Dependency {
			return []kv.Dependency{{Label: "interface", Key: "example/interface/" + v.GetValue()}}
		},
	}, exampleSouthbound{})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	s, err := scheduler.New(scheduler.WithTxnLog(false))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	if err := s.Register(iface, route); err != nil {
		log.Fatal(err)
	}

	const routeKey = "example/route/10.20.0.0/16"
	if _, err := s.Txn().Set(routeKey, wrapperspb.String("eth0")).Commit(ctx); err != nil {
		log.Fatal(err)
	}
	st := s.Status(routeKey)
	fmt.Println("route:", st.State, "waiting for", st.Unmet)

	if _, err := s.Txn().Set("example/interface/eth0", wrapperspb.String("uplink")).Commit(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("route:", s.Status(routeKey).State)
	fmt.Println("interface:", s.Status("example/interface/eth0").State)

	// Output:
	// route: PENDING waiting for [interface -> example/interface/eth0]
	// southbound: create example/interface/eth0
	// southbound: create example/route/10.20.0.0/16
	// route: CONFIGURED
	// interface: CONFIGURED
}
