package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	nbfile "github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

func parseQuery(raw string) (url.Values, error) { return url.ParseQuery(raw) }

// statusJSON is a value's status as the API writes it.
type statusJSON struct {
	Key        string          `json:"key"`
	Descriptor string          `json:"descriptor,omitempty"`
	State      string          `json:"state"`
	Origin     string          `json:"origin"`
	Value      json.RawMessage `json:"value,omitempty"`
	Applied    json.RawMessage `json:"applied,omitempty"`
	Base       string          `json:"base,omitempty"`
	Derived    []string        `json:"derived,omitempty"`
	LastOp     string          `json:"lastOp,omitempty"`
	Error      string          `json:"error,omitempty"`
	// WhyPending lists the unmet dependencies of a PENDING value.
	WhyPending []string `json:"whyPending,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	Overridden []string `json:"overridden,omitempty"`
}

func (a *api) statusOf(st scheduler.Status) statusJSON {
	out := statusJSON{
		Key: st.Key, Descriptor: st.Descriptor, State: st.State.String(), Origin: st.Origin.String(),
		Value: valueJSON(st.Value), Applied: valueJSON(st.Applied), Base: st.Base, Derived: st.Derived,
		Error: errText(st.LastErr),
	}
	if st.LastOp != 0 {
		out.LastOp = st.LastOp.String()
	}
	if st.State == scheduler.PENDING {
		if why, ok := a.s.WhyPending(st.Key); ok {
			for _, u := range why.Unmet {
				out.WhyPending = append(out.WhyPending, fmt.Sprintf("%s (%s)", u.UnmetDependency, u.State))
			}
			if len(why.Cycle) > 0 {
				out.WhyPending = append(out.WhyPending, "cycle: "+strings.Join(why.Cycle, " -> "))
			}
		}
	}
	if a.cfg.Owners != nil {
		out.Owner, out.Overridden = a.cfg.Owners.Owner(st.Key)
	}
	return out
}

func (a *api) status(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "key", "prefix", "descriptor", "format")
	if err != nil {
		return err
	}
	f, err := format(q, "json", "text")
	if err != nil {
		return err
	}
	var sts []scheduler.Status
	given := 0
	for _, p := range []string{"key", "prefix", "descriptor"} {
		if _, ok := q[p]; ok {
			given++
		}
	}
	if given > 1 {
		return badArg("key", "give one of key, prefix and descriptor")
	}
	switch {
	case q["key"] != "":
		if a.unknownKey(q["key"]) {
			return notFound("key", "key %q: no value, and no descriptor handles it", q["key"])
		}
		sts = []scheduler.Status{a.s.Status(q["key"])}
	case q["descriptor"] != "":
		if _, ok := a.s.Descriptor(q["descriptor"]); !ok {
			return notFound("descriptor", "no descriptor %q (GET /models lists them)", q["descriptor"])
		}
		sts = a.s.DescriptorStatuses(q["descriptor"])
	default:
		if _, ok := q["key"]; ok {
			return badArg("key", "empty")
		}
		sts = a.s.Statuses(q["prefix"])
	}
	out := make([]statusJSON, len(sts))
	for i, st := range sts {
		out[i] = a.statusOf(st)
	}
	if f == "text" {
		var b bytes.Buffer
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, st := range out {
			line := st.Key + " " + st.State
			extra := []string{}
			if st.Owner != "" {
				extra = append(extra, "owner "+st.Owner)
			}
			if len(st.WhyPending) > 0 {
				extra = append(extra, "waits for "+strings.Join(st.WhyPending, ", "))
			}
			if st.Error != "" {
				extra = append(extra, "error: "+st.Error)
			}
			fmt.Fprintf(tw, "%s\t%s\n", line, strings.Join(extra, "; "))
		}
		tw.Flush()
		return writeText(w, b.String())
	}
	if q["key"] != "" {
		return writeJSON(w, http.StatusOK, out[0])
	}
	return writeJSON(w, http.StatusOK, out)
}

// unknownKey reports whether key has no value and no descriptor handles
// it: /status and /timeline answer 404 naming it.
func (a *api) unknownKey(key string) bool {
	st := a.s.Status(key)
	if st.State != scheduler.NONEXISTENT || st.Descriptor != "" {
		return false
	}
	_, ok := a.s.DescriptorForKey(key)
	return !ok
}

// opJSON is an operation as the API writes it.
type opJSON struct {
	Key       string          `json:"key"`
	Op        string          `json:"op"`
	State     string          `json:"state"`
	Flags     string          `json:"flags,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	PrevValue json.RawMessage `json:"prevValue,omitempty"`
	Error     string          `json:"error,omitempty"`
	Called    bool            `json:"called"`
}

func opsJSON(ops []scheduler.Op) []opJSON {
	out := make([]opJSON, len(ops))
	for i, o := range ops {
		out[i] = opJSON{Key: o.Key, Op: o.Kind.String(), State: o.State.String(), Flags: o.Flags.String(),
			Value: valueJSON(o.Value), PrevValue: valueJSON(o.PrevValue), Error: errText(o.Err), Called: o.Called}
	}
	return out
}

type recordJSON struct {
	Seq         uint64            `json:"seq"`
	Kind        string            `json:"kind"`
	Description string            `json:"description,omitempty"`
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end"`
	Values      []json.RawMessage `json:"values,omitempty"`
	Planned     []opJSON          `json:"planned,omitempty"`
	Executed    []opJSON          `json:"executed"`
	Errors      []string          `json:"errors,omitempty"`
	Reverted    bool              `json:"reverted,omitempty"`
}

func recordOf(rec scheduler.Record) recordJSON {
	out := recordJSON{Seq: rec.Seq, Kind: rec.Kind.String(), Description: rec.Description, Start: rec.Start, End: rec.End,
		Planned: opsJSON(rec.Planned), Executed: opsJSON(rec.Executed), Reverted: rec.Reverted}
	for _, kv := range rec.Values {
		b, _ := json.Marshal(struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		}{kv.Key, valueJSON(kv.Value)})
		out.Values = append(out.Values, b)
	}
	for _, e := range rec.Errors {
		out.Errors = append(out.Errors, keyErrText(e))
	}
	return out
}

func recordText(rec scheduler.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", rec.Seq, rec.Kind)
	if rec.Description != "" {
		fmt.Fprintf(&b, " (%s)", rec.Description)
	}
	fmt.Fprintf(&b, " %s, took %v", rec.Start.Format(time.RFC3339), rec.End.Sub(rec.Start).Round(time.Microsecond))
	if rec.Reverted {
		b.WriteString(", reverted")
	}
	b.WriteString("\n")
	if len(rec.Executed) == 0 {
		b.WriteString("  (no operation)\n")
	} else {
		b.WriteString(scheduler.FormatOps(rec.Executed))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	for _, e := range rec.Errors {
		fmt.Fprintf(&b, "  error: %s\n", keyErrText(e))
	}
	return b.String()
}

func (a *api) history(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "seq", "since", "until", "format")
	if err != nil {
		return err
	}
	f, err := format(q, "json", "text")
	if err != nil {
		return err
	}
	var recs []scheduler.Record
	if s, ok := q["seq"]; ok {
		if _, ok := q["since"]; ok {
			return badArg("since", "give seq or a time window, not both")
		}
		seq, err := parseSeq("seq", s)
		if err != nil {
			return err
		}
		rec, ok := a.s.Record(seq)
		if !ok {
			return notFound("seq", "transaction #%d is not in the history", seq)
		}
		recs = []scheduler.Record{rec}
	} else {
		now := time.Now()
		since, until := time.Time{}, now.Add(time.Hour)
		if s, ok := q["since"]; ok {
			if since, err = parseTime("since", s, now); err != nil {
				return err
			}
		}
		if s, ok := q["until"]; ok {
			if until, err = parseTime("until", s, now); err != nil {
				return err
			}
		}
		if until.Before(since) {
			return badArg("until", "before since")
		}
		for _, rec := range a.s.History() {
			if !rec.Start.Before(since) && !rec.Start.After(until) {
				recs = append(recs, rec)
			}
		}
	}
	if f == "text" {
		var b strings.Builder
		for _, rec := range recs {
			b.WriteString(recordText(rec))
		}
		return writeText(w, b.String())
	}
	out := make([]recordJSON, len(recs))
	for i, rec := range recs {
		out[i] = recordOf(rec)
	}
	if _, ok := q["seq"]; ok {
		return writeJSON(w, http.StatusOK, out[0])
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *api) timeline(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "key", "at", "format")
	if err != nil {
		return err
	}
	f, err := format(q, "json", "text")
	if err != nil {
		return err
	}
	key := q["key"]
	if key == "" {
		return badArg("key", "required")
	}
	entries := a.s.Timeline(key)
	if len(entries) == 0 && a.unknownKey(key) {
		return notFound("key", "key %q: no value, and no descriptor handles it", key)
	}
	if s, ok := q["at"]; ok {
		// The value's changes up to a time: the last is its state then.
		at, err := parseTime("at", s, time.Now())
		if err != nil {
			return err
		}
		n := 0
		for n < len(entries) && !entries[n].Time.After(at) {
			n++
		}
		entries = entries[:n]
	}
	if f == "text" {
		var b strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&b, "#%d %s %s -> %s", e.Seq, e.Time.Format(time.RFC3339), e.Op, e.State)
			if fl := e.Flags.String(); fl != "" {
				fmt.Fprintf(&b, " [%s]", fl)
			}
			b.WriteString("\n")
		}
		return writeText(w, b.String())
	}
	type entryJSON struct {
		Seq   uint64          `json:"seq"`
		Time  time.Time       `json:"time"`
		Op    string          `json:"op"`
		State string          `json:"state"`
		Flags string          `json:"flags,omitempty"`
		Value json.RawMessage `json:"value,omitempty"`
	}
	out := make([]entryJSON, len(entries))
	for i, e := range entries {
		out[i] = entryJSON{Seq: e.Seq, Time: e.Time, Op: e.Op.String(), State: e.State.String(), Flags: e.Flags.String(), Value: valueJSON(e.Value)}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *api) graph(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "seq", "time", "format")
	if err != nil {
		return err
	}
	f, err := format(q, "svg", "dot", "json")
	if err != nil {
		return err
	}
	var seq uint64
	if s, ok := q["seq"]; ok {
		if seq, err = parseSeq("seq", s); err != nil {
			return err
		}
	}
	if s, ok := q["time"]; ok {
		// The graph as of a time: after the last transaction begun by then.
		if seq != 0 {
			return badArg("time", "give seq or time, not both")
		}
		at, err := parseTime("time", s, time.Now())
		if err != nil {
			return err
		}
		for _, rec := range a.s.History() {
			if !rec.Start.After(at) {
				seq = rec.Seq
			}
		}
		if seq == 0 {
			return notFound("time", "no transaction in the history began by %s", at.Format(time.RFC3339))
		}
	}
	snap, err := a.s.GraphSnapshot(seq)
	if err != nil {
		return notFound("seq", "%v", err)
	}
	opts := graphviz.DefaultOptions()
	opts.Highlight = seq != 0
	switch f {
	case "json":
		return writeJSON(w, http.StatusOK, snapshotOf(snap))
	case "dot":
		b, err := graphviz.DOT(snap, opts)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
		_, err = w.Write(b)
		return err
	}
	b, err := graphviz.SVG(r.Context(), snap, opts)
	if err != nil {
		return &httpError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("SVG: %v (format=dot needs no graphviz)", err)}
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, err = w.Write(b)
	return err
}

func (a *api) dump(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "view", "descriptor", "prefix")
	if err != nil {
		return err
	}
	view := q["view"]
	if view == "" {
		view = "scheduler"
	}
	if !slices.Contains([]string{"intended", "southbound", "scheduler"}, view) {
		return badArg("view", "%q is not one of intended, southbound, scheduler", view)
	}
	if _, ok := q["descriptor"]; ok {
		if _, ok := q["prefix"]; ok {
			return badArg("prefix", "give descriptor or prefix, not both")
		}
	}
	name := q["descriptor"]
	if name != "" {
		if _, ok := a.s.Descriptor(name); !ok {
			return notFound("descriptor", "no descriptor %q (GET /models lists them)", name)
		}
	}
	type item struct {
		Key    string          `json:"key"`
		Value  json.RawMessage `json:"value,omitempty"`
		State  string          `json:"state,omitempty"`
		Origin string          `json:"origin,omitempty"`
	}
	var out []item
	if view == "southbound" {
		if a.cfg.Southbound == nil {
			return &httpError{code: http.StatusNotImplemented, msg: "this agent reads no southbound view"}
		}
		names := a.s.Descriptors()
		if name != "" {
			names = []string{name}
		}
		for _, n := range names {
			items, err := a.cfg.Southbound(r.Context(), n)
			if err != nil {
				if name == "" {
					continue // a descriptor without Retrieve
				}
				return &httpError{code: http.StatusBadGateway, msg: fmt.Sprintf("Retrieve of %s: %v", n, err), arg: "descriptor"}
			}
			for _, it := range items {
				if strings.HasPrefix(it.Key, q["prefix"]) {
					out = append(out, item{Key: it.Key, Value: valueJSON(it.Value), Origin: it.Origin.String()})
				}
			}
		}
		slices.SortFunc(out, func(x, y item) int { return strings.Compare(x.Key, y.Key) })
		return writeJSON(w, http.StatusOK, out)
	}
	var sts []scheduler.Status
	if name != "" {
		sts = a.s.DescriptorStatuses(name)
	} else {
		sts = a.s.Statuses(q["prefix"])
	}
	for _, st := range sts {
		switch view {
		case "intended":
			if st.Intended && st.Value != nil {
				out = append(out, item{Key: st.Key, Value: valueJSON(st.Value)})
			}
		default:
			out = append(out, item{Key: st.Key, Value: valueJSON(st.Applied), State: st.State.String(), Origin: st.Origin.String()})
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *api) resync(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "retry", "verbose")
	if err != nil {
		return err
	}
	opts := []scheduler.TxnOption{scheduler.DownstreamResync(), scheduler.Description("downstream resync (HTTP)")}
	if s, ok := q["retry"]; ok {
		retry, err := parseBool("retry", s)
		if err != nil {
			return err
		}
		if retry {
			opts = append(opts, scheduler.Retry(scheduler.RetryPolicy{Period: time.Second, MaxAttempts: 3, Backoff: true}))
		}
	}
	verbose := false
	if s, ok := q["verbose"]; ok {
		if verbose, err = parseBool("verbose", s); err != nil {
			return err
		}
	}
	res, err := a.s.Txn(opts...).Commit(r.Context())
	if res == nil || res.Seq == 0 {
		return &httpError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("resync: %v", err)}
	}
	out := map[string]any{"seq": res.Seq, "operations": len(res.Executed), "error": errText(res.Err)}
	if verbose {
		out["executed"] = opsJSON(res.Executed)
	}
	return writeJSON(w, http.StatusOK, out)
}

// maxBody bounds what a POST may send.
const maxBody = apilimits.MaxBody

func (a *api) plan(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "format")
	if err != nil {
		return err
	}
	f, err := format(q, "json", "file")
	if err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return badArg("body", "%v", err)
	}
	if len(body) > maxBody {
		return badArg("body", "larger than %d bytes", maxBody)
	}
	if f == "file" && a.cfg.PlanFile != nil {
		// A whole configuration file: the plan of what the file source
		// would apply, were its file this one.
		res, err := a.cfg.PlanFile(r.Context(), "body", body)
		var pe *nbfile.ParseError
		switch {
		case errors.As(err, &pe):
			return badArg("body", "%v", err)
		case err != nil:
			return &httpError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("plan: %v", err)}
		}
		out := map[string]any{"planned": []opJSON{}, "error": ""}
		if res != nil {
			out["planned"], out["error"] = opsJSON(res.Planned), errText(res.Err)
		}
		return writeJSON(w, http.StatusOK, out)
	}
	if f == "file" {
		// A preview must be what applying would do, and with no file
		// source nothing would apply a file: no plan of some other
		// code's making stands in for it.
		return &httpError{code: http.StatusNotImplemented, arg: "format",
			msg: "format: file: this agent has no file source to plan the file against (httpapi.Config.PlanFile)"}
	}
	var req struct {
		Set    map[string]json.RawMessage `json:"set"`
		Delete []string                   `json:"delete"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return badArg("body", "not {\"set\": {KEY: VALUE}, \"delete\": [KEY]}: %v", err)
	}
	if err := onlyOne(dec); err != nil {
		return err
	}
	if len(req.Set) == 0 && len(req.Delete) == 0 {
		return badArg("body", "nothing to plan (set and delete are empty)")
	}
	if err := apilimits.Count("set, delete", int64(len(req.Set)+len(req.Delete)), apilimits.MaxCommitKeys); err != nil {
		return limitErr(err)
	}
	txn := a.s.Txn(scheduler.DryRun(), scheduler.Description("plan preview (HTTP)"))
	keys := make([]string, 0, len(req.Set))
	for k := range req.Set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := apilimits.Length("set", k, apilimits.MaxKeyLen); err != nil {
			return limitErr(err)
		}
		v, err := nb.Decode(a.cfg.Models, k, req.Set[k], nb.JSON)
		if err != nil {
			return badArg("set."+k, "%v", err)
		}
		txn.Set(k, v)
	}
	for i, k := range req.Delete {
		if k == "" {
			return badArg("delete", "an empty key")
		}
		if err := apilimits.Length(fmt.Sprintf("delete[%d]", i), k, apilimits.MaxKeyLen); err != nil {
			return limitErr(err)
		}
		txn.Delete(k)
	}
	return a.writePlan(w, r, txn)
}

// onlyOne refuses what follows the JSON value dec has read: a second
// value, or anything but white space.
func onlyOne(dec *json.Decoder) error {
	off := dec.InputOffset()
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case err == io.EOF:
		return nil
	case err == nil:
		return badArg("body", "a second JSON value at byte %d: the body is one object", off)
	default:
		return badArg("body", "after the JSON object, at byte %d: %v", off, err)
	}
}

func (a *api) writePlan(w http.ResponseWriter, r *http.Request, txn *scheduler.Txn) error {
	res, err := txn.Commit(r.Context())
	if res == nil {
		return &httpError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("plan: %v", err)}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"planned": opsJSON(res.Planned), "error": errText(res.Err)})
}

func keyErrText(e scheduler.KeyError) string {
	if e.Op != 0 {
		return fmt.Sprintf("%s: %s: %v", e.Key, e.Op, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Key, e.Err)
}

// snapshotOf is a graph snapshot as the API writes it.
func snapshotOf(snap *scheduler.GraphSnapshot) any {
	type node struct {
		Key         string          `json:"key"`
		Label       string          `json:"label"`
		Descriptor  string          `json:"descriptor,omitempty"`
		State       string          `json:"state"`
		Origin      string          `json:"origin"`
		Value       json.RawMessage `json:"value,omitempty"`
		Derived     bool            `json:"derived,omitempty"`
		Error       string          `json:"error,omitempty"`
		Placeholder bool            `json:"placeholder,omitempty"`
	}
	type edge struct {
		From  string `json:"from"`
		To    string `json:"to"`
		Label string `json:"label,omitempty"`
		Kind  string `json:"kind"`
		Met   bool   `json:"met"`
	}
	out := struct {
		Seq     uint64    `json:"seq"`
		Time    time.Time `json:"time"`
		Nodes   []node    `json:"nodes"`
		Edges   []edge    `json:"edges"`
		Touched []string  `json:"touched,omitempty"`
	}{Seq: snap.Seq, Time: snap.Time, Touched: snap.Touched}
	for _, n := range snap.Nodes {
		out.Nodes = append(out.Nodes, node{Key: n.Key, Label: n.Label, Descriptor: n.Descriptor, State: n.State.String(),
			Origin: n.Origin.String(), Value: valueJSON(n.Value), Derived: n.Derived, Error: errText(n.Err), Placeholder: n.Placeholder})
	}
	for _, e := range snap.Edges {
		out.Edges = append(out.Edges, edge{From: e.From, To: e.To, Label: e.Label, Kind: fmt.Sprint(e.Kind), Met: e.Met})
	}
	return out
}

// stats counts the values by state (now) and the operations of the
// history by flag, for keys under a prefix.
func (a *api) stats(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "prefix", "flag")
	if err != nil {
		return err
	}
	prefix := q["prefix"]
	states := map[string]int{}
	for _, st := range a.s.Statuses(prefix) {
		states[st.State.String()]++
	}
	flags := map[string]int{}
	for _, rec := range a.s.History() {
		for _, op := range rec.Executed {
			if !strings.HasPrefix(op.Key, prefix) {
				continue
			}
			for _, name := range strings.Fields(op.Flags.String()) {
				flags[name]++
			}
		}
	}
	if f, ok := q["flag"]; ok {
		n, known := flags[f]
		if !known && !slices.Contains(scheduler.FlagNames(), f) {
			return badArg("flag", "%q is not a flag (%s)", f, strings.Join(scheduler.FlagNames(), ", "))
		}
		flags = map[string]int{f: n}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"states": states, "flags": flags})
}
