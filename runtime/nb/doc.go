// Package nb is the northbound side of an agent: the sources of intended
// configuration (a watched file, etcd, a remote API) and what they share.
// A Source feeds Updates to a Sink; the Mux (mux.go) is the Sink that
// merges the sources into scheduler transactions, each key owned by the
// source that set it. Sources live in packages of their own
// (runtime/nb/file, runtime/nb/etcd), independent of each other and of the
// agent; none of them is compiled by a user of runtime/scheduler alone.
//
// Make a Mux over the scheduler, with the sources' priorities and a Store
// to remember what was applied, and run the sources through it:
//
//	store, err := boltstore.Open(filepath.Join(stateDir, "state.db"))
//	...
//	mux := nb.NewMux(s, nb.WithPriorityOrder("file", "etcd"), nb.WithStore(store))
//	defer mux.Close()
//	err = mux.Run(ctx, file.New(path, nb.SchedulerModels(s)), etcdSource)
//
// A source driven by hand (an API) takes a Sink instead: mux.Sink("api")
// then sink.Apply(ctx, nb.Update{Changes: ...}). Owner tells which source
// a key belongs to, and which it overrides; Ready, whether every source has
// loaded.
//
// What the Mux promises: each key belongs to the source that set it, and a
// resync of one source replaces that source's keys only; a key several
// sources set goes to the highest priority, and the conflict is logged;
// the first transaction is one full resync, once every source has loaded
// (or at the load deadline); with a Store, what was applied is recorded
// before each transaction, so that a restart removes our stale values,
// keeps those of a source that has not loaded yet, and never touches a
// value it did not apply.
package nb
