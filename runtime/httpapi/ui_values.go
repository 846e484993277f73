package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// uiStatus is one value as the tables show it.
type uiStatus struct {
	Key, Descriptor, State, Origin string
	Owner                          string
	Overridden                     []string
	LastOp, Error                  string
	Seq                            uint64
	Base                           string
	Derived                        []string
	// Waits are the unmet dependencies of a PENDING value.
	Waits []uiDep
}

// uiDep is one dependency: a key (linked) or the prefixes of an AnyOf.
type uiDep struct {
	Label string
	Key   string
	AnyOf []string
	Match string
}

func depOf(u scheduler.UnmetDependency) uiDep {
	return uiDep{Label: u.Label, Key: u.Key, AnyOf: u.AnyOf, Match: u.Match}
}

func (u *ui) statusOf(st scheduler.Status) uiStatus {
	out := uiStatus{Key: st.Key, Descriptor: st.Descriptor, State: st.State.String(), Origin: st.Origin.String(),
		Error: errText(st.LastErr), Seq: st.Seq, Base: st.Base, Derived: st.Derived}
	if st.LastOp != 0 {
		out.LastOp = st.LastOp.String()
	}
	for _, d := range st.Unmet {
		out.Waits = append(out.Waits, depOf(d))
	}
	if u.a.cfg.Owners != nil {
		out.Owner, out.Overridden = u.a.cfg.Owners.Owner(st.Key)
	}
	return out
}

// stateNames lists the states the scheduler names, in order.
func stateNames() []string {
	var out []string
	for i := range 256 {
		s := scheduler.State(i)
		if p, ok := scheduler.ParseState(s.String()); ok && p == s {
			out = append(out, s.String())
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
var attention = []scheduler.State{scheduler.FAILED, scheduler.RETRYING, scheduler.INVALID, scheduler.MISSING,
	scheduler.PENDING, scheduler.UNIMPLEMENTED}

type overviewData struct {
	uiPage
	Total     int
	Counts    []stateCount
	Ready     bool
	Detail    string
	Attention []uiStatus
	More      int
	Recent    []uiRecord
}

// maxAttention bounds the values the overview lists.
const maxAttention = 20

func (u *ui) overview(r *http.Request) (string, any, error) {
	if _, err := query(r); err != nil {
		return "", nil, err
	}
	d := overviewData{uiPage: uiPage{Title: "Overview", Nav: "overview", API: apiURL("stats")}, Ready: true}
	sts := u.a.s.Statuses("")
	d.Total = len(sts)
	d.Counts = countStates(sts, "")
	for _, st := range sts {
		if !slices.Contains(attention, st.State) {
			continue
		}
		if len(d.Attention) == maxAttention {
			d.More++
			continue
		}
		d.Attention = append(d.Attention, u.statusOf(st))
	}
	if u.a.cfg.Ready != nil {
		var detail any
		d.Ready, detail = u.a.cfg.Ready()
		if detail != nil {
			// As /readyz writes it.
			if b, err := json.MarshalIndent(readyDetail(detail), "", "  "); err == nil {
				d.Detail = string(b)
			} else {
				d.Detail = fmt.Sprint(detail)
			}
		}
	}
	hist := u.a.s.History()
	for i := len(hist) - 1; i >= 0 && len(d.Recent) < 5; i-- {
		d.Recent = append(d.Recent, recordOfUI(hist[i]))
	}
	return "overview", d, nil
}

// countStates counts values by state, each with the link to the values
// page filtered to it (and to prefix).
func countStates(sts []scheduler.Status, prefix string) []stateCount {
	n := map[string]int{}
	for _, st := range sts {
		n[st.State.String()]++
	}
	var out []stateCount
	for _, s := range stateNames() {
		if n[s] > 0 {
			out = append(out, stateCount{State: s, N: n[s], Link: "values" + uiQuery("prefix", prefix, "state", s)})
		}
	}
	return out
}

type valuesData struct {
	uiPage
	Prefix, State string
	States        []string
	Counts        []stateCount
	Rows          []uiStatus
	// Within is the number of values under the prefix, all states;
	// Matching those that pass the filter (more than Rows when cut).
	Within, Matching int
}

// maxRows bounds the values page's table: past it, the filters narrow.
const maxRows = 1000

func (u *ui) values(r *http.Request) (string, any, error) {
	q, err := query(r, "prefix", "state")
	if err != nil {
		return "", nil, err
	}
	d := valuesData{Prefix: q["prefix"], State: q["state"], States: stateNames()}
	var want scheduler.State
	if d.State != "" {
		s, ok := scheduler.ParseState(d.State)
		if !ok {
			return "", nil, badArg("state", "%q is not a state (%s)", d.State, strings.Join(d.States, ", "))
		}
		want = s
	}
	d.uiPage = uiPage{Title: "Values", Nav: "values", API: apiURL("status", "prefix", d.Prefix)}
	if d.Prefix != "" {
		d.Title = "Values under " + d.Prefix
	}
	sts := u.a.s.Statuses(d.Prefix)
	d.Within = len(sts)
	d.Counts = countStates(sts, d.Prefix)
	for _, st := range sts {
		if d.State != "" && st.State != want {
			continue
		}
		d.Matching++
		if len(d.Rows) < maxRows {
			d.Rows = append(d.Rows, u.statusOf(st))
		}
	}
	return "values", d, nil
}

// uiWhy is why a value is PENDING, down to the roots of the chain.
type uiWhy struct {
	Key, State string
	Cycle      []string
	Unmet      []uiWhyDep
}

type uiWhyDep struct {
	uiDep
	// State is the target key's state (plain dependencies).
	State                string
	Intended, Providable bool
	Cause                *uiWhy
}

func whyOf(r *scheduler.PendingReason) *uiWhy {
	if r == nil {
		return nil
	}
	out := &uiWhy{Key: r.Key, State: r.State.String(), Cycle: r.Cycle}
	for _, d := range r.Unmet {
		w := uiWhyDep{uiDep: depOf(d.UnmetDependency), Intended: d.Intended, Providable: d.Providable, Cause: whyOf(d.Cause)}
		if d.Key != "" {
			w.State = d.State.String()
		}
		out.Unmet = append(out.Unmet, w)
	}
	return out
}

type valueData struct {
	uiPage
	uiStatus
	Value, Applied string
	// SameApplied: what is applied is what is intended.
	SameApplied bool
	Metadata    string
	Details     []string
	Why         *uiWhy
	Timeline    []uiEntry
	// Earlier is the number of older timeline entries not shown.
	Earlier int
}

// valueTimeline is how many of a value's last changes its page shows.
const valueTimeline = 10

// knownKey returns the status of key, or a 404 naming the argument when
// the scheduler has no value under it and no descriptor handles it.
func (u *ui) knownKey(arg, key string) (scheduler.Status, error) {
	if key == "" {
		return scheduler.Status{}, badArg(arg, "required")
	}
	st := u.a.s.Status(key)
	if st.State == scheduler.NONEXISTENT && st.Descriptor == "" {
		if _, ok := u.a.s.DescriptorForKey(key); !ok && len(u.a.s.Timeline(key)) == 0 {
			return st, notFound(arg, "key %q: no value, no recorded change, and no descriptor handles it", key)
		}
	}
	return st, nil
}

func (u *ui) value(r *http.Request) (string, any, error) {
	q, err := query(r, "key")
	if err != nil {
		return "", nil, err
	}
	st, err := u.knownKey("key", q["key"])
	if err != nil {
		return "", nil, err
	}
	d := valueData{uiStatus: u.statusOf(st), Details: st.Details}
	d.uiPage = uiPage{Title: st.Key, Nav: "values", API: apiURL("status", "key", st.Key)}
	d.Value = uiValueText(st.Value)
	d.Applied = uiValueText(st.Applied)
	d.SameApplied = st.Applied != nil && st.Value != nil && proto.Equal(st.Applied, st.Value)
	if st.Metadata != nil {
		d.Metadata = fmt.Sprintf("%+v", st.Metadata)
	}
	if why, ok := u.a.s.WhyPending(st.Key); ok {
		d.Why = whyOf(why)
	}
	entries := u.a.s.Timeline(st.Key)
	if len(entries) > valueTimeline {
		d.Earlier = len(entries) - valueTimeline
		entries = entries[d.Earlier:]
	}
	d.Timeline = entriesOf(entries)
	return "value", d, nil
}

// uiEntry is one change of a value.
type uiEntry struct {
	scheduler.TimelineEntry
	Op, State, Flags, Value, Error string
	// Short is the value on one line, when that is short enough to show
	// in the table (Value is then shown folded).
	Short string
	Deps  []uiDep
}

// shortValue is the longest value a table shows on one line.
const shortValue = 100

func entriesOf(es []scheduler.TimelineEntry) []uiEntry {
	out := make([]uiEntry, len(es))
	for i, e := range es {
		out[i] = uiEntry{TimelineEntry: e, Op: e.Op.String(), State: e.State.String(), Flags: e.Flags.String(),
			Value: uiValueText(e.Value), Error: errText(e.Err)}
		var b bytes.Buffer
		if json.Compact(&b, []byte(out[i].Value)) == nil && b.Len() <= shortValue {
			out[i].Short = b.String()
		}
		for _, dep := range e.Dependencies {
			ud := uiDep{Label: dep.Label, Key: dep.Key}
			if dep.IsAnyOf() {
				ud.AnyOf, ud.Match = dep.AnyOf.Prefixes, dep.AnyOf.Describe
			}
			out[i].Deps = append(out[i].Deps, ud)
		}
	}
	return out
}

type timelineData struct {
	uiPage
	Key     string
	State   string
	Entries []uiEntry
}

func (u *ui) timeline(r *http.Request) (string, any, error) {
	q, err := query(r, "key")
	if err != nil {
		return "", nil, err
	}
	st, err := u.knownKey("key", q["key"])
	if err != nil {
		return "", nil, err
	}
	d := timelineData{Key: st.Key, State: st.State.String(), Entries: entriesOf(u.a.s.Timeline(st.Key))}
	if d.Key == "" {
		d.Key = q["key"]
	}
	d.uiPage = uiPage{Title: "Timeline of " + d.Key, Nav: "values", API: apiURL("timeline", "key", d.Key)}
	return "timeline", d, nil
}
