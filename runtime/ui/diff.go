package ui

import (
	"fmt"
	"slices"
	"strings"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// maxSearchResults bounds the search page's results.
const maxSearchResults = 500

// hit is one value the search found.
type hit struct {
	Key, State string
	// InKey, InValue: where the text was found; Snippet is the value's
	// line that holds it.
	InKey, InValue bool
	Snippet        string
}

type searchData struct {
	page
	Query    string
	Hits     []hit
	Matching int
	Searched int
}

// search finds the values whose key or value (its JSON text) holds the
// query, ignoring case.
func (h *handler) search(rq *request) (string, any, error) {
	q, err := args(rq.r, "q")
	if err != nil {
		return "", nil, err
	}
	d := searchData{Query: q["q"]}
	d.page = h.newPage(rq, "Search", "search", "v1/status")
	if d.Query != "" {
		d.Title = "Search: " + d.Query
	}
	if strings.TrimSpace(d.Query) == "" {
		return "search", d, nil
	}
	sts, err := h.statuses(rq, "")
	if err != nil {
		return "", nil, err
	}
	d.Searched = len(sts)
	needle := strings.ToLower(d.Query)
	for _, st := range sts {
		hk := hit{Key: st.GetKey(), State: st.GetState()}
		hk.InKey = strings.Contains(strings.ToLower(hk.Key), needle)
		for _, line := range strings.Split(anyText(st.GetValue()), "\n") {
			if strings.Contains(strings.ToLower(line), needle) {
				hk.InValue, hk.Snippet = true, strings.TrimSpace(line)
				break
			}
		}
		if !hk.InKey && !hk.InValue {
			continue
		}
		d.Matching++
		if len(d.Hits) < maxSearchResults {
			d.Hits = append(d.Hits, hk)
		}
	}
	return "search", d, nil
}

// diffLine is one line of a diff: Op is " " (in both), "-" (only in the
// old) or "+" (only in the new).
type diffLine struct {
	Op, Text string
}

// maxDiffCells bounds the work of one line diff (old lines × new lines);
// beyond, the diff is the old text removed and the new added.
const maxDiffCells = 4 << 20

// lineDiff is the diff of two texts, line by line (a longest common
// subsequence).
func lineDiff(a, b string) []diffLine {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	x, y := split(a), split(b)
	if len(x)*len(y) > maxDiffCells {
		var out []diffLine
		for _, l := range x {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j]: the common subsequence's length of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{" ", x[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", x[i]})
			i++
		default:
			out = append(out, diffLine{"+", y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, diffLine{"-", x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, diffLine{"+", y[j]})
	}
	return out
}

// change is one key that differs between the two sides of a diff.
type change struct {
	Key              string
	Kind             string // added, removed, changed
	OldState, State  string
	Lines            []diffLine
	OldText, NewText bool
}

type diffData struct {
	page
	// Between two transactions: A and B; of one key: Key.
	A, B     uint64
	Key      string
	Retained []uint64
	Changes  []change
	Same     int
	// Of a key: its three values' texts and descriptor.
	Intended, Applied, Southbound string
	InSouthbound                  bool
	Descriptor                    string
	SouthboundError               string
}

// maxDiffChanges bounds the keys a diff of two transactions lists.
const maxDiffChanges = 1000

// diff compares the values of two transactions (?a=N&b=M: the graph
// after each, from GraphSnapshot), or the intended and the southbound
// value of a key (?key=K: Status and Dump's southbound view).
func (h *handler) diff(rq *request) (string, any, error) {
	q, err := args(rq.r, "a", "b", "key")
	if err != nil {
		return "", nil, err
	}
	d := diffData{Key: q["key"]}
	if d.Key != "" {
		if q["a"] != "" || q["b"] != "" {
			return "", nil, badArg("key", "give key, or a and b, not both")
		}
		return h.keyDiff(rq, &d)
	}
	hist, err := h.records(rq)
	if err != nil {
		return "", nil, err
	}
	for _, rec := range hist {
		d.Retained = append(d.Retained, rec.GetSeq())
	}
	d.page = h.newPage(rq, "Diff", "history", "")
	if q["a"] == "" && q["b"] == "" {
		// The last transaction against the one before it.
		if n := len(d.Retained); n >= 2 {
			d.A, d.B = d.Retained[n-2], d.Retained[n-1]
		} else {
			return "diff", d, nil
		}
	} else {
		for _, name := range []string{"a", "b"} {
			if q[name] == "" {
				return "", nil, badArg(name, "required with %s", map[string]string{"a": "b", "b": "a"}[name])
			}
		}
		if d.A, err = parseSeq("a", q["a"]); err != nil {
			return "", nil, err
		}
		if d.B, err = parseSeq("b", q["b"]); err != nil {
			return "", nil, err
		}
	}
	d.Title = fmt.Sprintf("Diff of transaction #%d → #%d", d.A, d.B)
	type val struct{ text, state string }
	read := func(arg string, seq uint64) (map[string]val, error) {
		resp, err := h.svc.GraphSnapshot(rq.r.Context(), call(rq, &apiv1.GraphSnapshotRequest{Seq: seq}))
		if err != nil {
			pe := errorOf(err)
			pe.arg = arg
			return nil, pe
		}
		out := map[string]val{}
		for _, n := range resp.Msg.GetNodes() {
			if !n.GetPlaceholder() {
				out[n.GetKey()] = val{anyText(n.GetValue()), n.GetState()}
			}
		}
		return out, nil
	}
	old, err := read("a", d.A)
	if err != nil {
		return "", nil, err
	}
	cur, err := read("b", d.B)
	if err != nil {
		return "", nil, err
	}
	keys := make([]string, 0, len(old)+len(cur))
	for k := range old {
		keys = append(keys, k)
	}
	for k := range cur {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o, inOld := old[k]
		n, inNew := cur[k]
		c := change{Key: k, OldState: o.state, State: n.state}
		switch {
		case !inOld:
			c.Kind = "added"
		case !inNew:
			c.Kind = "removed"
		case o.text != n.text || o.state != n.state:
			c.Kind = "changed"
		default:
			d.Same++
			continue
		}
		if len(d.Changes) == maxDiffChanges {
			continue
		}
		c.Lines = lineDiff(o.text, n.text)
		d.Changes = append(d.Changes, c)
	}
	return "diff", d, nil
}

// keyDiff compares what is intended for a key with what the southbound
// holds (and what the scheduler believes applied).
func (h *handler) keyDiff(rq *request, d *diffData) (string, any, error) {
	st, _, err := h.keyStatus(rq, d.Key)
	if err != nil {
		return "", nil, err
	}
	d.page = h.newPage(rq, "Intended and southbound: "+d.Key, "values", "v1/dump", "view", "VIEW_SOUTHBOUND", "descriptor", st.GetDescriptor_(), "prefix", d.Key)
	d.Descriptor = st.GetDescriptor_()
	d.Intended, d.Applied = anyText(st.GetValue()), anyText(st.GetApplied())
	if d.Descriptor == "" {
		d.SouthboundError = "no descriptor handles this key: the southbound is not read for it"
	} else {
		resp, err := h.svc.Dump(rq.r.Context(), call(rq, &apiv1.DumpRequest{View: apiv1.View_VIEW_SOUTHBOUND, Descriptor_: d.Descriptor, Prefix: d.Key}))
		if err != nil {
			d.SouthboundError = errorOf(err).msg
		} else {
			for _, it := range resp.Msg.GetItems() {
				if it.GetKey() == d.Key {
					d.Southbound, d.InSouthbound = anyText(it.GetValue()), true
					break
				}
			}
		}
	}
	c := change{Key: d.Key, Kind: "changed", State: st.GetState()}
	c.Lines = lineDiff(d.Intended, d.Southbound)
	if d.Intended == d.Southbound {
		c.Kind = "same"
	}
	d.Changes = []change{c}
	return "diff", *d, nil
}
