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
func (s *Source) WriteStatus(ctx context.Context, sched *scheduler.Scheduler) error {
	w := sched.Watch(scheduler.KeyPrefix(""), s.opts.statusBuffer)
	defer w.Close()
	sw := &statusWriter{s: s, sched: sched, written: map[string]string{}, dirty: map[string]*StatusDoc{}}
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
	for _, kv := range resp.Kvs {
		sw.written[string(kv.Key[len(o.statusPrefix):])] = string(kv.Value)
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
				sw.dirty[w.key] = w.doc
			}
			return
		}
		for _, w := range ws[i:j] {
			if w.doc == nil {
				delete(sw.written, w.key)
			} else {
				sw.written[w.key] = w.text
			}
		}
	}
}
