// Package httpapi is the HTTP API of an agent built on the scheduler. New
// returns its handler, to serve on a listener of the agent:
//
//	h, err := httpapi.New(httpapi.Config{Scheduler: s, Owners: mux, Metrics: promHandler})
//	if err != nil { ... }
//	err = http.ListenAndServe("127.0.0.1:9191", h)
//
// It serves what an operator reads (statuses with why-pending and owner,
// history, key timelines, the graph, dumps in three views, registered
// models, metrics, health) and the few things an operator does (a
// downstream resync, a plan preview). JSON by default (values in the protojson form of their
// model), text where a person reads it (?format=text).
//
//	GET  /healthz                         alive: 200 "ok"
//	GET  /readyz                          200 once ready (Config.Ready), else 503; the detail as JSON
//	GET  /metrics                         Prometheus metrics (Config.Metrics)
//	GET  /status?key=K | prefix=P | descriptor=D [&format=text]
//	                                      value statuses, with why-pending and owner
//	GET  /history[?seq=N | since=T&until=T][&format=text]
//	                                      transaction records; T is RFC 3339 or a duration ago ("10m")
//	GET  /timeline?key=K[&at=T][&format=text]
//	                                      the changes of one value (up to time T)
//	GET  /graph[?seq=N | time=T][&format=svg|dot|json]
//	                                      the graph now or as of transaction N (or time T), its values highlighted
//	GET  /stats[?prefix=P][&flag=F]       values by state, and operations of the history by flag
//	GET  /dump?view=intended|southbound|scheduler[&descriptor=D | prefix=P]
//	                                      values in one of three views (southbound: through Retrieve)
//	GET  /models                          registered models: key template, message, fields
//	POST /resync/downstream[?retry=true][&verbose=true]
//	                                      a downstream resync; verbose returns the operations
//	POST /plan[?format=file]              body {"set": {KEY: VALUE, ...}, "delete": [KEY, ...]}, or
//	                                      with format=file a configuration file (YAML or JSON, as the
//	                                      file source reads it): the plan the scheduler would execute
//	                                      (a dry run of the file source's apply of that file, deletes
//	                                      included; 501 without Config.PlanFile); nothing executed
//	GET  /ui/                             the operator page (HTML; see ui.go); GET / redirects a
//	                                      browser (Accept: text/html) there
//
// A bad request gets a 4xx with {"error": ..., "argument": ...} naming
// the argument; an unknown key or descriptor a 404 naming it; a wrong
// method 405 with Allow. POSTs need "Authorization: Bearer TOKEN" when
// Config.Token is set (an agent sets it when it listens beyond loopback).
package httpapi
