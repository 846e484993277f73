package file_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

const debounce = 50 * time.Millisecond

// sink records what a source sends it.
type sink struct {
	mu       sync.Mutex
	updates  []nb.Update
	problems []error // nil: cleared
	events   chan struct{}
}

func newSink() *sink { return &sink{events: make(chan struct{}, 1000)} }

func (s *sink) Apply(_ context.Context, u nb.Update) error {
	s.mu.Lock()
	s.updates = append(s.updates, u)
	s.mu.Unlock()
	s.events <- struct{}{}
	return nil
}

func (s *sink) Problem(err error) {
	s.mu.Lock()
	s.problems = append(s.problems, err)
	s.mu.Unlock()
	s.events <- struct{}{}
}

func (s *sink) counts() (updates, problems int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates), len(s.problems)
}

// waitFor waits until the sink holds n updates and p problem reports.
func (s *sink) waitFor(t *testing.T, n, p int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		u, q := s.counts()
		if u == n && q == p {
			return
		}
		if u > n || q > p {
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("got %d updates and %d problems, want %d and %d: %v; %v", u, q, n, p, s.updates, s.problems)
		}
		select {
		case <-s.events:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("timed out with %d updates and %d problems, want %d and %d: %v", u, q, n, p, s.problems)
		}
	}
}

// quiet checks that nothing more arrives for a while.
func (s *sink) quiet(t *testing.T) {
	t.Helper()
	u, p := s.counts()
	time.Sleep(6 * debounce)
	s.waitFor(t, u, p)
}

func (s *sink) update(i int) nb.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates[i]
}

func (s *sink) problem(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.problems[i]
}

// neverDeletes checks that no update deleted any of keys.
func (s *sink) neverDeletes(t *testing.T, keys ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.updates {
		for _, c := range u.Changes {
			if c.Value == nil && contains(keys, c.Key) {
				t.Errorf("an update deleted %s: %v", c.Key, u)
			}
		}
	}
}

func contains(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// start runs the source of path until the test ends.
func start(t *testing.T, path string) *sink {
	t.Helper()
	src := file.New(path, testModels, file.WithDebounce(debounce), file.WithName("cfg"),
		file.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if src.Name() != "cfg" {
		t.Errorf("Name() = %q", src.Name())
	}
	s := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx, s) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replace replaces the file at path with one holding data, at once (a
// rename): a reader sees the old contents or the new, never a part.
func replace(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".new"
	write(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const (
	cfgAB = `linux/interface/a:
  name: a
  type: TYPE_VETH
  vethPeer: b
linux/interface/b:
  name: b
  type: TYPE_VETH
  vethPeer: a
`
	cfgAB2C = `linux/interface/a:
  name: a
  type: TYPE_VETH
  vethPeer: b
linux/interface/b:
  name: b
  type: TYPE_VETH
  vethPeer: a
  mtu: 9000
linux/route/a/10.1.0.0/16: {outgoingInterface: a, dstNetwork: 10.1.0.0/16}
`
)

// checkAB2C checks the update from cfgAB to cfgAB2C: b changed and the
// route added, nothing else.
func checkAB2C(t *testing.T, u nb.Update) {
	t.Helper()
	if u.Resync {
		t.Error("an edit is a resync")
	}
	b := veth("b", "a")
	b.Mtu = 9000
	checkChanges(t, u.Changes,
		nb.Change{Key: "linux/interface/b", Value: b},
		nb.Change{Key: "linux/route/a/10.1.0.0/16", Value: routeA()},
	)
}

func TestLoadAndEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, cfgAB)
	s := start(t, path)
	s.waitFor(t, 1, 0)
	u := s.update(0)
	if !u.Resync || !strings.Contains(u.Description, path) {
		t.Errorf("initial update: resync %v, description %q", u.Resync, u.Description)
	}
	checkChanges(t, u.Changes,
		nb.Change{Key: "linux/interface/a", Value: veth("a", "b")},
		nb.Change{Key: "linux/interface/b", Value: veth("b", "a")})

	write(t, path, cfgAB2C)
	s.waitFor(t, 2, 0)
	checkAB2C(t, s.update(1))

	// a removed, the comment and the order changed: only a's delete.
	write(t, path, "# edited\nlinux/route/a/10.1.0.0/16: {outgoingInterface: a, dstNetwork: 10.1.0.0/16}\n"+
		"linux/interface/b: {name: b, type: TYPE_VETH, vethPeer: a, mtu: 9000}\n")
	s.waitFor(t, 3, 0)
	checkChanges(t, s.update(2).Changes, nb.Change{Key: "linux/interface/a"})

	// The same configuration written differently: no update.
	write(t, path, "linux/interface/b: {name: b, type: TYPE_VETH, veth_peer: a, mtu: 9000}\n"+
		"linux/route/a/10.1.0.0/16: {outgoingInterface: a, dstNetwork: 10.1.0.0/16}\n")
	s.quiet(t)
}

func TestRenameOver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write(t, path, cfgAB)
	s := start(t, path)
	s.waitFor(t, 1, 0)

	// As vim and most editors save: a temporary file (here with a
	// backup too), then renamed over the file.
	tmp := filepath.Join(dir, ".config.yaml.swp")
	write(t, tmp, cfgAB2C)
	write(t, filepath.Join(dir, "config.yaml~"), cfgAB)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, 2, 0)
	checkAB2C(t, s.update(1))
	s.quiet(t)
	s.neverDeletes(t, "linux/interface/a", "linux/interface/b")
}

func TestTruncateThenWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pause time.Duration
	}{
		{"pause shorter than the debounce", debounce / 5},
		{"pause longer than the debounce", 4 * debounce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			write(t, path, cfgAB)
			s := start(t, path)
			s.waitFor(t, 1, 0)

			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.pause)
			// Half of it, then the rest.
			half := len(cfgAB2C) / 2
			if _, err := f.WriteString(cfgAB2C[:half]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.pause)
			if _, err := f.WriteString(cfgAB2C[half:]); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			// The update, and the clearing of a problem reported on the
			// way: the source clears it after the update is applied, so
			// counting on the update alone let quiet see it come.
			deadline := time.Now().Add(30 * time.Second)
			for {
				n, p := s.counts()
				if n >= 2 && (p == 0 || s.problem(p-1) == nil) || time.Now().After(deadline) {
					break
				}
				time.Sleep(debounce / 5)
			}
			s.quiet(t)
			n, p := s.counts()
			if n != 2 {
				t.Fatalf("%d updates, want 2", n)
			}
			checkAB2C(t, s.update(1))
			s.neverDeletes(t, "linux/interface/a", "linux/interface/b")
			if p > 0 && s.problem(p-1) != nil {
				t.Errorf("the last problem is not cleared: %v", s.problem(p-1))
			}
			t.Logf("%d problems reported on the way", p)
		})
	}
}

func TestDeleteAndRecreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, cfgAB)
	s := start(t, path)
	s.waitFor(t, 1, 0)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, 1, 1)
	if err := s.problem(0); err == nil || !strings.Contains(err.Error(), path+": the file does not exist") {
		t.Errorf("problem %v", err)
	}
	write(t, path, cfgAB2C)
	s.waitFor(t, 2, 2)
	checkAB2C(t, s.update(1))
	if s.problem(1) != nil {
		t.Errorf("problem not cleared: %v", s.problem(1))
	}
	s.quiet(t)
}

func TestBadEditAndRecovery(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string
	}{
		{"malformed", cfgAB2C + "linux/interface/c: {name: c\n", "config.yaml:11: did not find expected ',' or '}'"},
		{"unknown key", cfgAB2C + "linux/bogus/c:\n  name: c\n", `config.yaml:11:1: key "linux/bogus/c": no model handles it (unknown key)`},
		{"bad value", cfgAB2C + "linux/interface/c:\n  name: c\n  mtu: lots\n", `config.yaml:13:8: key "linux/interface/c": field mtu: "lots" is not a uint32`},
		{"duplicate key", cfgAB2C + "linux/interface/a: {name: a}\n", `config.yaml:11:1: key "linux/interface/a": duplicate key (first at line 1)`},
		{"empty", "", "config.yaml: the file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			write(t, path, cfgAB)
			s := start(t, path)
			s.waitFor(t, 1, 0)

			// Replaced whole (renamed over it): os.WriteFile truncates
			// first, and a loaded machine pausing the test past the
			// debounce between the truncate and the write made the
			// source read the file empty, a problem before this one
			// (TestTruncateThenWrite is the test of that).
			replace(t, path, tc.data)
			s.waitFor(t, 1, 1)
			err := s.problem(0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("problem %v, want it to contain %q", err, tc.want)
			}
			t.Log(err)
			recovers(t, s, path)
		})
	}
}

func TestMissingAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	s := start(t, path)
	s.waitFor(t, 0, 1)
	if err := s.problem(0); err == nil || !strings.Contains(err.Error(), path+": the file does not exist: waiting for it") {
		t.Errorf("problem %v", err)
	}
	write(t, filepath.Join(filepath.Dir(path), "other"), "x")
	s.quiet(t) // not reported again
	write(t, path, cfgAB)
	s.waitFor(t, 1, 2)
	if u := s.update(0); !u.Resync || len(u.Changes) != 2 {
		t.Errorf("first update %v, want the resync of a and b", u)
	}
}

func TestBadAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, "linux/bogus/x: {}\n")
	s := start(t, path)
	s.waitFor(t, 0, 1)
	// Another file of the directory changes: the same problem is not
	// reported again.
	write(t, filepath.Join(filepath.Dir(path), "other"), "x")
	s.quiet(t)
	write(t, path, "{}\n")
	s.waitFor(t, 1, 2)
	if u := s.update(0); !u.Resync || len(u.Changes) != 0 {
		t.Errorf("first update %v, want an empty resync", u)
	}
}

func TestJSONFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	write(t, path, `{"linux/interface/a": {"name": "a", "type": "TYPE_VETH", "vethPeer": "b"},
 "linux/interface/b": {"name": "b", "type": "TYPE_VETH", "vethPeer": "a"}}`)
	s := start(t, path)
	s.waitFor(t, 1, 0)
	checkChanges(t, s.update(0).Changes,
		nb.Change{Key: "linux/interface/a", Value: veth("a", "b")},
		nb.Change{Key: "linux/interface/b", Value: veth("b", "a")})

	write(t, path, `{"linux/interface/a": {"name": "a", "type": "TYPE_VETH", "vethPeer": "b"},
 "linux/interface/b": {"name": "b", "type": "TYPE_VETH", "vethPeer": "a",}}`)
	s.waitFor(t, 1, 1)
	if err := s.problem(0); err == nil || !strings.Contains(err.Error(), "config.json:2:") {
		t.Errorf("problem %v", err)
	}
	write(t, path, `{"linux/interface/a": {"name": "a", "type": "TYPE_VETH", "vethPeer": "b"},
 "linux/interface/b": {"name": "b", "type": "TYPE_VETH", "vethPeer": "a", "mtu": 9000},
 "linux/route/a/10.1.0.0/16": {"outgoingInterface": "a", "dstNetwork": "10.1.0.0/16"}}`)
	s.waitFor(t, 2, 2)
	checkAB2C(t, s.update(1))
}

func routeA() proto.Message {
	changes, err := file.Parse("r.yaml", []byte("linux/route/a/10.1.0.0/16: {outgoingInterface: a, dstNetwork: 10.1.0.0/16}"), testModels)
	if err != nil || len(changes) != 1 {
		panic(err)
	}
	return changes[0].Value
}

// refusing is a sink whose Apply fails while refuse is set.
type refusing struct {
	*sink
	mu     sync.Mutex
	refuse bool
}

func (r *refusing) Apply(ctx context.Context, u nb.Update) error {
	r.mu.Lock()
	refuse := r.refuse
	r.mu.Unlock()
	if refuse {
		r.sink.Problem(nil) // counted as an event, told apart below
		return errors.New("refused")
	}
	return r.sink.Apply(ctx, u)
}

func TestApplyRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write(t, path, cfgAB)
	r := &refusing{sink: newSink(), refuse: true}
	src := file.New(path, testModels, file.WithDebounce(debounce),
		file.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if src.Name() != "file" {
		t.Errorf("default Name() = %q", src.Name())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx, r) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// The refused resync: a nil from the fake, then the source's report.
	r.waitFor(t, 0, 2)
	if err := r.problem(1); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("problem %v", err)
	}
	r.mu.Lock()
	r.refuse = false
	r.mu.Unlock()
	// Any event in the directory tries again, the same contents too, and
	// the first update applied is still the resync.
	write(t, filepath.Join(dir, "other"), "x")
	r.waitFor(t, 1, 3)
	if u := r.update(0); !u.Resync || len(u.Changes) != 2 {
		t.Errorf("update %v, want the resync of a and b", u)
	}
	if r.problem(2) != nil {
		t.Errorf("problem not cleared: %v", r.problem(2))
	}
}

// startOpts runs a source of path with opts until the test ends.
func startOpts(t *testing.T, path string, opts ...file.Option) *sink {
	t.Helper()
	opts = append([]file.Option{file.WithDebounce(debounce), file.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	src := file.New(path, testModels, opts...)
	s := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx, s) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

// A file over the size limit is a bad file: reported with the file and the
// limit, nothing of it applied; a file of the limit's size loads.
func TestMaxSize(t *testing.T) {
	if n := file.New("x", testModels).MaxSize(); n != file.DefaultMaxSize {
		t.Errorf("MaxSize() = %d by default, want %d", n, file.DefaultMaxSize)
	}
	limit := int64(len(cfgAB2C))
	path := filepath.Join(t.TempDir(), "config.yaml")
	write(t, path, cfgAB)
	s := startOpts(t, path, file.WithMaxSize(limit))
	s.waitFor(t, 1, 0)

	write(t, path, cfgAB2C+"#")
	s.waitFor(t, 1, 1)
	err := s.problem(0)
	if !errors.Is(err, file.ErrTooLarge) {
		t.Errorf("problem %v is not ErrTooLarge", err)
	}
	if want := fmt.Sprintf("%s: the file is larger than the limit of %d bytes", path, limit); err == nil || err.Error() != want {
		t.Errorf("problem %v, want %q", err, want)
	}
	recovers(t, s, path)
}

// recovers checks that the source, quiet since its bad file, applies a
// good file written next and clears its problem.
func recovers(t *testing.T, s *sink, path string) {
	t.Helper()
	s.quiet(t)

	write(t, path, cfgAB2C)
	s.waitFor(t, 2, 2)
	checkAB2C(t, s.update(1))
	if s.problem(1) != nil {
		t.Errorf("problem not cleared: %v", s.problem(1))
	}
}

// The source reads no more than the limit and a byte: a file that never
// ends (here a pipe, written to until its reader goes) is reported too
// large, not read whole.
func TestMaxSizeBoundsTheRead(t *testing.T) {
	const limit = 1 << 20
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	written := make(chan int64, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			written <- -1
			return
		}
		defer f.Close()
		line := []byte("# " + strings.Repeat("x", 1021) + "\n")
		var n int64
		for n < 64*limit { // a bound, so that a reader reading it all ends
			k, err := f.Write(line)
			n += int64(k)
			if err != nil {
				break // the reader closed the pipe
			}
		}
		written <- n
	}()
	s := startOpts(t, path, file.WithMaxSize(limit))
	s.waitFor(t, 0, 1)
	if err := s.problem(0); !errors.Is(err, file.ErrTooLarge) {
		t.Errorf("problem %v is not ErrTooLarge", err)
	}
	// What the pipe took beyond the read: its buffer, at most.
	if n := <-written; n < limit || n > limit+1<<20 {
		t.Errorf("the writer wrote %d bytes into the pipe, want the limit (%d) and at most 1 MiB of buffer more", n, limit)
	}
}
