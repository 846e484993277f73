// Package grpcapi serves an agent's gRPC API (the AgentService of
// models/kvdescriptor/api/v1): remote transactions, confirmed commits and
// rollbacks, and reads of the scheduler's state.
//
// Serve it next to the Mux whose "grpc" source it drives:
//
//	srv, err := grpcapi.NewServer(grpcapi.Config{
//		Scheduler: s,
//		Mux:       mux,
//		StateFile: filepath.Join(stateDir, "grpc.json"),
//	})
//	...
//	defer srv.Close()
//	ln, err := grpcapi.Listen("unix:"+filepath.Join(stateDir, "grpc.sock"), false)
//	...
//	go srv.Serve(ln)
//
// Clients use the generated apiv1.AgentServiceClient (cmd/kvctl is one),
// with TokenCredentials when the server has a Token.
//
// The gRPC client is one more northbound source of the agent, with its own
// owner (Config.Source, "grpc" by default): its commits go through the
// nb.Mux like any source's updates, so that the agent's ownership rules and
// priorities apply, and a plan only is a dry run over the merged state.
//
// The source's state (what the gRPC clients intend) and a commit awaiting
// confirmation, with the state before it, are kept in a small JSON file
// (Config.StateFile), written atomically ahead of every commit and after
// it: a server started over a file that holds a commit awaiting
// confirmation rolls it back first. A confirmed commit must make a
// transaction (the one its confirmation names): one that would make none
// is refused and changes nothing. A plan only tells, per value, the state
// the plan leads to, the source that would own it, and warns where
// another source's value would win over the gRPC source's. The states
// the source had after its
// recent transactions (for RollbackTo; Config.StatesKept of them) are kept
// in memory, like the scheduler's history whose sequence numbers they
// follow.
//
// The package is not imported by runtime/scheduler: an agent that does not
// serve gRPC does not link it.
package grpcapi
