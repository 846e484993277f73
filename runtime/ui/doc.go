// Package ui is the agent's operator page: a few server-rendered HTML views
// of the agent's state, for a person with a browser. It is a client of the
// agent's API like kvctl: every page is rendered on the server from the
// calls of the AgentService (Status, History, Timeline, Graph,
// GraphSnapshot, Readiness, Dump, Stats, Watch), so that it shows what every other client is
// told, and nothing that it would read from the scheduler itself.
//
// An agent mounts it beside the API, in the API's own Server (which then
// applies its limits and, without a token, its refusal of other sites'
// pages to the page too):
//
//	page, err := ui.New(svc, ui.Options{}) // svc: the *api.Service
//	...
//	srv, err := api.NewServer(svc, api.ServerConfig{Address: addr, Mount: map[string]http.Handler{"/ui/": page}})
//
// or in any http.ServeMux, at Options.Path ("/ui/" by default):
//
//	mux.Handle("/ui/", page)
//
// The service may also be a client of a remote agent
// (apiv1connect.NewAgentServiceClient): the page is then that agent's.
//
// The pages, relative to the mount point:
//
//	GET /ui/                              overview: values by state, what needs attention, readiness, the last transactions
//	GET /ui/values[?prefix=P][&state=S]   values with state, owner, descriptor, why pending or the last error
//	GET /ui/value?key=K                   one value: status, why it is pending, its last changes
//	GET /ui/timeline?key=K                every recorded change of one value
//	GET /ui/history[?before=N][&limit=L]  transactions with their plans, newest first
//	GET /ui/txn?seq=N                     one transaction: its input, plan, execution
//	GET /ui/graph[?seq=N][&model=M][&state=S][&key=K&depth=D]
//	                                      the dependency graph (SVG), now or as of transaction N, filtered
//	                                      (a graph beyond Options.MaxGraphNodes is refused, naming the filters)
//	GET /ui/plots                         the last hour per minute, as SVG drawn here: transactions, durations, states, retries and failures
//	GET /ui/search?q=T                    the values whose key or value holds T
//	GET /ui/diff?a=N&b=M                  what differs between the values after transactions N and M
//	GET /ui/diff?key=K                    the intended value of K against the southbound's
//	GET, POST /ui/login                   the token's form (with a token)
//	GET /ui/events[?prefix=P]             the live updates: server-sent events of the API's Watch
//
// The pages follow the agent live: static/live.js reads GET events and
// updates the states and errors a page shows, without a reload. The
// streams are bounded in number (Options.MaxLiveStreams; one more is 503)
// and in lifetime (Options.LiveStreamLifetime; the browser then opens a
// new one). The service streams when it has WatchFunc (*api.Service) or a
// client's Watch (apiv1connect.AgentServiceClient); otherwise events is
// 501 and the pages are as loaded.
//
// The plots (GET plots) are a ring of 60 one-minute buckets in memory,
// fed from the API's History and Stats when the page is read and while a
// page is open live. To keep it fed while no page is open, and across
// restarts, an agent gives Options.PlotsStore (load and save bytes: the
// ring's record, a few kilobytes at most) and runs Feed until it stops:
//
//	page, err := ui.New(svc, ui.Options{PlotsStore: store.Blob("ui.plots")})
//	...
//	go ui.Feed(ctx, page, 0) // every ui.DefaultFeedEvery until ctx ends
//
// New loads the ring (a record that cannot be read is ignored, with a
// warning); every feed saves it. The ring remembers the number of the last
// transaction it counted, so a feed after a restart counts only what the
// history holds beyond it (a history whose numbers went back is read by
// the transactions' start times instead).
//
// A bad argument gets an error page naming it, in the API's words and
// with the HTTP status the API's REST answers (a key without a value: 404
// naming key). Each page links to the same data from the REST API
// ("../v1/status?..."), except when the page needs a token, which a
// browser cannot send there.
//
// The token: when the API has one (an *api.Service checks its own, by
// Authorize; Options.Token for any other service), every page needs it,
// as "Authorization: Bearer <token>" or as the cookie that the page's
// login form sets when given the right token (HttpOnly, SameSite=Strict,
// Secure over TLS, for the page's directory only; a login posted by
// another site is refused). The page passes it on as the bearer token of
// its calls, so a remote agent checks it too; a call that the service
// refuses for want of a token brings up the login form.
//
// Everything the page needs is embedded (templates, CSS, the graph's
// pan-and-zoom script, the live updates' script; the plots are SVG drawn
// by the handler): no build step and no external asset, so it works
// on a machine with no internet. Links between views are relative, so
// the page works behind a proxy that mounts it under another prefix.
// html/template escapes every key and value (they are user data), and the
// Content-Security-Policy allows scripts from the page's own files only.
package ui
