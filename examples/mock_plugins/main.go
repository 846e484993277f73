// Command mock_plugins plays the reference design's hands-on scenarios of
// the scheduler over a mock southbound that prints each call, so that what
// the scheduler decides (plans, PENDING values, reverts, re-creates,
// retries) can be read next to what it asks of the data plane. It needs
// nothing but Go.
//
// The models are models/examples/mock/v1/mock.proto: interfaces, bridge
// domains whose members derive bindings, and L2 FIB entries that wait for
// the binding of their interface. handlers.go holds the only hand-written
// part, the CRUD bodies over southbound.go.
//
//	go run ./examples/mock_plugins -scenario list
//	go run ./examples/mock_plugins -scenario pending-after-resync
//	go run ./examples/mock_plugins -scenario all
//
// Each scenario checks the states it expects and exits non-zero when one
// is not reached. The output is deterministic (the log's durations are
// left out), so that a test compares it with a golden file.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func main() {
	name := flag.String("scenario", "list", `the scenario to play: a name, "all", or "list" to list them`)
	flag.Parse()
	if err := play(os.Stdout, *name); err != nil {
		fmt.Fprintln(os.Stderr, "mock_plugins:", err)
		os.Exit(1)
	}
}

// play plays the scenario called name ("all": every one, in order) and
// writes to w; "list" lists the scenarios.
func play(w io.Writer, name string) error {
	switch name {
	case "list":
		for _, sc := range scenarios {
			fmt.Fprintf(w, "%-22s %s\n", sc.name, sc.title)
		}
		return nil
	case "all":
		for i, sc := range scenarios {
			if i > 0 {
				fmt.Fprintln(w)
			}
			if err := run(w, sc); err != nil {
				return err
			}
		}
		return nil
	}
	for _, sc := range scenarios {
		if sc.name == name {
			return run(w, sc)
		}
	}
	return fmt.Errorf("no scenario %q (-scenario list lists them)", name)
}

// run plays one scenario on a fresh scheduler and southbound.
func run(w io.Writer, sc scenario) error {
	out := &normalizer{w: w}
	sb := newSouthbound(out)
	descs, err := descriptors(sb)
	if err != nil {
		return err
	}
	s, err := scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(out, slog.LevelInfo))))
	if err != nil {
		return err
	}
	if err := s.Register(descs...); err != nil {
		return err
	}
	e := &env{ctx: context.Background(), w: out, s: s, sb: sb}
	fmt.Fprintf(out, "=== %s: %s ===\n", sc.name, sc.title)
	for _, line := range sc.about {
		fmt.Fprintf(out, "%s\n", line)
	}
	for i, st := range sc.steps {
		fmt.Fprintf(out, "\n--- %d. %s ---\n", i+1, st.title)
		for _, line := range st.notes {
			fmt.Fprintf(out, "  %s\n", line)
		}
		if err = st.run(e); err != nil {
			err = fmt.Errorf("%s, step %d (%s): %w", sc.name, i+1, st.title, err)
			break
		}
		e.printStatuses()
	}
	if cerr := s.Close(e.ctx); err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintf(out, "\n%s: every expected state reached\n", sc.name)
	}
	return err
}

// normalizer serialises the writes of the scenario, the southbound and
// the scheduler's log, and drops from the log what changes from run to
// run (how long a transaction took), line by line.
type normalizer struct {
	mu      sync.Mutex
	w       io.Writer
	partial []byte
}

var varying = regexp.MustCompile(` took=[^ \n]+`)

func (n *normalizer) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.partial = append(n.partial, p...)
	end := bytes.LastIndexByte(n.partial, '\n')
	if end < 0 {
		return len(p), nil
	}
	lines := varying.ReplaceAll(n.partial[:end+1], nil)
	n.partial = append(n.partial[:0], n.partial[end+1:]...)
	if _, err := n.w.Write(lines); err != nil {
		return 0, err
	}
	return len(p), nil
}

// indent prefixes every line of text.
func indent(text, prefix string) string {
	text = strings.TrimRight(text, "\n")
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix) + "\n"
}
