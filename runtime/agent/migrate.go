package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// legacyGRPCFile is the file in the state directory where the former gRPC
// API (runtime/grpcapi, its source named "grpc") kept what its clients
// intended and a commit awaiting confirmation.
const legacyGRPCFile = "grpc.json"

// The form of grpc.json: values in the protobuf wire form with their
// message full name, decoded by the key's model.
type legacyValue struct {
	Key  string `json:"key"`
	Type string `json:"type"`
	Data []byte `json:"data"`
}

type legacyPending struct {
	Seq      uint64        `json:"seq"`
	Deadline time.Time     `json:"deadline"`
	Previous []legacyValue `json:"previous"`
}

type legacyState struct {
	Current []legacyValue  `json:"current"`
	Pending *legacyPending `json:"pending,omitempty"`
}

// migrateGRPCState moves the former gRPC API's state (grpc.json in the
// state directory) into the store as the API source's ("api") state,
// before the API's source loads and the startup resync runs: without it
// the resync would remove every value the former source had set. It runs
// when the store has no state for "api" and grpc.json exists; a commit
// that awaited confirmation in the file is taken as never confirmed (the
// state before it is imported, as the old agent would have rolled it back
// at its start). The file is then renamed grpc.json.migrated (never
// removed). A file that does not parse, or a value that no model decodes,
// stops the agent with an error naming the file: losing the values
// silently would be worse.
func (r *run) migrateGRPCState() error {
	file := filepath.Join(r.cfg.StateDir, legacyGRPCFile)
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the former gRPC API's state %s: %w", file, err)
	}
	has, err := nb.HasSourceState(r.store, nb.DefaultRemoteSource)
	if err != nil {
		return fmt.Errorf("the state of source %s: %w", nb.DefaultRemoteSource, err)
	}
	if has {
		r.logger.Warn("the former gRPC API's state file is ignored: the API source has a state in the store already", "file", file)
		return nil
	}
	var st legacyState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("the former gRPC API's state %s does not parse (fix or move it; it is not imported): %w", file, err)
	}
	values, what := st.Current, "current"
	if p := st.Pending; p != nil {
		values, what = p.Previous, fmt.Sprintf("pending.previous (the state before commit %d)", p.Seq)
	}
	decoded := make(map[string]proto.Message, len(values))
	for i, v := range values {
		if v.Key == "" {
			return fmt.Errorf("the former gRPC API's state %s: %s[%d]: no key", file, what, i)
		}
		m, err := nb.Decode(r.models, v.Key, v.Data, nb.Binary)
		if err != nil {
			return fmt.Errorf("the former gRPC API's state %s: %s[%d] (key %q): %w", file, what, i, v.Key, err)
		}
		if got := string(m.ProtoReflect().Descriptor().FullName()); got != v.Type {
			return fmt.Errorf("the former gRPC API's state %s: %s[%d] (key %q): type: recorded as a %s, its model is %s", file, what, i, v.Key, v.Type, got)
		}
		decoded[v.Key] = m
	}
	if err := nb.ImportRemoteState(r.store, nb.DefaultRemoteSource, decoded); err != nil {
		return fmt.Errorf("importing the former gRPC API's state %s: %w", file, err)
	}
	to, err := freeName(file + ".migrated")
	if err != nil {
		return err
	}
	if err := os.Rename(file, to); err != nil {
		return fmt.Errorf("the former gRPC API's state %s was imported, but renaming it failed: %w", file, err)
	}
	attrs := []any{"file", file, "renamed", to, "values", len(decoded)}
	if p := st.Pending; p != nil {
		attrs = append(attrs, "unconfirmed_commit", p.Seq)
		r.logger.Warn("the former gRPC API's state imported as the API source's; its commit awaiting confirmation is taken as never confirmed", attrs...)
	} else {
		r.logger.Info("the former gRPC API's state imported as the API source's", attrs...)
	}
	return nil
}

// freeName returns name, or name.2, name.3... the first that does not
// exist.
func freeName(name string) (string, error) {
	for i := 1; i < 1000; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s.%d", name, i)
		}
		if _, err := os.Lstat(n); errors.Is(err, os.ErrNotExist) {
			return n, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no free name for %s", name)
}
