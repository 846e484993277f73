package httpapi

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// uiRecord is one transaction as the pages show it.
type uiRecord struct {
	scheduler.Record
	KindName string
	Planned  []uiOp
	Executed []uiOp
	// MorePlanned and MoreExecuted count the operations left out of a
	// long list (the history page's; a transaction's page lists all).
	MorePlanned, MoreExecuted int
	Errors                    []string
	Values                    []uiKV
	// AsPlanned: the execution was exactly the plan, with no error.
	AsPlanned bool
}

// uiOp is one planned or executed operation.
type uiOp struct {
	N                           int
	Op, Key, State, Flags       string
	Error                       string
	Called                      bool
	Value, PrevValue            string
	Revert, Retry, Noop, Failed bool
}

// uiKV is one input value of a transaction (Value empty: a delete).
type uiKV struct {
	Key, Value string
	Delete     bool
}

func opsOfUI(ops []scheduler.Op, withValues bool) []uiOp {
	out := make([]uiOp, len(ops))
	for i, o := range ops {
		out[i] = uiOp{N: i + 1, Op: o.Kind.String(), Key: o.Key, State: o.State.String(), Flags: o.Flags.String(),
			Error: errText(o.Err), Called: o.Called, Failed: o.Err != nil,
			Revert: o.Flags&scheduler.FlagRevert != 0, Retry: o.Flags&scheduler.FlagRetry != 0, Noop: o.Flags&scheduler.FlagNoop != 0}
		if withValues {
			out[i].Value, out[i].PrevValue = uiValueText(o.Value), uiValueText(o.PrevValue)
		}
	}
	return out
}

func recordOfUI(rec scheduler.Record) uiRecord {
	return recordWith(rec, false)
}

func recordWith(rec scheduler.Record, withValues bool) uiRecord {
	out := uiRecord{Record: rec, KindName: rec.Kind.String(), Planned: opsOfUI(rec.Planned, withValues),
		Executed: opsOfUI(rec.Executed, withValues), AsPlanned: len(rec.Errors) == 0 && asPlanned(rec.Planned, rec.Executed)}
	for _, e := range rec.Errors {
		out.Errors = append(out.Errors, keyErrText(e))
	}
	if withValues {
		for _, kv := range rec.Values {
			out.Values = append(out.Values, uiKV{Key: kv.Key, Value: uiValueText(kv.Value), Delete: kv.Value == nil})
		}
	}
	return out
}

// asPlanned reports whether the executed operations are exactly the
// plan's.
func asPlanned(plan, done []scheduler.Op) bool {
	if len(plan) != len(done) {
		return false
	}
	for i := range plan {
		p, d := &plan[i], &done[i]
		if p.Key != d.Key || p.Kind != d.Kind || p.Flags != d.Flags || d.Err != nil {
			return false
		}
	}
	return true
}

type historyData struct {
	uiPage
	Records []uiRecord
	Limit   int
	// Older links to the page of the transactions before the last shown,
	// Newer to the page after the first shown ("" when none).
	Older, Newer string
	Retained     int
}

// The history page's default and largest number of transactions.
const (
	historyLimit    = 20
	maxHistoryLimit = apilimits.MaxHistoryPage
	// historyOps bounds the operations listed per transaction.
	historyOps = 50
)

func (u *ui) history(r *http.Request) (string, any, error) {
	q, err := query(r, "before", "limit")
	if err != nil {
		return "", nil, err
	}
	limit := historyLimit
	if s, ok := q["limit"]; ok && s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxHistoryLimit {
			return "", nil, badArg("limit", "%q is not a number of transactions from 1 to %d", s, maxHistoryLimit)
		}
		limit = n
	}
	var before uint64
	if s, ok := q["before"]; ok && s != "" {
		if before, err = parseSeq("before", s); err != nil {
			return "", nil, err
		}
	}
	hist := u.a.s.History()
	d := historyData{Limit: limit, Retained: len(hist)}
	d.uiPage = uiPage{Title: "History", Nav: "history", API: apiURL("history")}
	// Newest first, from the last before the given transaction.
	end := len(hist)
	if before != 0 {
		for end > 0 && hist[end-1].Seq >= before {
			end--
		}
	}
	start := max(0, end-limit)
	for i := end - 1; i >= start; i-- {
		rec := recordOfUI(hist[i])
		if n := len(rec.Planned) - historyOps; n > 0 {
			rec.Planned, rec.MorePlanned = rec.Planned[:historyOps], n
		}
		if n := len(rec.Executed) - historyOps; n > 0 {
			rec.Executed, rec.MoreExecuted = rec.Executed[:historyOps], n
		}
		d.Records = append(d.Records, rec)
	}
	lim := ""
	if limit != historyLimit {
		lim = strconv.Itoa(limit)
	}
	if start > 0 {
		d.Older = "history" + uiQuery("before", strconv.FormatUint(hist[start].Seq, 10), "limit", lim)
	}
	if end < len(hist) {
		if end+limit >= len(hist) {
			d.Newer = "history" + uiQuery("limit", lim)
		} else {
			d.Newer = "history" + uiQuery("before", strconv.FormatUint(hist[end+limit].Seq, 10), "limit", lim)
		}
	}
	return "history", d, nil
}

type txnData struct {
	uiPage
	uiRecord
	Prev, Next uint64
}

// seqArg reads a transaction number and finds it in the history.
func (u *ui) seqArg(q map[string]string) (scheduler.Record, error) {
	s, ok := q["seq"]
	if !ok || s == "" {
		return scheduler.Record{}, badArg("seq", "required")
	}
	seq, err := parseSeq("seq", s)
	if err != nil {
		return scheduler.Record{}, err
	}
	rec, ok := u.a.s.Record(seq)
	if !ok {
		return rec, notFound("seq", "transaction #%d is not in the history", seq)
	}
	return rec, nil
}

func (u *ui) txn(r *http.Request) (string, any, error) {
	q, err := query(r, "seq")
	if err != nil {
		return "", nil, err
	}
	rec, err := u.seqArg(q)
	if err != nil {
		return "", nil, err
	}
	d := txnData{uiRecord: recordWith(rec, true)}
	seq := strconv.FormatUint(rec.Seq, 10)
	d.uiPage = uiPage{Title: "Transaction #" + seq, Nav: "history", API: apiURL("history", "seq", seq)}
	if _, ok := u.a.s.Record(rec.Seq - 1); ok {
		d.Prev = rec.Seq - 1
	}
	if _, ok := u.a.s.Record(rec.Seq + 1); ok {
		d.Next = rec.Seq + 1
	}
	return "txn", d, nil
}

type graphData struct {
	uiPage
	// Seq is the transaction asked for (0: now); Snap the snapshot's.
	Seq      uint64
	Snap     uint64
	Time     string
	SVG      template.HTML
	SVGError string
	Nodes    []uiNode
	Touched  int
	Retained []uint64
}

// uiNode is one value of the graph, for the table under it.
type uiNode struct {
	Key, State, Descriptor string
	Touched, Placeholder   bool
}

func (u *ui) graph(r *http.Request) (string, any, error) {
	q, err := query(r, "seq")
	if err != nil {
		return "", nil, err
	}
	var seq uint64
	if s, ok := q["seq"]; ok && s != "" {
		if seq, err = parseSeq("seq", s); err != nil {
			return "", nil, err
		}
	}
	snap, err := u.a.s.GraphSnapshot(seq)
	if err != nil {
		return "", nil, notFound("seq", "%v", err)
	}
	d := graphData{Seq: seq, Snap: snap.Seq}
	if !snap.Time.IsZero() {
		d.Time = snap.Time.Local().Format("2006-01-02 15:04:05.000")
	}
	title, api := "Graph now", apiURL("graph")
	if seq != 0 {
		title = fmt.Sprintf("Graph as of transaction #%d", seq)
		api = apiURL("graph", "seq", strconv.FormatUint(seq, 10))
	}
	d.uiPage = uiPage{Title: title, Nav: "graph", API: api}
	for _, rec := range u.a.s.History() {
		d.Retained = append(d.Retained, rec.Seq)
	}
	touched := map[string]bool{}
	if seq != 0 {
		for _, k := range snap.Touched {
			touched[k] = true
		}
	}
	for _, n := range snap.Nodes {
		d.Nodes = append(d.Nodes, uiNode{Key: n.Key, State: n.State.String(), Descriptor: n.Descriptor,
			Touched: touched[n.Key], Placeholder: n.Placeholder})
	}
	d.Touched = len(touched)
	opts := graphviz.DefaultOptions()
	opts.Highlight = seq != 0
	svg, err := graphviz.SVG(r.Context(), snap, opts)
	if err != nil {
		d.SVGError = err.Error()
		return "graph", d, nil
	}
	// The SVG goes inline (so that its nodes can be linked and
	// highlighted): without the XML declaration and doctype before it.
	// dot escapes the keys in the text it writes.
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	d.SVG = template.HTML(svg) // dot's output; dot escapes its text (TestUIEscapes injects keys to check)
	return "graph", d, nil
}
