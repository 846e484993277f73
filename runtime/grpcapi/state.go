package grpcapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// state is the gRPC source's state: what it intends now, what it intended
// after each of its recent transactions, and a commit awaiting
// confirmation. The file keeps what it intends and the commit awaiting
// confirmation; the past states stay in memory, as the scheduler's
// history does (sequence numbers start again at 1 with a new scheduler).
type state struct {
	file    string
	current map[string]proto.Message
	// states are the source's states after its transactions, by
	// increasing seq; floor is the seq of the oldest one once older ones
	// were dropped (0: none dropped, the source intended nothing before
	// the first).
	states []snapshot
	floor  uint64
	// pending is the commit awaiting confirmation, or nil.
	pending *pendingCommit
}

type snapshot struct {
	seq    uint64
	values map[string]proto.Message
}

type pendingCommit struct {
	seq      uint64
	deadline time.Time
	// previous is the source's state before the commit, restored by a
	// rollback.
	previous map[string]proto.Message
}

// The file's form: values in the protobuf wire form with their message
// full name, decoded by the key's model.
type fileValue struct {
	Key  string `json:"key"`
	Type string `json:"type"`
	Data []byte `json:"data"`
}

type filePending struct {
	Seq      uint64      `json:"seq"`
	Deadline time.Time   `json:"deadline"`
	Previous []fileValue `json:"previous"`
}

type fileState struct {
	Current []fileValue  `json:"current"`
	Pending *filePending `json:"pending,omitempty"`
}

// loadState reads the state file (a missing one is an empty state).
func loadState(file string, models nb.Models) (*state, error) {
	st := &state{file: file, current: map[string]proto.Message{}}
	if file == "" {
		return st, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("grpcapi: state file: %w", err)
	}
	var fs fileState
	if err := json.Unmarshal(b, &fs); err != nil {
		return nil, fmt.Errorf("grpcapi: state file %s: %w", file, err)
	}
	if st.current, err = decodeValues(models, fs.Current); err != nil {
		return nil, fmt.Errorf("grpcapi: state file %s: %w", file, err)
	}
	if p := fs.Pending; p != nil {
		prev, err := decodeValues(models, p.Previous)
		if err != nil {
			return nil, fmt.Errorf("grpcapi: state file %s: before commit %d: %w", file, p.Seq, err)
		}
		st.pending = &pendingCommit{seq: p.Seq, deadline: p.Deadline, previous: prev}
	}
	return st, nil
}

// save writes the state file atomically (a temporary file renamed).
func (st *state) save() error {
	if st.file == "" {
		return nil
	}
	var fs fileState
	var err error
	if fs.Current, err = encodeValues(st.current); err != nil {
		return err
	}
	if p := st.pending; p != nil {
		prev, err := encodeValues(p.previous)
		if err != nil {
			return err
		}
		fs.Pending = &filePending{Seq: p.seq, Deadline: p.deadline, Previous: prev}
	}
	b, err := json.Marshal(fs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.file), 0o700); err != nil {
		return err
	}
	tmp := st.file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("grpcapi: writing the state file: %w", err)
	}
	if err := os.Rename(tmp, st.file); err != nil {
		return fmt.Errorf("grpcapi: writing the state file: %w", err)
	}
	return nil
}

// record keeps the source's state after transaction seq, dropping the
// oldest beyond kept.
func (st *state) record(seq uint64, kept int) {
	st.states = append(st.states, snapshot{seq: seq, values: maps.Clone(st.current)})
	if n := len(st.states) - kept; n > 0 {
		st.states = slices.Delete(st.states, 0, n)
		st.floor = st.states[0].seq
	}
}

// after returns the source's state after transaction seq; ok is false when
// the states kept no longer go back that far.
func (st *state) after(seq uint64) (map[string]proto.Message, bool) {
	for i := len(st.states) - 1; i >= 0; i-- {
		if st.states[i].seq <= seq {
			return st.states[i].values, true
		}
	}
	if st.floor == 0 {
		return map[string]proto.Message{}, true
	}
	return nil, false
}

func encodeValues(vs map[string]proto.Message) ([]fileValue, error) {
	out := make([]fileValue, 0, len(vs))
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vs[k])
		if err != nil {
			return nil, fmt.Errorf("grpcapi: key %q: %w", k, err)
		}
		out = append(out, fileValue{Key: k, Type: string(vs[k].ProtoReflect().Descriptor().FullName()), Data: b})
	}
	return out, nil
}

func decodeValues(models nb.Models, vs []fileValue) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(vs))
	for _, v := range vs {
		m, err := nb.Decode(models, v.Key, v.Data, nb.Binary)
		if err != nil {
			return nil, err
		}
		if got := string(m.ProtoReflect().Descriptor().FullName()); got != v.Type {
			return nil, fmt.Errorf("key %q: recorded as a %s, its model is %s", v.Key, v.Type, got)
		}
		out[v.Key] = m
	}
	return out, nil
}

func changesOf(vs map[string]proto.Message) []nb.Change {
	out := make([]nb.Change, 0, len(vs))
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		out = append(out, nb.Change{Key: k, Value: vs[k]})
	}
	return out
}
