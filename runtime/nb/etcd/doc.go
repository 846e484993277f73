// Package etcd is the etcd northbound source: the intended configuration of
// an agent kept under one etcd prefix, for fleets configured from one
// place.
//
// Use it as a source of an nb.Mux, and optionally write the statuses back:
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints})
//	...
//	src := etcd.New(cli, nb.SchedulerModels(s), etcd.WithAgent("edge1"))
//	go src.WriteStatus(ctx, s) // optional
//	err = mux.Run(ctx, src)
//
// # Layout
//
// The value of the key K is stored at <prefix>K, the prefix by default
// /kvdescriptor/<agent>/config/. A value is the protojson form of K's model
// or its protobuf wire form: a value that is valid JSON text is read as
// protojson, anything else as the wire form (so an empty value is a message
// of default fields). A wire-form value whose bytes all happen to be valid
// JSON text would be misread; writers that want to be safe use protojson.
//
// Statuses, when WriteStatus runs, are JSON documents (see StatusDoc) at
// <status prefix>K, by default /kvdescriptor/<agent>/status/K.
//
// # Behaviour
//
// Run loads the prefix with one Get (its revision R) and applies it as one
// resync update, then watches from R+1; the events of one watch response
// (those of one etcd transaction among them) become one update with the
// difference. A lost connection (a health probe that fails), a compacted
// revision, a restarted or replaced etcd (a revision that went backwards, a
// new cluster id) end the watch: once etcd answers again, a new Get and a
// resync of this source, so there is never a gap and never a deletion of a
// key that still exists. A short outage that the probe does not see is
// covered by the etcd client itself, which resumes its watch where it was
// (or finds the revision compacted, which resyncs).
//
// The probe (every 5s by default, WithProbe) costs etcd no read while the
// watch answers: a watch that answered within the interval is not probed,
// and a silent one is asked for a progress notification on its own stream
// (etcd answers with its revision and cluster id); only a notification
// that does not come within the request timeout, or shows another cluster
// or an earlier revision, makes the probe read etcd (a serializable,
// keys-only, limit-1 Get of the prefix), whose answer decides.
//
// A value that does not decode, or a key no model handles, is reported
// through Sink.Problem naming the etcd key and skipped: what is applied for
// the key stays (in a resync too, the last good value is sent again) until
// the key is fixed or deleted. Deleting a key always deletes its value.
// The problem clears when no key is bad and etcd is reachable.
package etcd
