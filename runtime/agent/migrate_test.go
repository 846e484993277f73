package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
)

// oldGRPCValues returns values in the form the former gRPC API
// (runtime/grpcapi, before 68dffbd's successor) wrote them in grpc.json:
// key, message full name, wire form (base64 in JSON).
func oldGRPCValues(t *testing.T, kv map[string]string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for k, text := range kv {
		v := kvtest.Value(text)
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, map[string]any{"key": k, "type": string(v.ProtoReflect().Descriptor().FullName()), "data": b})
	}
	return out
}

// oldAgentState makes the state directory an agent of the former gRPC API
// left: state.db records the values as applied by the source "grpc", the
// southbound holds them, and grpc.json holds the source's state.
func oldAgentState(t *testing.T, sb *kvtest.SB, dir string, applied map[string]string, grpcJSON any) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	var puts []nb.Applied
	for k, v := range applied {
		puts = append(puts, nb.Applied{Key: k, Source: "grpc", Value: kvtest.Value(v)})
		sb.Put(k, v)
	}
	if err := store.Record(puts, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	b, ok := grpcJSON.([]byte)
	if !ok {
		if b, err = json.Marshal(grpcJSON); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "grpc.json"), string(b))
}

// apiOn runs the API on its default listener (the Unix socket in the
// state directory), so that the API's source exists.
func apiOn(c *Config) { c.GRPC.Address = "" }

// storeOwners returns the owner of each value the store records.
func storeOwners(t *testing.T, dir string) map[string]string {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range recs {
		out[a.Key] = a.Source + "=" + kvtest.Text(a.Value)
	}
	return out
}

// TestMigrateGRPCState: an agent started over the state of an agent of
// the former gRPC API keeps the values that API's clients set (the
// startup resync removed them before), owned by "api", and renames
// grpc.json to grpc.json.migrated.
func TestMigrateGRPCState(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "x/f: file\n")
	state := filepath.Join(dir, "s")
	sb := kvtest.NewSB()
	old := map[string]string{"x/a": "one", "x/b": "bee"}
	oldAgentState(t, sb, state, old, map[string]any{"current": oldGRPCValues(t, old)})

	r := startTestAgent(t, sb, file, state, apiOn)
	r.stop(t)
	got := sb.Values()
	for k, v := range map[string]string{"x/a": "one", "x/b": "bee", "x/f": "file"} {
		if got[k] != v {
			t.Errorf("southbound %s = %q after the startup resync, want %q (all: %v)", k, got[k], v, got)
		}
	}
	owners := storeOwners(t, state)
	for k, v := range map[string]string{"x/a": "api=one", "x/b": "api=bee", "x/f": "file=file"} {
		if owners[k] != v {
			t.Errorf("store: %s is %q, want %q (all: %v)", k, owners[k], v, owners)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "grpc.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("grpc.json is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(state, "grpc.json.migrated")); err != nil {
		t.Errorf("grpc.json.migrated: %v", err)
	}

	// A second start imports nothing more and keeps the values.
	r = startTestAgent(t, sb, file, state, apiOn)
	r.stop(t)
	if got := sb.Values(); got["x/a"] != "one" || got["x/b"] != "bee" {
		t.Errorf("after a second start the southbound holds %v", got)
	}
}

// TestMigrateGRPCStatePending: a commit that awaited confirmation in
// grpc.json is taken as never confirmed: the state before it is imported,
// and the startup resync puts it back.
func TestMigrateGRPCStatePending(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "x/f: file\n")
	state := filepath.Join(dir, "s")
	sb := kvtest.NewSB()
	oldAgentState(t, sb, state, map[string]string{"x/a": "two", "x/c": "new"}, map[string]any{
		"current": oldGRPCValues(t, map[string]string{"x/a": "two", "x/c": "new"}),
		"pending": map[string]any{
			"seq": 7, "deadline": time.Now().Add(time.Minute),
			"previous": oldGRPCValues(t, map[string]string{"x/a": "one"}),
		},
	})
	r := startTestAgent(t, sb, file, state, apiOn)
	r.stop(t)
	got := sb.Values()
	if got["x/a"] != "one" {
		t.Errorf("x/a = %q, want the value before the unconfirmed commit, one (all: %v)", got["x/a"], got)
	}
	if _, ok := got["x/c"]; ok {
		t.Errorf("x/c, created by the unconfirmed commit, is still there: %v", got)
	}
	if o := storeOwners(t, state)["x/a"]; o != "api=one" {
		t.Errorf("store: x/a is %q, want api=one", o)
	}
}

// TestMigrateGRPCStateBadFile: a grpc.json that does not parse, or holds a
// value no model decodes, stops the agent with an error naming the file
// and the problem; the file stays where it was.
func TestMigrateGRPCStateBadFile(t *testing.T) {
	for name, tc := range map[string]struct {
		content any
		want    string
	}{
		"syntax":   {[]byte(`{"current": [`), "does not parse"},
		"key":      {map[string]any{"current": []map[string]any{{"key": "nomodel/a", "type": "google.protobuf.StringValue", "data": []byte{}}}}, `current[0] (key "nomodel/a")`},
		"type":     {map[string]any{"current": []map[string]any{{"key": "x/a", "type": "other.Type", "data": []byte{}}}}, `current[0] (key "x/a"): type`},
		"previous": {map[string]any{"current": []any{}, "pending": map[string]any{"seq": 3, "previous": []map[string]any{{"type": "google.protobuf.StringValue"}}}}, "pending.previous (the state before commit 3)[0]: no key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "s")
			sb := kvtest.NewSB()
			oldAgentState(t, sb, state, map[string]string{"x/a": "one"}, tc.content)
			d, err := sb.Descriptor(kvtest.Config{Name: "x", KeyTemplate: "x/{name}"})
			if err != nil {
				t.Fatal(err)
			}
			cfg := Defaults()
			cfg.Name, cfg.StateDir = "t", state
			cfg.HTTP.Address = ""
			cfg.LogOutput = io.Discard
			a, err := New(cfg, Descriptors("harness", d))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = a.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(state, "grpc.json")) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want an error naming grpc.json and %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(state, "grpc.json")); err != nil {
				t.Errorf("grpc.json: %v", err)
			}
			if got, _ := sb.Get("x/a"); got != "one" {
				t.Errorf("x/a = %q, want it left alone", got)
			}
		})
	}
}
