package nb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A Remote over a SourceEntryStore keeps its state as entries, so that a
// commit writes what it changed only:
//
//	"h"             the header (remoteHeader, JSON)
//	"c\x00"+key     a value of the source's state (current)
//	"p\x00"+key     a commit awaiting confirmation: the value of key before
//	                it, or none (a tombstone), on the keys it changed
//	"b\x00"+key     a value of the oldest state kept for RollbackTo
//	"d\x00"+seq     a later state kept, as its changes from the one before
//	                (recordState, JSON); seq 8 bytes big-endian
//
// A value is its message's full name (a protobuf string: a varint length
// and the bytes) followed by the message in the wire form; a tombstone is
// an empty name alone.
const (
	entryHeader   = "h"
	entryCurrent  = "c\x00"
	entryPrevious = "p\x00"
	entryBase     = "b\x00"
	entryDiff     = "d\x00"
)

// remoteHeaderFormat is the header's Format.
const remoteHeaderFormat = 2

type remoteHeader struct {
	Format  int            `json:"format"`
	Pending *headerPending `json:"pending,omitempty"`
	// States: states are kept, the first (whole, in the base entries)
	// after transaction Base; Floor is r.floor.
	States bool   `json:"states,omitempty"`
	Base   uint64 `json:"base,omitempty"`
	Floor  uint64 `json:"floor,omitempty"`
}

type headerPending struct {
	Seq      uint64    `json:"seq"`
	Deadline time.Time `json:"deadline"`
}

func diffKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte(entryDiff), seq) }

func encodeEntry(v proto.Message) ([]byte, error) {
	b := protowire.AppendString(nil, string(v.ProtoReflect().Descriptor().FullName()))
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, v)
}

// tombstone is the entry of a key a pending commit's previous state has
// not.
var tombstone = []byte{0}

// decodeEntry decodes the entry of key (nil, nil: a tombstone).
func decodeEntry(models Models, key string, b []byte) (proto.Message, error) {
	typ, n := protowire.ConsumeString(b)
	if n < 0 {
		return nil, fmt.Errorf("key %q: its entry does not parse: %w", key, protowire.ParseError(n))
	}
	if typ == "" {
		return nil, nil
	}
	m, err := Decode(models, key, b[n:], Binary)
	if err != nil {
		return nil, err
	}
	if got := string(m.ProtoReflect().Descriptor().FullName()); got != typ {
		return nil, fmt.Errorf("key %q: recorded as a %s, its model is %s", key, typ, got)
	}
	return m, nil
}

// putValues adds to r.stateOps the entries of vs under prefix; r.mu held.
// A value that does not encode makes the next save rewrite everything
// (and fail, naming it).
func (r *Remote) putValues(prefix string, vs map[string]proto.Message) {
	// In key order: bbolt inserts at the end of a page then, instead of
	// moving a growing node's entries on every put.
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		b, err := encodeEntry(vs[k])
		if err != nil {
			r.rewrite = true
			return
		}
		r.stateOps = append(r.stateOps, SourceEntry{Key: []byte(prefix + k), Value: b})
	}
}

// putDiff adds to r.stateOps the entry of state st, kept as its changes.
func (r *Remote) putDiff(st remoteSnapshot) {
	b, err := encodeDiff(st)
	if err != nil {
		r.rewrite = true
		return
	}
	r.stateOps = append(r.stateOps, SourceEntry{Key: diffKey(st.seq), Value: b})
}

func encodeDiff(st remoteSnapshot) ([]byte, error) {
	set, err := encodeValues(st.set)
	if err != nil {
		return nil, err
	}
	return json.Marshal(recordState{Seq: st.seq, Set: set, Deleted: st.deleted})
}

// pendingEntries returns the entries of the pending commit p.
func (r *Remote) pendingEntries(p *pendingCommit) ([]SourceEntry, error) {
	keys := p.keys
	if keys == nil {
		set, deleted := diffOn(r.current, p.previous, nil)
		keys = append(slices.Collect(maps.Keys(set)), deleted...)
		slices.Sort(keys)
	}
	out := make([]SourceEntry, 0, len(keys))
	for _, k := range keys {
		e := tombstone
		if v, ok := p.previous[k]; ok {
			var err error
			if e, err = encodeEntry(v); err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
		}
		out = append(out, SourceEntry{Key: []byte(entryPrevious + k), Value: e})
	}
	return out, nil
}

// saveEntries writes what changed since the last save (everything, with
// r.rewrite) to r.es, in one write; r.mu held.
func (r *Remote) saveEntries() error {
	var ops []SourceEntry
	if r.rewrite {
		var err error
		if ops, err = r.allEntries(); err != nil {
			return err
		}
	} else {
		ops = append(ops, r.stateOps...)
		for _, k := range slices.Sorted(maps.Keys(r.dirty)) {
			if v, ok := r.current[k]; ok {
				b, err := encodeEntry(v)
				if err != nil {
					return fmt.Errorf("key %q: %w", k, err)
				}
				ops = append(ops, SourceEntry{Key: []byte(entryCurrent + k), Value: b})
			} else {
				ops = append(ops, SourceEntry{Key: []byte(entryCurrent + k)})
			}
		}
		if r.pending != r.savedPending {
			ops = append(ops, SourceEntry{Key: []byte(entryPrevious), Prefix: true})
			if r.pending != nil {
				pe, err := r.pendingEntries(r.pending)
				if err != nil {
					return err
				}
				ops = append(ops, pe...)
			}
		}
	}
	h := remoteHeader{Format: remoteHeaderFormat, Floor: r.floor}
	if p := r.pending; p != nil {
		h.Pending = &headerPending{Seq: p.seq, Deadline: p.deadline}
	}
	if len(r.states) > 0 {
		h.States, h.Base = true, r.states[0].seq
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return err
	}
	ops = append(ops, SourceEntry{Key: []byte(entryHeader), Value: hb})
	if err := r.es.WriteSourceEntries(r.name, ops); err != nil {
		return err
	}
	r.rewrite = false
	clear(r.dirty)
	r.stateOps = nil
	r.savedPending = r.pending
	return nil
}

// allEntries returns the entries of the whole state, after the removal of
// those the store has.
func (r *Remote) allEntries() ([]SourceEntry, error) {
	var ops []SourceEntry
	for _, p := range []string{entryCurrent, entryPrevious, entryBase, entryDiff} {
		ops = append(ops, SourceEntry{Key: []byte(p), Prefix: true})
	}
	put := func(prefix string, vs map[string]proto.Message) error {
		for _, k := range slices.Sorted(maps.Keys(vs)) {
			b, err := encodeEntry(vs[k])
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			ops = append(ops, SourceEntry{Key: []byte(prefix + k), Value: b})
		}
		return nil
	}
	if err := put(entryCurrent, r.current); err != nil {
		return nil, err
	}
	if p := r.pending; p != nil {
		pe, err := r.pendingEntries(p)
		if err != nil {
			return nil, err
		}
		ops = append(ops, pe...)
	}
	for i, st := range r.states {
		if i == 0 {
			if err := put(entryBase, st.values); err != nil {
				return nil, err
			}
			continue
		}
		b, err := encodeDiff(st)
		if err != nil {
			return nil, fmt.Errorf("the state after transaction %d: %w", st.seq, err)
		}
		ops = append(ops, SourceEntry{Key: diffKey(st.seq), Value: b})
	}
	return ops, nil
}

// loadEntries reads the source's state from r.es; false when it has none.
func (r *Remote) loadEntries(models Models) (bool, error) {
	var header []byte
	current := map[string]proto.Message{}
	previous := map[string]proto.Message{}
	var pendingKeys []string
	base := map[string]proto.Message{}
	var diffs []recordState
	err := r.es.ReadSourceEntries(r.name, func(k, v []byte) error {
		key := string(k)
		var err error
		switch {
		case key == entryHeader:
			header = slices.Clone(v)
		case strings.HasPrefix(key, entryCurrent):
			key = key[len(entryCurrent):]
			current[key], err = decodeEntry(models, key, v)
			if err == nil && current[key] == nil {
				err = fmt.Errorf("key %q: a tombstone among the values", key)
			}
		case strings.HasPrefix(key, entryPrevious):
			key = key[len(entryPrevious):]
			pendingKeys = append(pendingKeys, key)
			previous[key], err = decodeEntry(models, key, v)
		case strings.HasPrefix(key, entryBase):
			key = key[len(entryBase):]
			base[key], err = decodeEntry(models, key, v)
			if err == nil && base[key] == nil {
				err = fmt.Errorf("key %q: a tombstone among the values of the oldest state kept", key)
			}
		case strings.HasPrefix(key, entryDiff):
			var st recordState
			if err = json.Unmarshal(v, &st); err != nil {
				err = fmt.Errorf("entry %q: %w", k, err)
			}
			diffs = append(diffs, st)
		default:
			err = fmt.Errorf("an entry %q of no known kind", k)
		}
		return err
	})
	if err != nil {
		return false, err
	}
	if header == nil {
		if len(current)+len(previous)+len(base)+len(diffs) > 0 {
			return false, fmt.Errorf("its entries have no header")
		}
		return false, nil
	}
	var h remoteHeader
	if err := json.Unmarshal(header, &h); err != nil {
		return false, fmt.Errorf("its header: %w", err)
	}
	if h.Format != remoteHeaderFormat {
		return false, fmt.Errorf("its header: format %d, want %d", h.Format, remoteHeaderFormat)
	}
	r.current = current
	if p := h.Pending; p != nil {
		prev := maps.Clone(current)
		for k, v := range previous {
			if v == nil {
				delete(prev, k)
			} else {
				prev[k] = v
			}
		}
		r.pending = &pendingCommit{seq: p.Seq, deadline: p.Deadline, previous: prev, keys: pendingKeys}
		r.savedPending = r.pending
	}
	if h.States {
		state := base
		r.states = append(r.states, remoteSnapshot{seq: h.Base, values: state})
		for _, st := range diffs {
			set, err := decodeValues(models, st.Set)
			if err != nil {
				return false, fmt.Errorf("the state after transaction %d: %w", st.Seq, err)
			}
			state = maps.Clone(state)
			maps.Copy(state, set)
			for _, k := range st.Deleted {
				delete(state, k)
			}
			r.states = append(r.states, remoteSnapshot{seq: st.Seq, values: state, set: set, deleted: st.Deleted})
		}
	}
	r.floor = h.Floor
	r.noHistory = !h.States
	if n := len(r.states) - r.kept; n > 0 {
		r.states = slices.Delete(r.states, 0, n)
		r.floor = r.states[0].seq
		r.rewrite = true
	}
	return true, nil
}
