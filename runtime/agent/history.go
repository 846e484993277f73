package agent

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// historyKeeper keeps the history of transactions in the state store, so
// that after a restart, or a crash, the scheduler starts with the records
// of the transactions before it (scheduler.WithPreloadedHistory). It is
// bounded like the scheduler's history, by count and by age (from the
// newest record). Records are written by a goroutine of its own, a batch
// per bbolt transaction, so that a transaction never waits for the disk:
// a crash loses at most the records not written yet (the metric
// kvdescriptor_agent_history_persisted_seq says which were).
//
// A record keeps everything the scheduler's does but the operations'
// metadata and the notified values' (a plugin's own types): values are
// kept in their wire form with their type's name (resolved in
// protoregistry.GlobalTypes when read back), errors as their text.
type historyKeeper struct {
	store     *boltstore.Store
	logger    *slog.Logger
	max       int
	maxAge    time.Duration
	persisted prometheus.Gauge

	mu     sync.Mutex
	queue  []*scheduler.Record
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed bool

	// kept are the records in the store, oldest first (the writer's).
	kept []keptRecord
}

type keptRecord struct {
	seq uint64
	end time.Time
}

// loadHistory reads the history kept in store and returns its records,
// oldest first, and the keeper that goes on writing it. Records that do
// not decode (a model no longer linked in) are left out and logged; the
// store keeps them until the retention drops them.
func loadHistory(store *boltstore.Store, logger *slog.Logger, max int, maxAge time.Duration, reg prometheus.Registerer) ([]scheduler.Record, *historyKeeper, error) {
	h := &historyKeeper{
		store: store, logger: logger, max: max, maxAge: maxAge,
		persisted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kvdescriptor_agent_history_persisted_seq",
			Help: "The number of the last transaction whose history record the agent wrote to its state directory.",
		}),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := reg.Register(h.persisted); err != nil {
		return nil, nil, err
	}
	var recs []scheduler.Record
	var bad []error
	err := store.ReadHistory(func(seq uint64, data []byte) error {
		rec, err := decodeRecord(data)
		if err == nil && rec.Seq != seq {
			err = fmt.Errorf("the record is of transaction %d", rec.Seq)
		}
		if err != nil {
			if len(bad) < 10 {
				bad = append(bad, fmt.Errorf("transaction %d: %w", seq, err))
			}
			h.kept = append(h.kept, keptRecord{seq: seq})
			return nil
		}
		h.kept = append(h.kept, keptRecord{seq: seq, end: rec.End})
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("history: %w", err)
	}
	if len(bad) > 0 {
		logger.Warn("history: records of the state directory left out", "error", errors.Join(bad...))
	}
	if n := len(h.kept); n > 0 {
		h.persisted.Set(float64(h.kept[n-1].seq))
	}
	go h.run()
	return recs, h, nil
}

// txnDone queues the record of a transaction to be written. Records beyond
// the retention's count are dropped from the queue: the store would drop
// them.
func (h *historyKeeper) txnDone(rec *scheduler.Record) {
	if rec.DryRun || rec.Seq == 0 || h.max <= 0 {
		return
	}
	h.mu.Lock()
	if !h.closed {
		h.queue = append(h.queue, rec)
		if over := len(h.queue) - h.max; over > 0 {
			clear(h.queue[:over])
			h.queue = h.queue[over:]
		}
	}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// close writes what is queued and stops the writer.
func (h *historyKeeper) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	close(h.stop)
	<-h.done
}

func (h *historyKeeper) run() {
	defer close(h.done)
	for {
		select {
		case <-h.wake:
			h.flush()
		case <-h.stop:
			h.flush()
			return
		}
	}
}

// flush writes the records queued, in one bbolt transaction, with the
// removal of those out of retention.
func (h *historyKeeper) flush() {
	h.mu.Lock()
	batch := h.queue
	h.queue = nil
	h.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	puts := make([]boltstore.HistoryRecord, 0, len(batch))
	kept := h.kept
	for _, rec := range batch {
		data, err := encodeRecord(rec)
		if err != nil {
			h.logger.Error("history: a record cannot be kept in the state directory", "seq", rec.Seq, "error", err)
			continue
		}
		puts = append(puts, boltstore.HistoryRecord{Seq: rec.Seq, Data: data})
		kept = append(kept, keptRecord{seq: rec.Seq, end: rec.End})
	}
	// The scheduler's rule: at most max records, none older than maxAge
	// before the newest; the newest always stays.
	if len(puts) == 0 {
		return
	}
	var drop []uint64
	newest := kept[len(kept)-1].end
	for len(kept) > 1 && (len(kept) > h.max || h.maxAge > 0 && kept[0].end.Before(newest.Add(-h.maxAge))) {
		drop = append(drop, kept[0].seq)
		kept = kept[1:]
	}
	if err := h.store.WriteHistory(puts, drop); err != nil {
		h.logger.Error("history: records not kept in the state directory", "error", err)
		return
	}
	h.kept = append([]keptRecord(nil), kept...)
	if len(puts) > 0 {
		h.persisted.Set(float64(puts[len(puts)-1].Seq))
	}
}

// storedRecord is a scheduler.Record as kept in the store (gob). Its
// values are held once each in Msgs (a value shared by the input and the
// operations, or by operations, is kept once, and shared again when read
// back), in their wire form with the index of their type in Types; the
// other fields refer to them by index, 0 for none (Msgs[i-1]).
type storedRecord struct {
	Seq                 uint64
	Kind                uint8
	Description         string
	Types               []string
	Msgs                []storedMsg
	Values              []storedValue
	Planned, Executed   []storedOp
	ExecutedAsPlanned   bool // Executed is the beginning of Planned, of length ExecutedLen
	ExecutedLen         int
	Errors              []storedKeyError
	Reverted            bool
	Batches, BatchedOps int
	Start, End          time.Time
}

type storedMsg struct {
	Type int
	Data []byte
}

type storedValue struct {
	Key   string
	Value int
}

type storedOp struct {
	Key         string
	Kind, State uint8
	Flags       uint16
	Value, Prev int
	Err         string
	HasErr      bool
	Called      bool
}

type storedKeyError struct {
	Key string
	Op  uint8
	Err string
}

// storedError is an error read back from the store: its text.
type storedError struct{ msg string }

func (e *storedError) Error() string { return e.msg }

// msgTable collects the values of a record being encoded.
type msgTable struct {
	rec   *storedRecord
	msgs  map[proto.Message]int
	types map[string]int
}

// add returns the index of m in the record's values (0: nil).
func (t *msgTable) add(m proto.Message) (int, error) {
	if m == nil {
		return 0, nil
	}
	if i, ok := t.msgs[m]; ok {
		return i, nil
	}
	name := string(m.ProtoReflect().Descriptor().FullName())
	ti, ok := t.types[name]
	if !ok {
		ti = len(t.rec.Types)
		t.rec.Types = append(t.rec.Types, name)
		t.types[name] = ti
	}
	// The history is for reading only: kept without its secrets.
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(kv.Redact(m))
	if err != nil {
		return 0, err
	}
	t.rec.Msgs = append(t.rec.Msgs, storedMsg{Type: ti, Data: data})
	i := len(t.rec.Msgs)
	t.msgs[m] = i
	return i, nil
}

func encodeRecord(rec *scheduler.Record) ([]byte, error) {
	s := &storedRecord{
		Seq: rec.Seq, Kind: uint8(rec.Kind), Description: rec.Description, Reverted: rec.Reverted,
		Batches: rec.Batches, BatchedOps: rec.BatchedOps, Start: rec.Start, End: rec.End,
	}
	t := &msgTable{rec: s, msgs: map[proto.Message]int{}, types: map[string]int{}}
	var err error
	if len(rec.Values) > 0 {
		s.Values = make([]storedValue, len(rec.Values))
	}
	for i, v := range rec.Values {
		s.Values[i].Key = v.Key
		if s.Values[i].Value, err = t.add(v.Value); err != nil {
			return nil, fmt.Errorf("value %q: %w", v.Key, err)
		}
	}
	if s.Planned, err = storeOps(t, rec.Planned); err != nil {
		return nil, err
	}
	if len(rec.Executed) > 0 && len(rec.Planned) >= len(rec.Executed) && &rec.Executed[0] == &rec.Planned[0] {
		s.ExecutedAsPlanned, s.ExecutedLen = true, len(rec.Executed)
	} else if s.Executed, err = storeOps(t, rec.Executed); err != nil {
		return nil, err
	}
	for _, e := range rec.Errors {
		se := storedKeyError{Key: e.Key, Op: uint8(e.Op)}
		if e.Err != nil {
			se.Err = e.Err.Error()
		}
		s.Errors = append(s.Errors, se)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func storeOps(t *msgTable, ops []scheduler.Op) ([]storedOp, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	out := make([]storedOp, len(ops))
	for i := range ops {
		o := &ops[i]
		so := storedOp{Key: o.Key, Kind: uint8(o.Kind), State: uint8(o.State), Flags: uint16(o.Flags), Called: o.Called}
		var err error
		if so.Value, err = t.add(o.Value); err != nil {
			return nil, fmt.Errorf("operation on %q: %w", o.Key, err)
		}
		if so.Prev, err = t.add(o.PrevValue); err != nil {
			return nil, fmt.Errorf("operation on %q: %w", o.Key, err)
		}
		if o.Err != nil {
			so.Err, so.HasErr = o.Err.Error(), true
		}
		out[i] = so
	}
	return out, nil
}

func decodeRecord(data []byte) (scheduler.Record, error) {
	var s storedRecord
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return scheduler.Record{}, err
	}
	rec := scheduler.Record{
		Seq: s.Seq, Kind: scheduler.TxnKind(s.Kind), Description: s.Description, Reverted: s.Reverted,
		Batches: s.Batches, BatchedOps: s.BatchedOps, Start: s.Start, End: s.End,
	}
	types := make([]protoreflect.MessageType, len(s.Types))
	for i, name := range s.Types {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
		if err != nil {
			return rec, fmt.Errorf("values of type %s: %w", name, err)
		}
		types[i] = mt
	}
	msgs := make([]proto.Message, len(s.Msgs))
	for i, m := range s.Msgs {
		if m.Type < 0 || m.Type >= len(types) {
			return rec, fmt.Errorf("value %d: type %d of %d", i+1, m.Type, len(types))
		}
		msg := types[m.Type].New().Interface()
		if err := proto.Unmarshal(m.Data, msg); err != nil {
			return rec, fmt.Errorf("value %d (%s): %w", i+1, s.Types[m.Type], err)
		}
		msgs[i] = msg
	}
	msg := func(i int) (proto.Message, error) {
		if i == 0 {
			return nil, nil
		}
		if i < 0 || i > len(msgs) {
			return nil, fmt.Errorf("value %d of %d", i, len(msgs))
		}
		return msgs[i-1], nil
	}
	var err error
	if len(s.Values) > 0 {
		rec.Values = make([]scheduler.KeyValue, len(s.Values))
	}
	for i, v := range s.Values {
		rec.Values[i].Key = v.Key
		if rec.Values[i].Value, err = msg(v.Value); err != nil {
			return rec, fmt.Errorf("value %q: %w", v.Key, err)
		}
	}
	if rec.Planned, err = loadOps(s.Planned, msg); err != nil {
		return rec, err
	}
	if s.ExecutedAsPlanned {
		if s.ExecutedLen > len(rec.Planned) {
			return rec, fmt.Errorf("%d operations executed of %d planned", s.ExecutedLen, len(rec.Planned))
		}
		rec.Executed = rec.Planned[:s.ExecutedLen]
	} else if rec.Executed, err = loadOps(s.Executed, msg); err != nil {
		return rec, err
	}
	for _, e := range s.Errors {
		rec.Errors = append(rec.Errors, scheduler.KeyError{Key: e.Key, Op: scheduler.OpKind(e.Op), Err: &storedError{e.Err}})
	}
	return rec, nil
}

func loadOps(ops []storedOp, msg func(int) (proto.Message, error)) ([]scheduler.Op, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	out := make([]scheduler.Op, len(ops))
	for i, so := range ops {
		o := scheduler.Op{Key: so.Key, Kind: scheduler.OpKind(so.Kind), State: scheduler.State(so.State), Flags: scheduler.Flags(so.Flags), Called: so.Called}
		var err error
		if o.Value, err = msg(so.Value); err != nil {
			return nil, fmt.Errorf("operation on %q: %w", so.Key, err)
		}
		if o.PrevValue, err = msg(so.Prev); err != nil {
			return nil, fmt.Errorf("operation on %q: %w", so.Key, err)
		}
		if so.HasErr {
			o.Err = &storedError{so.Err}
		}
		out[i] = o
	}
	return out, nil
}
