package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// record is one transaction as the pages show it.
type record struct {
	Seq         uint64
	KindName    string
	Description string
	Reverted    bool
	Batches     uint32
	BatchedOps  uint32
	Start, End  time.Time
	// NPlanned and NExecuted count the operations; Planned and Executed
	// list them (the history page leaves out those beyond historyOps:
	// MorePlanned and MoreExecuted).
	NPlanned, NExecuted       int
	Planned, Executed         []op
	MorePlanned, MoreExecuted int
	Errors                    []string
	Values                    []kvText
	// AsPlanned: the execution was exactly the plan, with no error.
	AsPlanned bool
}

// op is one planned or executed operation.
type op struct {
	N                           int
	Op, Key, State, Flags       string
	Error                       string
	Called                      bool
	Value, PrevValue            string
	Revert, Retry, Noop, Failed bool
}

// kvText is one input value of a transaction (Delete: a delete).
type kvText struct {
	Key, Value string
	Delete     bool
}

func opsOf(ops []*apiv1.Op, withValues bool) []op {
	out := make([]op, len(ops))
	for i, o := range ops {
		out[i] = op{N: i + 1, Op: o.GetKind(), Key: o.GetKey(), State: o.GetState(), Flags: strings.Join(o.GetFlags(), " "),
			Error: o.GetError(), Called: o.GetCalled(), Failed: o.GetError() != "",
			Revert: slices.Contains(o.GetFlags(), "REVERT"), Retry: slices.Contains(o.GetFlags(), "RETRY"), Noop: slices.Contains(o.GetFlags(), "NOOP")}
		if withValues {
			out[i].Value, out[i].PrevValue = anyText(o.GetValue()), anyText(o.GetPrevValue())
		}
	}
	return out
}

func recordOf(rec *apiv1.Record, withValues bool) record {
	out := record{Seq: rec.GetSeq(), KindName: rec.GetKind(), Description: rec.GetDescription(),
		Reverted: rec.GetReverted(), Batches: rec.GetBatches(), BatchedOps: rec.GetBatchedOps(),
		Start: timeOf(rec.GetStart()), End: timeOf(rec.GetEnd()),
		NPlanned: len(rec.GetPlanned()), NExecuted: len(rec.GetExecuted()),
		Planned: opsOf(rec.GetPlanned(), withValues), Executed: opsOf(rec.GetExecuted(), withValues),
		Errors:    rec.GetErrors(),
		AsPlanned: len(rec.GetErrors()) == 0 && asPlanned(rec.GetPlanned(), rec.GetExecuted())}
	if withValues {
		for _, v := range rec.GetValues() {
			kv := kvText{Key: v.GetKey(), Delete: v.GetValue() == nil}
			switch x := v.GetValue().(type) {
			case *apiv1.Value_Any:
				kv.Value = anyText(x.Any)
			case *apiv1.Value_Json:
				kv.Value = x.Json
			}
			out.Values = append(out.Values, kv)
		}
	}
	return out
}

// asPlanned reports whether the executed operations are exactly the plan's.
func asPlanned(plan, done []*apiv1.Op) bool {
	if len(plan) != len(done) {
		return false
	}
	for i := range plan {
		p, d := plan[i], done[i]
		if p.GetKey() != d.GetKey() || p.GetKind() != d.GetKind() || !slices.Equal(p.GetFlags(), d.GetFlags()) || d.GetError() != "" {
			return false
		}
	}
	return true
}

// records calls History for every record the agent keeps, oldest first.
func (h *handler) records(rq *request) ([]*apiv1.Record, error) {
	resp, err := h.svc.History(rq.r.Context(), call(rq, &apiv1.HistoryRequest{}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetRecords(), nil
}

type historyData struct {
	page
	Records []record
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

func parseSeq(arg, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, badArg(arg, "%q is not a transaction number (1, 2, ...)", s)
	}
	return n, nil
}

func (h *handler) history(rq *request) (string, any, error) {
	q, err := args(rq.r, "before", "limit")
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
	hist, err := h.records(rq)
	if err != nil {
		return "", nil, err
	}
	d := historyData{Limit: limit, Retained: len(hist), page: h.newPage(rq, "History", "history", "v1/history")}
	// Newest first, from the last before the given transaction.
	end := len(hist)
	if before != 0 {
		for end > 0 && hist[end-1].GetSeq() >= before {
			end--
		}
	}
	start := max(0, end-limit)
	for i := end - 1; i >= start; i-- {
		rec := recordOf(hist[i], false)
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
		d.Older = "history" + query("before", strconv.FormatUint(hist[start].GetSeq(), 10), "limit", lim)
	}
	if end < len(hist) {
		if end+limit >= len(hist) {
			d.Newer = "history" + query("limit", lim)
		} else {
			d.Newer = "history" + query("before", strconv.FormatUint(hist[end+limit].GetSeq(), 10), "limit", lim)
		}
	}
	return "history", d, nil
}

type txnData struct {
	page
	record
	Prev, Next uint64
}

// recordAt calls History for transaction seq (nil, nil: not kept).
func (h *handler) recordAt(rq *request, seq uint64) (*apiv1.Record, error) {
	resp, err := h.svc.History(rq.r.Context(), call(rq, &apiv1.HistoryRequest{Seq: seq}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(resp.Msg.GetRecords()) == 0 {
		return nil, nil
	}
	return resp.Msg.GetRecords()[0], nil
}

func (h *handler) txn(rq *request) (string, any, error) {
	q, err := args(rq.r, "seq")
	if err != nil {
		return "", nil, err
	}
	s, ok := q["seq"]
	if !ok || s == "" {
		return "", nil, badArg("seq", "required")
	}
	seq, err := parseSeq("seq", s)
	if err != nil {
		return "", nil, err
	}
	// The API's own answer for a transaction it does not keep: NOT_FOUND
	// naming seq.
	resp, err := h.svc.History(rq.r.Context(), call(rq, &apiv1.HistoryRequest{Seq: seq}))
	if err != nil {
		return "", nil, err
	}
	if len(resp.Msg.GetRecords()) != 1 {
		return "", nil, fmt.Errorf("the History of transaction %d answered %d records", seq, len(resp.Msg.GetRecords()))
	}
	d := txnData{record: recordOf(resp.Msg.GetRecords()[0], true)}
	d.page = h.newPage(rq, "Transaction #"+s, "history", "v1/history", "seq", s)
	if seq > 1 {
		prev, err := h.recordAt(rq, seq-1)
		if err != nil {
			return "", nil, err
		}
		if prev != nil {
			d.Prev = seq - 1
		}
	}
	next, err := h.recordAt(rq, seq+1)
	if err != nil {
		return "", nil, err
	}
	if next != nil {
		d.Next = seq + 1
	}
	return "txn", d, nil
}

type graphData struct {
	page
	// Seq is the transaction asked for (0: now); Snap the snapshot's.
	Seq      uint64
	Snap     uint64
	Time     string
	SVG      template.HTML
	SVGError string
	Nodes    []node
	Touched  int
	Retained []uint64
	// The filters (the API's GraphFilter) and their choices; Refused
	// is why the graph is not drawn (more nodes than MaxNodes).
	Model, State, Key string
	Depth             uint32
	Models, States    []string
	MaxNodes          int
	Refused           string
}

// node is one value of the graph, for the table under it.
type node struct {
	Key, State, Descriptor string
	Touched, Placeholder   bool
}

func (h *handler) graph(rq *request) (string, any, error) {
	q, err := args(rq.r, "seq", "model", "state", "key", "depth")
	if err != nil {
		return "", nil, err
	}
	var seq uint64
	if s, ok := q["seq"]; ok && s != "" {
		if seq, err = parseSeq("seq", s); err != nil {
			return "", nil, err
		}
	}
	d := graphData{Seq: seq, Model: q["model"], State: q["state"], Key: q["key"], States: stateNames(), MaxNodes: h.maxGraphNodes}
	if s := q["depth"]; s != "" {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return "", nil, badArg("depth", "%q is not a depth (a number, 1 to 100)", s)
		}
		d.Depth = uint32(n)
	}
	filter := &apiv1.GraphFilter{Model: d.Model, State: d.State, Key: d.Key, Depth: d.Depth, MaxNodes: uint32(h.maxGraphNodes)}
	if d.Key == "" {
		// The form sends its depth; it is the key's.
		filter.Depth = 0
	}
	ctx := rq.r.Context()
	models, err := h.svc.Models(ctx, call(rq, &apiv1.ModelsRequest{}))
	if err != nil {
		return "", nil, err
	}
	for _, m := range models.Msg.GetModels() {
		d.Models = append(d.Models, m.GetDescriptor_())
	}
	snapResp, err := h.svc.GraphSnapshot(ctx, call(rq, &apiv1.GraphSnapshotRequest{Seq: seq, Filter: filter}))
	if connect.CodeOf(err) == connect.CodeFailedPrecondition && errorOf(err).arg == "max_nodes" {
		// Too large to draw: the form, and which filter to use.
		d.page = h.newPage(rq, "Graph", "graph", "")
		d.Refused = errorOf(err).msg
		return "graph", d, nil
	}
	if err != nil {
		pe := errorOf(err)
		// The API names its filter's fields; the page's are the same
		// without "filter.".
		pe.arg = strings.TrimPrefix(pe.arg, "filter.")
		return "", nil, pe
	}
	snap := snapResp.Msg
	d.Snap = snap.GetSeq()
	if t := timeOf(snap.GetTime()); !t.IsZero() {
		d.Time = t.Local().Format("2006-01-02 15:04:05.000")
	}
	if seq == 0 {
		d.page = h.newPage(rq, "Graph now", "graph", "v1/graph-snapshot")
	} else {
		d.page = h.newPage(rq, fmt.Sprintf("Graph as of transaction #%d", seq), "graph", "v1/graph-snapshot", "seq", strconv.FormatUint(seq, 10))
	}
	hist, err := h.records(rq)
	if err != nil {
		return "", nil, err
	}
	for _, rec := range hist {
		d.Retained = append(d.Retained, rec.GetSeq())
	}
	touched := map[string]bool{}
	if seq != 0 {
		for _, k := range snap.GetTouched() {
			touched[k] = true
		}
	}
	for _, n := range snap.GetNodes() {
		d.Nodes = append(d.Nodes, node{Key: n.GetKey(), State: n.GetState(), Descriptor: n.GetDescriptor_(),
			Touched: touched[n.GetKey()], Placeholder: n.GetPlaceholder()})
	}
	d.Touched = len(touched)
	svgResp, err := h.svc.Graph(ctx, call(rq, &apiv1.GraphRequest{Seq: seq, Format: apiv1.GraphFormat_GRAPH_FORMAT_SVG, Filter: filter}))
	if err != nil {
		// Without graphviz on the agent, UNIMPLEMENTED: the page shows
		// the table.
		d.SVGError = errorOf(err).msg
		return "graph", d, nil
	}
	svg := svgResp.Msg.GetData()
	// The SVG goes inline (so that its nodes can be linked and
	// highlighted): without the XML declaration and doctype before it.
	// dot escapes the keys in the text it writes.
	i := bytes.Index(svg, []byte("<svg"))
	if i < 0 || svgResp.Msg.GetContentType() != "image/svg+xml" {
		d.SVGError = fmt.Sprintf("the agent's Graph answered %q, not an SVG", svgResp.Msg.GetContentType())
		return "graph", d, nil
	}
	d.SVG = template.HTML(svg[i:]) // dot's output; dot escapes its text (TestUIEscapes injects keys to check)
	return "graph", d, nil
}
