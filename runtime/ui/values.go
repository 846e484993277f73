package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// timeOf is a time of the API (zero when unset).
func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil || t.CheckValid() != nil {
		return time.Time{}
	}
	at := t.AsTime()
	if at.Equal(time.Time{}) {
		return time.Time{}
	}
	return at
}

// unpack is the message of an Any (nil when unset), or why it cannot be.
func unpack(a *anypb.Any) (proto.Message, error) {
	if a == nil {
		return nil, nil
	}
	return a.UnmarshalNew()
}

// anyText is a value as indented protojson, for a <pre>. A value of a type
// this program does not link (a remote agent's model) is named with its
// size.
func anyText(a *anypb.Any) string {
	m, err := unpack(a)
	if err != nil {
		return fmt.Sprintf("(a %s of %d bytes: its type is not known here)", strings.TrimPrefix(a.GetTypeUrl(), "type.googleapis.com/"), len(a.GetValue()))
	}
	return valueText(m)
}

func valueText(m proto.Message) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return ""
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("(cannot write %s: %v)", m.ProtoReflect().Descriptor().FullName(), err)
	}
	// protojson's spacing is deliberately unstable; settle it.
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// status is one value as the tables show it.
type status struct {
	Key, Descriptor, State, Origin string
	Owner                          string
	Overridden                     []string
	LastOp, Error                  string
	Seq                            uint64
	Base                           string
	Derived                        []string
	// Waits are the unmet dependencies of a PENDING value.
	Waits []dep
	// Why is why_pending as a tree.
	Why *why
	// Drift is how the value drifted (DRIFTED or MISSING).
	Drift *drift
}

// drift is a value's drift as the value page shows it.
type drift struct {
	Missing      bool
	Policy       string
	Diff         []*apiv1.FieldDiff
	Repairs      int32
	BackoffUntil string
	Noticed      string
}

func driftOf(d *apiv1.Drift) *drift {
	if d == nil {
		return nil
	}
	out := &drift{Missing: d.GetMissing(), Policy: d.GetPolicy(), Diff: d.GetDiff(), Repairs: d.GetRepairs()}
	if t := d.GetBackoffUntil(); t != nil {
		out.BackoffUntil = t.AsTime().Format(time.RFC3339)
	}
	if t := d.GetNoticed(); t != nil {
		out.Noticed = t.AsTime().Format(time.RFC3339)
	}
	return out
}

func statusOf(st *apiv1.ValueStatus) status {
	out := status{Key: st.GetKey(), Descriptor: st.GetDescriptor_(), State: st.GetState(), Origin: st.GetOrigin(),
		Owner: st.GetOwner(), Overridden: st.GetOverridden(), LastOp: st.GetLastOp(), Error: st.GetError(),
		Seq: st.GetSeq(), Base: st.GetBase(), Derived: st.GetDerived()}
	if out.LastOp == scheduler.OpKind(0).String() {
		out.LastOp = ""
	}
	out.Drift = driftOf(st.GetDrift())
	if lines := st.GetWhyPending(); len(lines) > 0 {
		out.Why = parseWhy(out.Key, lines)
		for _, u := range out.Why.Unmet {
			out.Waits = append(out.Waits, u.dep)
		}
	}
	return out
}

// stateCount is the number of values in one state, with the link to them.
type stateCount struct {
	State string
	N     int
	Link  string
}

// attention are the states an operator looks at first.
var attention = []string{"FAILED", "RETRYING", "INVALID", "MISSING", "DRIFTED", "PENDING", "UNIMPLEMENTED"}

type overviewData struct {
	page
	Total     int
	Counts    []stateCount
	Ready     bool
	Detail    string
	Attention []status
	More      int
	Recent    []record
}

// maxAttention bounds the values the overview lists.
const maxAttention = 20

// statuses calls Status for the values under prefix.
func (h *handler) statuses(rq *request, prefix string) ([]*apiv1.ValueStatus, error) {
	resp, err := h.svc.Status(rq.r.Context(), call(rq, &apiv1.StatusRequest{Prefix: prefix}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetStatuses(), nil
}

func (h *handler) overview(rq *request) (string, any, error) {
	if _, err := args(rq.r); err != nil {
		return "", nil, err
	}
	ctx := rq.r.Context()
	d := overviewData{page: h.newPage(rq, "Overview", "overview", "v1/stats")}
	sts, err := h.statuses(rq, "")
	if err != nil {
		return "", nil, err
	}
	d.Total = len(sts)
	d.Counts = countStates(sts, "")
	for _, st := range sts {
		if !slices.Contains(attention, st.GetState()) {
			continue
		}
		if len(d.Attention) == maxAttention {
			d.More++
			continue
		}
		d.Attention = append(d.Attention, statusOf(st))
	}
	ready, err := h.svc.Readiness(ctx, call(rq, &apiv1.ReadinessRequest{}))
	if err != nil {
		return "", nil, err
	}
	d.Ready = ready.Msg.GetReady()
	if len(ready.Msg.GetSources()) > 0 {
		if b, err := (protojson.MarshalOptions{Multiline: true, Indent: "  "}).Marshal(ready.Msg); err == nil {
			var out bytes.Buffer
			if json.Indent(&out, b, "", "  ") == nil {
				b = out.Bytes()
			}
			d.Detail = string(b)
		}
	}
	hist, err := h.records(rq)
	if err != nil {
		return "", nil, err
	}
	for i := len(hist) - 1; i >= 0 && len(d.Recent) < 5; i-- {
		d.Recent = append(d.Recent, recordOf(hist[i], false))
	}
	return "overview", d, nil
}

// countStates counts values by state, each with the link to the values
// page filtered to it (and to prefix).
func countStates(sts []*apiv1.ValueStatus, prefix string) []stateCount {
	n := map[string]int{}
	for _, st := range sts {
		n[st.GetState()]++
	}
	var out []stateCount
	for _, s := range stateNames() {
		if n[s] > 0 {
			out = append(out, stateCount{State: s, N: n[s], Link: "values" + query("prefix", prefix, "state", s)})
		}
	}
	return out
}

type valuesData struct {
	page
	Prefix, State string
	States        []string
	Counts        []stateCount
	Rows          []status
	// Within is the number of values under the prefix, all states;
	// Matching those that pass the filter (more than Rows when cut).
	Within, Matching int
}

// maxRows bounds the values page's table: past it, the filters narrow.
const maxRows = 1000

func (h *handler) values(rq *request) (string, any, error) {
	q, err := args(rq.r, "prefix", "state")
	if err != nil {
		return "", nil, err
	}
	d := valuesData{Prefix: q["prefix"], State: q["state"], States: stateNames()}
	if d.State != "" && !slices.Contains(d.States, d.State) {
		return "", nil, badArg("state", "%q is not a state (%s)", d.State, strings.Join(d.States, ", "))
	}
	title := "Values"
	if d.Prefix != "" {
		title = "Values under " + d.Prefix
	}
	d.page = h.newPage(rq, title, "values", "v1/status", "prefix", d.Prefix)
	d.LivePrefix = d.Prefix
	sts, err := h.statuses(rq, d.Prefix)
	if err != nil {
		return "", nil, err
	}
	d.Within = len(sts)
	d.Counts = countStates(sts, d.Prefix)
	for _, st := range sts {
		if d.State != "" && st.GetState() != d.State {
			continue
		}
		d.Matching++
		if len(d.Rows) < maxRows {
			d.Rows = append(d.Rows, statusOf(st))
		}
	}
	return "values", d, nil
}

type valueData struct {
	page
	status
	Value, Applied string
	// SameApplied: what is applied is what is intended.
	SameApplied bool
	Timeline    []entry
	// Earlier is the number of older timeline entries not shown.
	Earlier int
}

// valueTimeline is how many of a value's last changes its page shows.
const valueTimeline = 10

// keyStatus calls Status for one key. A key without a value (NOT_FOUND)
// that has recorded changes is NONEXISTENT, with its timeline; without
// them, the API's NOT_FOUND is the page's.
func (h *handler) keyStatus(rq *request, key string) (*apiv1.ValueStatus, []*apiv1.TimelineEntry, error) {
	if key == "" {
		return nil, nil, badArg("key", "required")
	}
	ctx := rq.r.Context()
	resp, err := h.svc.Status(ctx, call(rq, &apiv1.StatusRequest{Key: key}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		tl, terr := h.svc.Timeline(ctx, call(rq, &apiv1.TimelineRequest{Key: key}))
		if terr != nil || len(tl.Msg.GetEntries()) == 0 {
			return nil, nil, err
		}
		return &apiv1.ValueStatus{Key: key, State: scheduler.NONEXISTENT.String()}, tl.Msg.GetEntries(), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if len(resp.Msg.GetStatuses()) != 1 {
		return nil, nil, fmt.Errorf("the Status of key %q answered %d statuses", key, len(resp.Msg.GetStatuses()))
	}
	tl, err := h.svc.Timeline(ctx, call(rq, &apiv1.TimelineRequest{Key: key}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		return resp.Msg.GetStatuses()[0], nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return resp.Msg.GetStatuses()[0], tl.Msg.GetEntries(), nil
}

func (h *handler) value(rq *request) (string, any, error) {
	q, err := args(rq.r, "key")
	if err != nil {
		return "", nil, err
	}
	st, entries, err := h.keyStatus(rq, q["key"])
	if err != nil {
		return "", nil, err
	}
	d := valueData{status: statusOf(st)}
	d.page = h.newPage(rq, st.GetKey(), "values", "v1/status", "key", st.GetKey())
	d.LivePrefix = st.GetKey()
	d.Value, d.Applied = anyText(st.GetValue()), anyText(st.GetApplied())
	if v, err := unpack(st.GetValue()); err == nil && v != nil {
		if a, err := unpack(st.GetApplied()); err == nil && a != nil {
			d.SameApplied = proto.Equal(v, a)
		}
	}
	if len(entries) > valueTimeline {
		d.Earlier = len(entries) - valueTimeline
		entries = entries[d.Earlier:]
	}
	d.Timeline = entriesOf(entries)
	return "value", d, nil
}

// entry is one change of a value.
type entry struct {
	Seq                            uint64
	Time                           time.Time
	Op, State, Flags, Value, Error string
	// Short is the value on one line, when that is short enough to show
	// in the table (Value is then shown folded).
	Short string
	Deps  []dep
}

// shortValue is the longest value a table shows on one line.
const shortValue = 100

func entriesOf(es []*apiv1.TimelineEntry) []entry {
	out := make([]entry, len(es))
	for i, e := range es {
		out[i] = entry{Seq: e.GetSeq(), Time: timeOf(e.GetTime()), Op: e.GetOp(), State: e.GetState(),
			Flags: strings.Join(e.GetFlags(), " "), Value: anyText(e.GetValue()), Error: e.GetError()}
		var b bytes.Buffer
		if json.Compact(&b, []byte(out[i].Value)) == nil && b.Len() <= shortValue {
			out[i].Short = b.String()
		}
		for _, d := range e.GetDependencies() {
			out[i].Deps = append(out[i].Deps, dep{Label: d.GetLabel(), Key: d.GetKey(), AnyOf: d.GetAnyOf(), Match: d.GetMatch()})
		}
	}
	return out
}

type timelineData struct {
	page
	Key     string
	State   string
	Entries []entry
}

func (h *handler) timeline(rq *request) (string, any, error) {
	q, err := args(rq.r, "key")
	if err != nil {
		return "", nil, err
	}
	st, entries, err := h.keyStatus(rq, q["key"])
	if err != nil {
		return "", nil, err
	}
	d := timelineData{Key: st.GetKey(), State: st.GetState(), Entries: entriesOf(entries)}
	d.page = h.newPage(rq, "Timeline of "+d.Key, "values", "v1/timeline", "key", d.Key)
	return "timeline", d, nil
}
