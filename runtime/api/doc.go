// Package api is the agent's API: the one implementation of the
// AgentService of models/kvdescriptor/api/v1/api.proto, served over gRPC,
// gRPC-Web, Connect (HTTP with JSON or protobuf bodies) and REST (the
// google.api.http paths of api.proto, the reference agent's /scheduler/...
// paths among them) by a single http.Handler, with gRPC server reflection
// and the probes /healthz and /readyz.
//
//	remote, err := nb.NewRemote(mux, models, nb.RemoteConfig{})
//	...
//	svc, err := api.New(api.Deps{Scheduler: s, Mux: mux, Remote: remote, LogLevel: level})
//	...
//	srv, err := api.NewServer(svc, api.ServerConfig{Address: "127.0.0.1:9191"})
//	...
//	go srv.Serve()
//
// Service.Handler is the handler alone, to mount in another server;
// Server owns a listener with the transport's limits (timeouts, sizes,
// streams, connections, see Limits) and, without a token, refuses the
// requests of web pages (a foreign Origin, a Host that is not the listen
// address).
//
// The API's transactions are those of the nb.Remote source: a source of
// the Mux like the file or etcd ones, whose confirmed commits and states
// the Remote keeps in the Mux's store. Every error names the argument it is
// about first ("key: ..."), with a google.rpc.BadRequest detail, and has
// the same code over every transport (REST: the HTTP status of that code);
// docs/api.md lists the choices made where the former HTTP and gRPC APIs
// disagreed.
//
// The package is not imported by runtime/scheduler: a program that serves
// no API links none of it.
package api
