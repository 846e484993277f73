package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var update = flag.Bool("update", false, "rewrite the expected files of the testdata scripts")

// TestScripts runs the scenario scripts in testdata/*.txtar. A script is the
// comment part of the archive, one command per line; the files of the
// archive are expected outputs compared by the commands. Commands:
//
//	register NAME TEMPLATE|PREFIX [noupdate] [noretrieve] [metadata] [batch] [claim=NOTE] [retrievedeps=A,B]
//	set KEY TOKENS...           add a Set to the transaction being built
//	del KEY                     add a Delete
//	commit [revert] [dryrun] [wait] [timeout=D] [error] [retry=N] [period=D] [backoff] [maxperiod=D] [desc=TEXT]
//	       [full|upstream|downstream]  (a resync of that kind)
//	                            commit it; a transaction error fails the
//	                            script unless "error" is given, which
//	                            requires one
//	fail KEY OP [partial] [times=N] [terminal]
//	notify KEY TOKENS... | notify-del KEY   (errors of values: see errors)
//	sb-put KEY TOKENS... | sb-del KEY    change the southbound behind our back
//	plan FILE | executed FILE   operations of the last transaction
//	calls FILE                  southbound calls since the last "calls"
//	sb FILE                     southbound contents
//	status FILE [PREFIX]        key, state, descriptor, error, unmet deps
//	state KEY STATE             one key's state
//	why KEY FILE                WhyPending of KEY
//	outcomes FILE               outcomes of the last CommitAndWait
//	errors FILE                 per-key errors of the last transaction
//	metadata NAME FILE          metadata map of a descriptor
//	wait-state KEY STATE        wait (up to 5 s) for KEY to reach STATE
//	wait-record SEQ             wait (up to 5 s) for transaction SEQ to be recorded
//	history FILE                the retained transaction records
//	timeline KEY FILE           the timeline of KEY
//	snapshot SEQ FILE           the graph snapshot as of transaction SEQ (0: now)
//	log FILE [GREP]             the log lines containing GREP
//	sleep DURATION
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runScript(t, file)
		})
	}
}

type scriptEnv struct {
	t       *testing.T
	sb      *kvtest.SB
	s       *scheduler.Scheduler
	descs   map[string]*kv.TypedDescriptor[string, *wrapperspb.StringValue, kvtest.Meta]
	txn     *scheduler.Txn
	last    *scheduler.Result
	ar      *txtar.Archive
	changed bool
	log     syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the scheduler's worker to write
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func runScript(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	e := &scriptEnv{t: t, sb: kvtest.NewSB(), ar: ar, descs: map[string]*kv.TypedDescriptor[string, *wrapperspb.StringValue, kvtest.Meta]{}}
	e.s, err = scheduler.New(scheduler.WithLogger(slog.New(scheduler.NewLogHandler(&e.log, slog.LevelInfo))))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := e.exec(line); err != nil {
			t.Fatalf("%s:%d: %s: %v\ntransaction log:\n%s", file, i+1, line, err, e.log.String())
		}
	}
	if *update && e.changed {
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *scriptEnv) exec(line string) error {
	fields := strings.Fields(line)
	cmd, args := fields[0], fields[1:]
	rest := func(n int) string {
		if len(args) <= n {
			return ""
		}
		return strings.Join(args[n:], " ")
	}
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("%s needs %d arguments", cmd, n)
		}
		return nil
	}
	if err := need(map[string]int{"register": 2, "set": 1, "del": 1, "fail": 2, "notify": 1, "notify-del": 1,
		"sb-put": 1, "sb-del": 1, "plan": 1, "executed": 1, "calls": 1, "sb": 1, "status": 1, "state": 2,
		"why": 2, "outcomes": 1, "errors": 1, "metadata": 2, "wait-state": 2, "wait-record": 1, "sleep": 1,
		"history": 1, "timeline": 2, "snapshot": 2, "log": 1}[cmd]); err != nil {
		return err
	}
	switch cmd {
	case "register":
		c := kvtest.Config{Name: args[0]}
		if strings.Contains(args[1], "{") {
			c.KeyTemplate = args[1]
		} else {
			c.KeyPrefix = args[1]
		}
		c.NoUpdate = slices.Contains(args, "noupdate")
		c.NoRetrieve = slices.Contains(args, "noretrieve")
		c.WithMetadata = slices.Contains(args, "metadata")
		c.Batch = slices.Contains(args, "batch")
		for _, a := range args[2:] {
			if v, ok := strings.CutPrefix(a, "claim="); ok {
				c.Claim = v
			}
			if v, ok := strings.CutPrefix(a, "retrievedeps="); ok {
				c.RetrieveDependencies = strings.Split(v, ",")
			}
		}
		d, err := e.sb.Descriptor(c)
		if err != nil {
			return err
		}
		e.descs[c.Name] = d
		return e.s.Register(d)
	case "set", "del":
		if e.txn == nil {
			e.txn = e.s.Txn()
		}
		if cmd == "del" {
			e.txn.Delete(args[0])
		} else {
			e.txn.Set(args[0], kvtest.Value(rest(1)))
		}
		return nil
	case "commit":
		return e.commit(args)
	case "fail":
		f := kvtest.Failure{Op: args[1], Partial: slices.Contains(args, "partial"), Terminal: slices.Contains(args, "terminal")}
		for _, a := range args[2:] {
			if n, ok := strings.CutPrefix(a, "times="); ok {
				f.Times, _ = strconv.Atoi(n)
			}
		}
		e.sb.Fail(args[0], f)
		return nil
	case "notify", "notify-del":
		n := scheduler.Notification{Key: args[0]}
		if cmd == "notify" {
			n.Value = kvtest.Value(rest(1))
		}
		res, err := e.s.Notify(context.Background(), n)
		e.last = res
		if txnErr := (*scheduler.TxnError)(nil); errors.As(err, &txnErr) {
			return nil // errors of the values it touched: see "errors"
		}
		return err
	case "sb-put":
		e.sb.Put(args[0], rest(1))
		return nil
	case "sb-del":
		e.sb.Remove(args[0])
		return nil
	case "plan", "executed":
		if e.last == nil {
			return errors.New("no transaction yet")
		}
		ops := e.last.Planned
		if cmd == "executed" {
			ops = e.last.Executed
		}
		return e.compare(args[0], scheduler.FormatOps(ops))
	case "calls":
		var b strings.Builder
		for _, c := range e.sb.TakeCalls() {
			b.WriteString(c.String() + "\n")
		}
		return e.compare(args[0], b.String())
	case "sb":
		return e.compare(args[0], e.sb.Dump())
	case "status":
		return e.compare(args[0], formatStatuses(e.s.Statuses(rest(1))))
	case "state":
		if got := e.s.Status(args[0]).State.String(); got != args[1] {
			return fmt.Errorf("state of %s is %s, want %s", args[0], got, args[1])
		}
		return nil
	case "why":
		r, ok := e.s.WhyPending(args[0])
		text := "not pending\n"
		if ok {
			text = r.String()
		}
		return e.compare(args[1], text)
	case "outcomes":
		if e.last == nil {
			return errors.New("no transaction yet")
		}
		var b strings.Builder
		for _, o := range e.last.Outcomes {
			fmt.Fprintf(&b, "%s %s", o.Key, o.State)
			if o.Err != nil {
				fmt.Fprintf(&b, " error=%q", o.Err.Error())
			}
			b.WriteByte('\n')
			if o.WhyPending != nil {
				for _, l := range strings.Split(strings.TrimSuffix(o.WhyPending.String(), "\n"), "\n") {
					b.WriteString("  | " + l + "\n")
				}
			}
		}
		return e.compare(args[0], b.String())
	case "errors":
		if e.last == nil {
			return errors.New("no transaction yet")
		}
		var b strings.Builder
		for _, ke := range e.last.Errors {
			b.WriteString(ke.Error() + "\n")
		}
		if len(e.last.Errors) == 0 && e.last.Err != nil {
			b.WriteString(e.last.Err.Error() + "\n")
		}
		return e.compare(args[0], b.String())
	case "metadata":
		d, ok := e.descs[args[0]]
		if !ok {
			return fmt.Errorf("no descriptor %s", args[0])
		}
		var b strings.Builder
		for _, l := range d.Metadata().Labels() {
			m, _ := d.Metadata().Get(l)
			fmt.Fprintf(&b, "%s = %d\n", l, m)
		}
		return e.compare(args[1], b.String())
	case "wait-state":
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := e.s.Status(args[0]).State.String()
			if got == args[1] {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("state of %s is %s after 5s, want %s", args[0], got, args[1])
			}
			time.Sleep(2 * time.Millisecond)
		}
	case "wait-record":
		seq, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return err
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			if _, ok := e.s.Record(seq); ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("transaction #%d not recorded after 5s", seq)
			}
		}
	case "history":
		return e.compare(args[0], formatHistory(e.s.History()))
	case "timeline":
		return e.compare(args[1], formatTimeline(e.s.Timeline(args[0])))
	case "snapshot":
		seq, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return err
		}
		snap, err := e.s.GraphSnapshot(seq)
		if err != nil {
			return e.compare(args[1], "error: "+err.Error())
		}
		return e.compare(args[1], formatSnapshot(snap))
	case "log":
		var b strings.Builder
		for _, l := range strings.Split(e.log.String(), "\n") {
			if strings.Contains(l, rest(1)) && l != "" {
				b.WriteString(l + "\n")
			}
		}
		return e.compare(args[0], b.String())
	case "sleep":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return err
		}
		time.Sleep(d)
		return nil
	}
	return fmt.Errorf("unknown command %q", cmd)
}

func (e *scriptEnv) commit(args []string) error {
	if e.txn == nil {
		e.txn = e.s.Txn()
	}
	var opts []scheduler.TxnOption
	var retry scheduler.RetryPolicy
	wait, wantErr := false, false
	timeout := 5 * time.Second
	for _, a := range args {
		key, val, _ := strings.Cut(a, "=")
		switch key {
		case "revert":
			opts = append(opts, scheduler.Revert())
		case "dryrun":
			opts = append(opts, scheduler.DryRun())
		case "wait":
			wait = true
		case "error":
			wantErr = true
		case "retry":
			retry.MaxAttempts, _ = strconv.Atoi(val)
		case "period":
			retry.Period, _ = time.ParseDuration(val)
		case "maxperiod":
			retry.MaxPeriod, _ = time.ParseDuration(val)
		case "backoff":
			retry.Backoff = true
		case "timeout":
			timeout, _ = time.ParseDuration(val)
		case "desc":
			opts = append(opts, scheduler.Description(val))
		case "full":
			opts = append(opts, scheduler.FullResync())
		case "upstream":
			opts = append(opts, scheduler.UpstreamResync())
		case "downstream":
			opts = append(opts, scheduler.DownstreamResync())
		default:
			return fmt.Errorf("unknown commit option %q", a)
		}
	}
	if retry.MaxAttempts > 0 {
		opts = append(opts, scheduler.Retry(retry))
	}
	built := e.txn.With(opts...)
	e.txn = nil
	var res *scheduler.Result
	var err error
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		res, err = built.CommitAndWait(ctx)
	} else {
		res, err = built.Commit(context.Background())
	}
	e.last = res
	switch {
	case wantErr && err == nil:
		return errors.New("commit succeeded, want an error")
	case !wantErr && err != nil:
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (e *scriptEnv) compare(name, got string) error {
	if got != "" && !strings.HasSuffix(got, "\n") {
		got += "\n" // txtar ends every file with a newline
	}
	for i := range e.ar.Files {
		f := &e.ar.Files[i]
		if f.Name != name {
			continue
		}
		if *update {
			if string(f.Data) != got {
				f.Data = []byte(got)
				e.changed = true
			}
			return nil
		}
		if diff := cmp.Diff(string(f.Data), got); diff != "" {
			return fmt.Errorf("%s differs (-want +got):\n%s", name, diff)
		}
		return nil
	}
	if *update {
		e.ar.Files = append(e.ar.Files, txtar.File{Name: name, Data: []byte(got)})
		e.changed = true
		return nil
	}
	return fmt.Errorf("no file %s in the archive; got:\n%s", name, got)
}

func formatStatuses(sts []scheduler.Status) string {
	var b strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&b, "%s %s", st.Key, st.State)
		if st.Descriptor != "" {
			fmt.Fprintf(&b, " desc=%s", st.Descriptor)
		}
		if st.Base != "" {
			fmt.Fprintf(&b, " base=%s", st.Base)
		}
		if st.State == scheduler.OBTAINED || st.State == scheduler.DISCOVERED {
			fmt.Fprintf(&b, " origin=%s", st.Origin)
		}
		if st.LastErr != nil {
			fmt.Fprintf(&b, " error=%q", st.LastErr.Error())
		}
		for _, u := range st.Unmet {
			fmt.Fprintf(&b, " unmet=[%s]", u)
		}
		for _, d := range st.Details {
			fmt.Fprintf(&b, " (%s)", d)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func formatHistory(recs []scheduler.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "#%d %s", r.Seq, r.Kind)
		if r.Description != "" {
			fmt.Fprintf(&b, " %q", r.Description)
		}
		if r.Reverted {
			b.WriteString(" REVERTED")
		}
		b.WriteByte('\n')
		for _, v := range r.Values {
			if v.Value == nil {
				fmt.Fprintf(&b, "  in: %s deleted\n", v.Key)
			} else {
				fmt.Fprintf(&b, "  in: %s = %s\n", v.Key, kvtest.Text(v.Value))
			}
		}
		for _, o := range r.Executed {
			fmt.Fprintf(&b, "  op: %s %s -> %s", o.Kind, o.Key, o.State)
			if o.Flags != 0 {
				fmt.Fprintf(&b, " [%s]", o.Flags)
			}
			if o.Err != nil {
				fmt.Fprintf(&b, " error=%q", o.Err.Error())
			}
			b.WriteByte('\n')
		}
		for _, ke := range r.Errors {
			fmt.Fprintf(&b, "  error: %s\n", ke.Error())
		}
	}
	return b.String()
}

func formatTimeline(es []scheduler.TimelineEntry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "#%d %s -> %s", e.Seq, e.Op, e.State)
		if e.Flags != 0 {
			fmt.Fprintf(&b, " [%s]", e.Flags)
		}
		if e.Value != nil {
			fmt.Fprintf(&b, " value=%q", kvtest.Text(e.Value))
		}
		if e.Metadata != nil {
			fmt.Fprintf(&b, " meta=%v", e.Metadata)
		}
		for _, d := range e.Dependencies {
			fmt.Fprintf(&b, " dep=%s", d.Label)
		}
		if e.Err != nil {
			fmt.Fprintf(&b, " error=%q", e.Err.Error())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func formatSnapshot(s *scheduler.GraphSnapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "as of #%d\n", s.Seq)
	for _, n := range s.Nodes {
		fmt.Fprintf(&b, "node %s %s", n.Key, n.State)
		if n.Placeholder {
			b.WriteString(" placeholder")
		}
		if n.Derived {
			b.WriteString(" derived")
		}
		if n.Value != nil {
			fmt.Fprintf(&b, " value=%q", kvtest.Text(n.Value))
		}
		b.WriteByte('\n')
	}
	for _, e := range s.Edges {
		kind := [...]string{"dep", "anyof", "derived"}[e.Kind]
		fmt.Fprintf(&b, "edge %s -> %s %s %q", e.From, e.To, kind, e.Label)
		if !e.Met {
			b.WriteString(" unmet")
		}
		b.WriteByte('\n')
	}
	for _, k := range s.Touched {
		fmt.Fprintf(&b, "touched %s\n", k)
	}
	return b.String()
}
