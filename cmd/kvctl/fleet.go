package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/etcd"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

const fleetLong = `fleet reads and writes the configuration and the statuses of many agents
in etcd directly (docs/fleet.md): each agent's configuration under
/kvdescriptor/<agent>/config/, its statuses under
/kvdescriptor/<agent>/status/, and, for agents run with -etcd-status,
its summary and presence under --fleet-prefix.

  status   one line per agent: present or not, its values by state,
           its last transaction
  diff     the values that differ between what was written for an agent
           and what it reports (exit code 1 when any differ)
  rollout  writes values to many agents in waves, each wave only after
           every agent of the previous one reports them CONFIGURED`

// fleetFlags are kvctl fleet's: etcd's (as kvctl etcd's) and the prefix
// of the fleet's keys.
type fleetFlags struct {
	etcdFlags
	fleetPrefix string
}

func (c *cli) fleetCmd() *cobra.Command {
	f := &fleetFlags{}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Many agents through etcd: status, diff, rollout",
		Long:  fleetLong,
		Args:  args(cobra.NoArgs),
	}
	pf := cmd.PersistentFlags()
	f.etcdFlags.addConnFlags(pf)
	pf.StringVar(&f.fleetPrefix, "fleet-prefix", etcd.DefaultFleetPrefix, "the prefix of the agents' summaries and presence keys")
	cmd.AddCommand(c.fleetStatusCmd(f), c.fleetDiffCmd(f), c.fleetRolloutCmd(f))
	return cmd
}

// agentSummary is one agent as fleet status shows it.
type agentSummary struct {
	etcd.FleetSummary
	Present bool `json:"present" yaml:"present"`
}

// readSummaries reads every agent's summary and presence.
func readSummaries(ctx context.Context, cl *clientv3.Client, prefix string) ([]agentSummary, error) {
	resp, err := cl.Get(ctx, prefix+"summary/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	alive, err := cl.Get(ctx, prefix+"alive/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, kv := range alive.Kvs {
		present[strings.TrimPrefix(string(kv.Key), prefix+"alive/")] = true
	}
	var out []agentSummary
	for _, kv := range resp.Kvs {
		var s agentSummary
		if err := json.Unmarshal(kv.Value, &s.FleetSummary); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		s.Agent = strings.TrimPrefix(string(kv.Key), prefix+"summary/")
		s.Present = present[s.Agent]
		out = append(out, s)
	}
	return out, nil
}

func (c *cli) fleetStatusCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "One line per agent: present, values by state, last transaction",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withEtcd(cmd, &f.etcdFlags, func(ctx context.Context, cl *clientv3.Client) error {
				ss, err := readSummaries(ctx, cl, f.fleetPrefix)
				if err != nil {
					return err
				}
				if c.output != "text" {
					return c.writeStructured(ss)
				}
				t := newTable(c.stdout)
				fmt.Fprintln(t, "AGENT\tPRESENT\tVALUES\tCONFIGURED\tPENDING\tFAILED\tOTHER\tLAST-SEQ\tLAST-CHANGE")
				for _, s := range ss {
					n, other := 0, 0
					for st, k := range s.States {
						n += k
						if st != "CONFIGURED" && st != "PENDING" && st != "FAILED" {
							other += k
						}
					}
					present := "yes"
					if !s.Present {
						present = c.paint("31", "no")
					}
					last := "-"
					if !s.LastChange.IsZero() {
						last = s.LastChange.Format(time.RFC3339)
					}
					fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Agent, present, n,
						s.States["CONFIGURED"], s.States["PENDING"], s.States["FAILED"], other, s.LastSeq, last)
				}
				return t.Flush()
			})
		},
	}
}

// writeStructured writes v as JSON or YAML (-o).
func (c *cli) writeStructured(v any) error {
	b, err := marshalOutput(c.output, v)
	if err != nil {
		return failed("%v", err)
	}
	_, err = c.stdout.Write(b)
	return err
}

// fleetDifference is one value that differs between what was written for
// an agent and what it reports.
type fleetDifference struct {
	Agent string `json:"agent" yaml:"agent"`
	Key   string `json:"key" yaml:"key"`
	// What: "not reported" (written, no status), "stale" (a status of the
	// etcd source for a key no longer written), or the reported state.
	What  string `json:"what" yaml:"what"`
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// agentDiff compares an agent's configuration and statuses in etcd.
func agentDiff(ctx context.Context, cl *clientv3.Client, agent string) ([]fleetDifference, error) {
	src := etcd.New(nil, nil, etcd.WithAgent(agent))
	config, err := cl.Get(ctx, src.Prefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	status, err := cl.Get(ctx, src.StatusPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	written := map[string]bool{}
	for _, kv := range config.Kvs {
		written[strings.TrimPrefix(string(kv.Key), src.Prefix())] = true
	}
	var out []fleetDifference
	reported := map[string]bool{}
	for _, kv := range status.Kvs {
		var d etcd.StatusDoc
		key := strings.TrimPrefix(string(kv.Key), src.StatusPrefix())
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			out = append(out, fleetDifference{Agent: agent, Key: key, What: "unreadable status", Error: err.Error()})
			continue
		}
		reported[key] = true
		switch {
		case written[key] && d.Owner != "" && d.Owner != src.Name():
			out = append(out, fleetDifference{Agent: agent, Key: key, What: "shadowed", Error: fmt.Sprintf("the agent's source %q sets the key, with priority over etcd", d.Owner)})
		case written[key] && d.State != "CONFIGURED":
			out = append(out, fleetDifference{Agent: agent, Key: key, What: d.State, Error: d.Error})
		case !written[key] && d.Owner == src.Name():
			out = append(out, fleetDifference{Agent: agent, Key: key, What: "stale", Error: "the agent holds a value of the etcd source that is no longer written"})
		}
	}
	for key := range written {
		if !reported[key] {
			out = append(out, fleetDifference{Agent: agent, Key: key, What: "not reported"})
		}
	}
	slices.SortFunc(out, func(a, b fleetDifference) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (c *cli) fleetDiffCmd(f *fleetFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "diff [agent...]",
		Short: "The values whose status differs from what was written, per agent (all agents with a summary by default)",
		Long: `diff compares, for each agent, the keys written under its configuration
prefix with the statuses it reports: a key written with no status is
"not reported" (the agent has not seen it, or runs without
-etcd-status), a key another source of the agent sets with priority is
"shadowed", a key whose status is not CONFIGURED shows its state and
error, and a status of the etcd source for a key no longer written is
"stale". Exit code 1 when any value differs.`,
		RunE: func(cmd *cobra.Command, agents []string) error {
			return c.withEtcd(cmd, &f.etcdFlags, func(ctx context.Context, cl *clientv3.Client) error {
				if len(agents) == 0 {
					ss, err := readSummaries(ctx, cl, f.fleetPrefix)
					if err != nil {
						return err
					}
					for _, s := range ss {
						agents = append(agents, s.Agent)
					}
				}
				var all []fleetDifference
				for _, a := range agents {
					if err := checkAgentName(a); err != nil {
						return err
					}
					d, err := agentDiff(ctx, cl, a)
					if err != nil {
						return err
					}
					all = append(all, d...)
				}
				if c.output != "text" {
					if err := c.writeStructured(all); err != nil {
						return err
					}
				} else {
					t := newTable(c.stdout)
					fmt.Fprintln(t, "AGENT\tKEY\tDIFFERS\tERROR")
					for _, d := range all {
						fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", d.Agent, d.Key, d.What, d.Error)
					}
					if err := t.Flush(); err != nil {
						return err
					}
				}
				if len(all) > 0 {
					return &exitError{code: exitFailed, err: fmt.Errorf("%d values differ on %d agents", len(all), countAgents(all))}
				}
				return nil
			})
		},
	}
}

func countAgents(ds []fleetDifference) int {
	seen := map[string]bool{}
	for _, d := range ds {
		seen[d.Agent] = true
	}
	return len(seen)
}

// checkAgentName refuses an agent name that would make another prefix.
func checkAgentName(a string) error {
	if a == "" || strings.ContainsAny(a, "/ \t\n") || a == "." || a == ".." {
		return usage("agent %q: a name without '/' or whitespace", a)
	}
	return nil
}

// parseWave reads --wave: a percentage of the agents ("10%") or a count.
func parseWave(s string, agents int) (int, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 || v > 100 {
			return 0, usage("--wave %q: a percentage in (0, 100]", s)
		}
		return max(1, int(math.Ceil(v*float64(agents)/100))), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, usage("--wave %q: a positive number of agents or a percentage", s)
	}
	return n, nil
}

func (c *cli) fleetRolloutCmd(f *fleetFlags) *cobra.Command {
	var (
		path, wave  string
		agents      []string
		waveTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rollout -f values.yaml [--agents a,b,...] [--wave 10%]",
		Short: "Write values to many agents in waves, each gated on the previous one's health",
		Long: `rollout reads values in the file source's format (checked as the agent
checks them: one bad value and nothing is written), and writes them to
the configuration of each agent (--agents, or every agent with a
summary), a wave of agents at a time (--wave: a percentage of the
agents, or a number; 10% by default). A wave is healthy when every
agent of it reports every value it was given CONFIGURED (its status
written after the value); the next wave starts only then. A wave in
which a value is reported FAILED, INVALID or UNIMPLEMENTED, or is set
by another source of the agent that has priority over etcd, stops the
rollout, naming the agents, keys and errors; so does a wave that is not
healthy within --wave-timeout, naming what it waits for. A value
already written identically is not written again. Each agent's values
are written in one etcd transaction of at most 100 writes (etcd bounds
a transaction to 128 operations by default).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return usage("fleet rollout: -f FILE is required")
			}
			if waveTimeout <= 0 || waveTimeout > 24*time.Hour {
				return usage("--wave-timeout %s: between 0 and 24h", waveTimeout)
			}
			values, err := rolloutValues(path)
			if err != nil {
				return err
			}
			for _, a := range agents {
				if err := checkAgentName(a); err != nil {
					return err
				}
			}
			cl, err := f.client(c.timeout)
			if err != nil {
				return err
			}
			defer cl.Close()
			return etcdError(&f.etcdFlags, c.rollout(cmd.Context(), cl, f, agents, values, wave, waveTimeout))
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "", "the values, in the file source's format")
	cmd.Flags().StringSliceVar(&agents, "agents", nil, "the agents, comma-separated (default: every agent with a summary)")
	cmd.Flags().StringVar(&wave, "wave", "10%", "agents per wave: a percentage of the agents or a number")
	cmd.Flags().DurationVar(&waveTimeout, "wave-timeout", 5*time.Minute, "how long a wave may take to become healthy")
	return cmd
}

// rolloutValue is a value to write: its key and protojson text.
type rolloutValue struct{ key, text string }

// rolloutValues reads and checks the values of a rollout.
func rolloutValues(path string) ([]rolloutValue, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	models, err := newLocalModels()
	if err != nil {
		return nil, failed("%v", err)
	}
	changes, err := file.Parse(path, data, models)
	if err != nil {
		return nil, failed("%v", err)
	}
	var out []rolloutValue
	for _, ch := range changes {
		if err := models.validate(ch.Key, ch.Value); err != nil {
			return nil, failed("%s: nothing written: %v", path, err)
		}
		b, err := protojson.Marshal(ch.Value)
		if err != nil {
			return nil, failed("key %q: %v", ch.Key, err)
		}
		out = append(out, rolloutValue{key: ch.Key, text: string(b)})
	}
	if len(out) == 0 {
		return nil, usage("%s: no values", path)
	}
	if len(out) > maxRolloutValues {
		return nil, usage("%s: %d values; a rollout writes at most %d per agent", path, len(out), maxRolloutValues)
	}
	return out, nil
}

// maxRolloutValues bounds the values of a rollout: one etcd transaction
// per agent (etcd's default limit is 128 operations).
const maxRolloutValues = 100

// pendingValue is a value written to an agent, awaited in its status.
type pendingValue struct {
	agent, key string
	statusRev  int64 // the status key's revision before the write; 0: none
	unchanged  bool  // written identically before: its status as it is counts
}

func (c *cli) rollout(ctx context.Context, cl *clientv3.Client, f *fleetFlags, agents []string, values []rolloutValue, wave string, waveTimeout time.Duration) error {
	if len(agents) == 0 {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		ss, err := readSummaries(rctx, cl, f.fleetPrefix)
		cancel()
		if err != nil {
			return err
		}
		for _, s := range ss {
			agents = append(agents, s.Agent)
		}
		if len(agents) == 0 {
			return failed("no agent has a summary under %ssummary/ (run them with -etcd-status, or name them with --agents)", f.fleetPrefix)
		}
	}
	size, err := parseWave(wave, len(agents))
	if err != nil {
		return err
	}
	waves := (len(agents) + size - 1) / size
	for w := 0; w < waves; w++ {
		group := agents[w*size : min((w+1)*size, len(agents))]
		start := time.Now()
		var pending []pendingValue
		for _, a := range group {
			p, err := c.writeAgent(ctx, cl, a, values)
			if err != nil {
				return err
			}
			pending = append(pending, p...)
		}
		if err := c.awaitWave(ctx, cl, pending, waveTimeout); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("wave %d/%d (%s): %w; the rollout stopped: waves %d to %d were not written",
				w+1, waves, strings.Join(group, ","), err, w+2, waves)}
		}
		fmt.Fprintf(c.stdout, "wave %d/%d: %d agents healthy in %s\n", w+1, waves, len(group), time.Since(start).Round(time.Millisecond))
	}
	fmt.Fprintf(c.stdout, "rolled out %d values to %d agents\n", len(values), len(agents))
	return nil
}

// writeAgent writes the values to one agent's configuration, in one
// transaction, and returns what to await.
func (c *cli) writeAgent(ctx context.Context, cl *clientv3.Client, agent string, values []rolloutValue) ([]pendingValue, error) {
	src := etcd.New(nil, nil, etcd.WithAgent(agent))
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var gets []clientv3.Op
	for _, v := range values {
		gets = append(gets, clientv3.OpGet(src.Prefix()+v.key), clientv3.OpGet(src.StatusPrefix()+v.key))
	}
	resps, _, err := readOps(rctx, cl, gets)
	if err != nil {
		return nil, err
	}
	var puts []clientv3.Op
	out := make([]pendingValue, len(values))
	for i, v := range values {
		cur, st := resps[2*i].GetResponseRange().Kvs, resps[2*i+1].GetResponseRange().Kvs
		out[i] = pendingValue{agent: agent, key: v.key}
		if len(st) > 0 {
			out[i].statusRev = st[0].ModRevision
		}
		if len(cur) > 0 && string(cur[0].Value) == v.text {
			out[i].unchanged = true
			continue
		}
		puts = append(puts, clientv3.OpPut(src.Prefix()+v.key, v.text))
	}
	if len(puts) > 0 {
		if _, err := cl.Txn(rctx).Then(puts...).Commit(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// maxReadOps is the number of reads of one transaction of readOps, within
// etcd's default limit of operations per transaction (128).
const maxReadOps = 100

// readOps runs the reads gets in transactions of at most maxReadOps and
// returns their responses in order, and the revision of the first (the
// earliest: a watch from the next revision misses no change after any of
// them). Reads of different transactions may see different revisions:
// each read is compared with a later one only.
func readOps(ctx context.Context, cl *clientv3.Client, gets []clientv3.Op) ([]*etcdserverpb.ResponseOp, int64, error) {
	var out []*etcdserverpb.ResponseOp
	var rev int64
	for len(gets) > 0 {
		n := min(len(gets), maxReadOps)
		resp, err := cl.Txn(ctx).Then(gets[:n]...).Commit()
		if err != nil {
			return nil, 0, err
		}
		if rev == 0 {
			rev = resp.Header.GetRevision()
		}
		out = append(out, resp.Responses...)
		gets = gets[n:]
	}
	return out, rev, nil
}

// waveSafetyRead is how long the rollout gate waits at most, with no
// status change seen, before it reads the statuses again anyway (a watch
// that fell silent).
const waveSafetyRead = 10 * time.Second

// awaitWave waits until every pending value is reported CONFIGURED, one
// is reported failed, or the timeout passes. It reads each agent's
// statuses of the values in one request; then, each time a watch of the
// agents' status keys (from the revision after the first read) sees
// those of some agents change, it reads theirs again, and everyone's at
// least every waveSafetyRead or after a watch ended.
func (c *cli) awaitWave(ctx context.Context, cl *clientv3.Client, pending []pendingValue, timeout time.Duration) error {
	byAgent := map[string][]pendingValue{}
	var order []string
	for _, p := range pending {
		if byAgent[p.agent] == nil {
			order = append(order, p.agent)
		}
		byAgent[p.agent] = append(byAgent[p.agent], p)
	}
	deadline := time.Now().Add(timeout)
	var w *statusWatch // opened after the first read, again after it ended
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	// failed and waiting hold, by agent, what its last read found.
	failed, waiting := map[string][]string{}, map[string][]string{}
	dirty := order
	for {
		rev, err := c.readWave(ctx, cl, dirty, byAgent, failed, waiting)
		if err != nil {
			return err
		}
		var failures, waits []string
		for _, agent := range order {
			failures, waits = append(failures, failed[agent]...), append(waits, waiting[agent]...)
		}
		if len(failures) > 0 {
			return fmt.Errorf("%d values failed: %s", len(failures), strings.Join(failures, "; "))
		}
		if len(waits) == 0 {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			shown := waits[:min(len(waits), 20)]
			return fmt.Errorf("not healthy within %s: %d values waited for: %s", timeout, len(waits), strings.Join(shown, "; "))
		}
		if w == nil {
			w = watchStatuses(ctx, cl, order, rev+1)
		}
		t := time.NewTimer(min(left, waveSafetyRead))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-w.changed:
			dirty = w.take()
		case <-t.C:
			dirty = order
		}
		t.Stop()
		if w.ended.Load() { // what it missed is not known: read all, watch anew
			w.stop()
			w, dirty = nil, order
		}
	}
}

// statusWatch is the watch of the agents' status keys of a rollout wave.
type statusWatch struct {
	// changed holds one signal: changes not taken yet coalesce.
	changed chan struct{}
	mu      sync.Mutex
	dirty   map[string]bool // the agents whose statuses changed
	// ended is set when a watch ended (an error such as a compacted
	// revision): the gate reads everything and watches again.
	ended atomic.Bool
	stop  context.CancelFunc
}

// take returns the agents whose statuses changed since the last take.
func (w *statusWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	agents := slices.Sorted(maps.Keys(w.dirty))
	clear(w.dirty)
	return agents
}

// watchStatuses watches the status keys of the agents from revision rev,
// signalling on changed whenever any changes or a watch ends.
func watchStatuses(ctx context.Context, cl *clientv3.Client, agents []string, rev int64) *statusWatch {
	w := &statusWatch{changed: make(chan struct{}, 1), dirty: map[string]bool{}}
	ctx, w.stop = context.WithCancel(ctx)
	signal := func(agent string) {
		w.mu.Lock()
		w.dirty[agent] = true
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	for _, agent := range agents {
		prefix := etcd.New(nil, nil, etcd.WithAgent(agent)).StatusPrefix()
		ch := cl.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
		go func() {
			for resp := range ch {
				if resp.Err() != nil {
					w.ended.Store(true)
				}
				signal(agent)
			}
			w.ended.Store(true)
			signal(agent)
		}()
	}
	return w
}

// readWave reads the statuses of the pending values of the agents, and
// records, by agent, the failed ones and those still waited for; it
// returns the earliest revision of the reads.
func (c *cli) readWave(ctx context.Context, cl *clientv3.Client, agents []string, byAgent map[string][]pendingValue, failed, waiting map[string][]string) (rev int64, err error) {
	for _, agent := range agents {
		ps := byAgent[agent]
		src := etcd.New(nil, nil, etcd.WithAgent(agent))
		var gets []clientv3.Op
		for _, p := range ps {
			gets = append(gets, clientv3.OpGet(src.StatusPrefix()+p.key))
		}
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		resps, r, err := readOps(rctx, cl, gets)
		cancel()
		if err != nil {
			return 0, err
		}
		if rev == 0 || r < rev {
			rev = r
		}
		failed[agent], waiting[agent] = nil, nil
		for i, p := range ps {
			kvs := resps[i].GetResponseRange().Kvs
			state := "no status"
			var d etcd.StatusDoc
			switch {
			case len(kvs) > 0 && json.Unmarshal(kvs[0].Value, &d) != nil:
				state = "unreadable status"
			case len(kvs) > 0 && d.Owner != "" && d.Owner != src.Name():
				// Another source of the agent sets the key and wins.
				state, d.Error = "SHADOWED", fmt.Sprintf("the agent's source %q sets the key, with priority over etcd", d.Owner)
			case len(kvs) > 0 && (p.unchanged || kvs[0].ModRevision > p.statusRev):
			case len(kvs) > 0:
				state = "not yet reported"
			}
			if state == "no status" && d.State != "" {
				state = d.State
			}
			switch state {
			case "CONFIGURED":
			case "FAILED", "INVALID", "UNIMPLEMENTED", "SHADOWED":
				failed[agent] = append(failed[agent], fmt.Sprintf("%s: %s %s: %s", agent, p.key, state, d.Error))
			default:
				waiting[agent] = append(waiting[agent], fmt.Sprintf("%s: %s %s", agent, p.key, state))
			}
		}
	}
	return rev, nil
}
