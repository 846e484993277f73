package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// StatusDoc is the JSON document written at <status prefix><key>.
type StatusDoc struct {
	Key        string   `json:"key"`
	Descriptor string   `json:"descriptor,omitempty"`
	State      string   `json:"state"`
	Error      string   `json:"error,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	LastOp     string   `json:"lastOp,omitempty"`
	Unmet      []string `json:"unmet,omitempty"`
	Seq        uint64   `json:"seq,omitempty"`
}

// FleetSummary is the JSON document of an agent's summary, written at
// <fleet prefix>summary/<agent> by WriteStatus when it changes (at most
// once per status interval): what a fleet operator reads first
// (kvctl fleet status).
type FleetSummary struct {
	Agent string `json:"agent"`
	// States counts the agent's values (those it writes a status of) by
	// state.
	States map[string]int `json:"states"`
	// LastSeq is the highest transaction sequence number among the
	// statuses; LastChange when the agent first wrote it.
	LastSeq    uint64    `json:"lastSeq,omitempty"`
	LastChange time.Time `json:"lastChange,omitzero"`
	// Started is when this run of WriteStatus started.
	Started time.Time `json:"started"`
}

// maxTxnOps is the number of writes of one etcd transaction (etcd's default
// limit is 128).
const maxTxnOps = 100

// WriteStatus writes the status of the scheduler's values under the status
// prefix until ctx ends, so that a fleet can be watched from etcd. It is
// optional: an agent that wants it runs it next to Run.
//
// It watches the scheduler (a watcher never blocks the scheduler: a full
// channel drops updates, and WriteStatus then re-reads every status), keeps
// the latest status of each changed key and writes them once per status
// interval, in batched transactions, so each key is written at most once
// per interval whatever the rate of its changes; a slow or unreachable
// etcd delays the writes, never the scheduler. Values the scheduler only
// observes (OBTAINED, DISCOVERED) are not written; the status key of a
// value that is gone is deleted, and status keys that no value has (left
// by an earlier run) are deleted when WriteStatus starts.
//
// For the fleet, it also writes the agent's FleetSummary at SummaryKey
// when it changes (in the same interval's writes), and keeps AliveKey on
// a lease of the alive TTL for as long as etcd hears from it: at rest,
// the agent writes nothing (the lease's keep-alives are not writes).
func (s *Source) WriteStatus(ctx context.Context, sched *scheduler.Scheduler) error {
	w := sched.Watch(scheduler.KeyPrefix(""), s.opts.statusBuffer)
	defer w.Close()
	sw := &statusWriter{s: s, sched: sched, written: map[string]string{}, dirty: map[string]*StatusDoc{},
		states: map[string]string{}, counts: map[string]int{}, started: time.Now().UTC()}
	al := &alive{s: s}
	defer al.close()
	al.keep(ctx)
	var dropped uint64
	t := time.NewTicker(s.opts.statusInterval)
	defer t.Stop()
	needFull := !sw.tryFull(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case st, ok := <-w.C:
			if !ok {
				return nil
			}
			sw.dirty[st.Key] = sw.doc(st)
		case <-t.C:
			al.keep(ctx)
			if d := w.Dropped(); d != dropped {
				dropped = d
				needFull = true
			}
			if needFull {
				needFull = !sw.tryFull(ctx)
			} else {
				sw.flush(ctx)
			}
		}
	}
}

// tryFull runs full and logs its failure.
func (sw *statusWriter) tryFull(ctx context.Context) bool {
	err := sw.full(ctx)
	if err != nil && ctx.Err() == nil {
		sw.s.opts.logger.Warn("etcd status: cannot read the status keys; retried next interval", "error", err)
	}
	return err == nil
}

type statusWriter struct {
	s     *Source
	sched *scheduler.Scheduler
	// written is what etcd holds, by key: the JSON written.
	written map[string]string
	// dirty are the keys to write; a nil document deletes.
	dirty map[string]*StatusDoc

	// states are the states of the keys written, counts their number by
	// state, for the summary; summary is the summary etcd holds.
	states     map[string]string
	counts     map[string]int
	lastSeq    uint64
	lastChange time.Time
	started    time.Time
	summary    string
}

// setState records the state of key written to etcd ("" when deleted).
func (sw *statusWriter) setState(key, state string) {
	if old, ok := sw.states[key]; ok {
		if sw.counts[old]--; sw.counts[old] == 0 {
			delete(sw.counts, old)
		}
	}
	if state == "" {
		delete(sw.states, key)
		return
	}
	sw.states[key] = state
	sw.counts[state]++
}

// summaryOp returns the write of the agent's summary, if it changed.
func (sw *statusWriter) summaryOp() (clientv3.Op, string, bool) {
	doc := FleetSummary{Agent: sw.s.opts.agent, States: sw.counts, LastSeq: sw.lastSeq, LastChange: sw.lastChange, Started: sw.started}
	b, err := json.Marshal(doc)
	if err != nil || string(b) == sw.summary {
		return clientv3.Op{}, "", false
	}
	return clientv3.OpPut(sw.s.SummaryKey(), string(b)), string(b), true
}

// doc returns the document of a status, nil when nothing is to be shown.
func (sw *statusWriter) doc(st scheduler.Status) *StatusDoc {
	switch st.State {
	case scheduler.NONEXISTENT, scheduler.REMOVED, scheduler.OBTAINED, scheduler.DISCOVERED:
		return nil
	}
	d := &StatusDoc{Key: st.Key, Descriptor: st.Descriptor, State: st.State.String(), Seq: st.Seq}
	if st.LastErr != nil {
		d.Error = st.LastErr.Error()
	}
	if st.LastOp != 0 {
		d.LastOp = st.LastOp.String()
	}
	for _, u := range st.Unmet {
		d.Unmet = append(d.Unmet, u.String())
	}
	if sw.s.opts.statusOwner != nil {
		d.Owner = sw.s.opts.statusOwner(st.Key)
	}
	return d
}

// full re-reads every status and the status keys in etcd, marking what
// differs.
func (sw *statusWriter) full(ctx context.Context) error {
	o := sw.s.opts
	gctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
	resp, err := sw.s.client.Get(gctx, o.statusPrefix, clientv3.WithPrefix())
	cancel()
	if err != nil {
		return err
	}
	sw.written = map[string]string{}
	clear(sw.states)
	clear(sw.counts)
	for _, kv := range resp.Kvs {
		k := string(kv.Key[len(o.statusPrefix):])
		sw.written[k] = string(kv.Value)
		var d StatusDoc
		if json.Unmarshal(kv.Value, &d) == nil {
			sw.setState(k, d.State)
		}
	}
	clear(sw.dirty)
	for _, st := range sw.sched.Statuses("") {
		if d := sw.doc(st); d != nil {
			sw.dirty[st.Key] = d
		}
	}
	for k := range sw.written {
		if _, ok := sw.dirty[k]; !ok {
			sw.dirty[k] = nil
		}
	}
	sw.flush(ctx)
	return nil
}

// flush writes the dirty keys whose document differs from what etcd holds.
func (sw *statusWriter) flush(ctx context.Context) {
	o := sw.s.opts
	type write struct {
		key  string
		doc  *StatusDoc // nil deletes
		text string
	}
	var ws []write
	var ops []clientv3.Op
	for _, k := range slices.Sorted(maps.Keys(sw.dirty)) {
		d := sw.dirty[k]
		old, had := sw.written[k]
		if d == nil {
			if had {
				ops = append(ops, clientv3.OpDelete(o.statusPrefix+k))
				ws = append(ws, write{key: k})
			}
			continue
		}
		b, err := json.Marshal(d)
		if err != nil {
			continue
		}
		if had && old == string(b) {
			continue
		}
		ops = append(ops, clientv3.OpPut(o.statusPrefix+k, string(b)))
		ws = append(ws, write{key: k, doc: d, text: string(b)})
	}
	clear(sw.dirty)
	// The summary as it will be once these writes are done, written with
	// the last of them.
	states, counts, lastSeq, lastChange := maps.Clone(sw.states), maps.Clone(sw.counts), sw.lastSeq, sw.lastChange
	for _, w := range ws {
		if w.doc == nil {
			sw.setState(w.key, "")
			continue
		}
		sw.setState(w.key, w.doc.State)
		if w.doc.Seq > sw.lastSeq {
			sw.lastSeq, sw.lastChange = w.doc.Seq, time.Now().UTC()
		}
	}
	sumOp, sumText, sumChanged := sw.summaryOp()
	if !sumChanged && len(ops) == 0 {
		return
	}
	if sumChanged {
		ops = append(ops, sumOp)
		ws = append(ws, write{key: ""})
	}
	restore := func() { sw.states, sw.counts, sw.lastSeq, sw.lastChange = states, counts, lastSeq, lastChange }
	for i := 0; i < len(ops); i += maxTxnOps {
		j := min(i+maxTxnOps, len(ops))
		tctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
		_, err := sw.s.client.Txn(tctx).Then(ops[i:j]...).Commit()
		cancel()
		if err != nil {
			// Keep them dirty: written next interval.
			if ctx.Err() == nil {
				o.logger.Warn("etcd status: write failed; retried next interval", "keys", j-i, "error", fmt.Sprint(err))
			}
			for _, w := range ws[i:] {
				if w.key != "" {
					sw.dirty[w.key] = w.doc
				}
			}
			if i == 0 {
				restore()
			}
			return
		}
		for _, w := range ws[i:j] {
			if w.key == "" {
				sw.summary = sumText
			} else if w.doc == nil {
				delete(sw.written, w.key)
			} else {
				sw.written[w.key] = w.text
			}
		}
	}
}

// alive keeps the agent's presence key on a lease.
type alive struct {
	s      *Source
	lease  clientv3.LeaseID
	lost   chan struct{} // closed when the lease's keep-alive ends
	cancel context.CancelFunc
}

// keep (re)creates the lease and the presence key when there is none, or
// the last one was lost (etcd did not hear from us for its TTL, or the
// keep-alive failed). It waits at most the request timeout.
func (a *alive) keep(ctx context.Context) {
	if a.lost != nil {
		select {
		case <-a.lost:
			a.close()
		default:
			return
		}
	}
	o := a.s.opts
	rctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
	defer cancel()
	g, err := a.s.client.Grant(rctx, int64(o.aliveTTL/time.Second))
	if err != nil {
		return
	}
	value, _ := json.Marshal(map[string]any{"agent": o.agent, "since": time.Now().UTC()})
	if _, err := a.s.client.Put(rctx, a.s.AliveKey(), string(value), clientv3.WithLease(g.ID)); err != nil {
		return
	}
	kctx, kcancel := context.WithCancel(ctx)
	ch, err := a.s.client.KeepAlive(kctx, g.ID)
	if err != nil {
		kcancel()
		return
	}
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		for range ch { // the channel closes when the keep-alive ends
		}
	}()
	a.lease, a.lost, a.cancel = g.ID, lost, kcancel
}

// close stops keeping the lease and revokes it, so the agent is absent at
// once when it stops.
func (a *alive) close() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	<-a.lost
	ctx, cancel := context.WithTimeout(context.Background(), a.s.opts.requestTimeout)
	_, _ = a.s.client.Revoke(ctx, a.lease)
	cancel()
	a.lease, a.lost, a.cancel = 0, nil, nil
}
