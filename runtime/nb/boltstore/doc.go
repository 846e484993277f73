// Package boltstore is an nb.Store in a bbolt file: the values the agent
// applied, each with its source and its message type, kept across
// restarts.
//
// Open it and give it to the nb.Mux, which records what it applies and
// reads the records back at the next start; close it after the Mux:
//
//	store, err := boltstore.Open(filepath.Join(stateDir, "state.db"))
//	...
//	defer store.Close()
//	mux := nb.NewMux(s, nb.WithStore(store))
//
// The store keeps a transaction number too (LastSeq, SetLastSeq): the
// agent numbers its transactions after it, so that numbers stay unique
// across restarts. Blob keeps a small named record of the agent's besides
// (the operator page's plots).
//
// Every Record is one bbolt transaction, so a crash leaves the file as
// before or after it. The file is locked: a second agent on the same state
// directory fails to open it, with an error that says so.
package boltstore
