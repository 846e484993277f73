package graphviz

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Options choose what a rendering shows. The zero value draws the bare
// graph; DefaultOptions turns everything on.
type Options struct {
	// Clusters groups the values of each descriptor in a box named after
	// the descriptor.
	Clusters bool
	// Tooltips attaches to each node its key, descriptor, state, origin,
	// error, value (as JSON) and metadata, and to each edge what it
	// stands for; SVG viewers show them on hover.
	Tooltips bool
	// Highlight draws the keys that the snapshot's transaction touched
	// with a thick border.
	Highlight bool
	// Legend adds a box with the colours of the states in the snapshot
	// and the styles of the edges.
	Legend bool
	// Title is the graph's caption; empty means
	// "values as of transaction N (time)".
	Title string
}

// DefaultOptions returns the options of a full rendering: clusters,
// tooltips, highlighting and a legend, with the default title.
func DefaultOptions() Options {
	return Options{Clusters: true, Tooltips: true, Highlight: true, Legend: true}
}

// maxTooltip bounds the text of one tooltip, in bytes; a longer value is
// cut with an ellipsis.
const maxTooltip = 4096

// DOT returns the snapshot as DOT text.
func DOT(snap *scheduler.GraphSnapshot, opts Options) ([]byte, error) {
	var b bytes.Buffer
	if err := WriteDOT(&b, snap, opts); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteDOT writes the snapshot to w as DOT text (a digraph): one node
// per value, keyed by the value's key, and one edge per dependency or
// derivation, from the value that needs (or derives) to the other.
func WriteDOT(w io.Writer, snap *scheduler.GraphSnapshot, opts Options) error {
	if snap == nil {
		return errors.New("graphviz: nil graph snapshot")
	}
	d := &dotWriter{opts: opts, touched: map[string]bool{}}
	if opts.Highlight {
		for _, k := range snap.Touched {
			d.touched[k] = true
		}
	}
	d.write(snap)
	if _, err := w.Write(d.b.Bytes()); err != nil {
		return fmt.Errorf("graphviz: write DOT: %w", err)
	}
	return nil
}

type dotWriter struct {
	b       bytes.Buffer
	opts    Options
	touched map[string]bool
}

func (d *dotWriter) printf(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

func (d *dotWriter) write(snap *scheduler.GraphSnapshot) {
	nodes := slices.Clone(snap.Nodes)
	slices.SortStableFunc(nodes, func(a, b scheduler.GraphNode) int { return strings.Compare(a.Key, b.Key) })
	edges := slices.Clone(snap.Edges)
	slices.SortStableFunc(edges, func(a, b scheduler.GraphEdge) int {
		return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To),
			cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Label, b.Label))
	})

	title := d.opts.Title
	if title == "" {
		title = fmt.Sprintf("values as of transaction %d", snap.Seq)
		if !snap.Time.IsZero() {
			title += " (" + snap.Time.UTC().Format(time.RFC3339Nano) + ")"
		}
	}
	d.printf("digraph kvdescriptor {\n")
	d.printf("\tgraph [label=%s, labelloc=t, rankdir=LR, fontname=Helvetica];\n", quote(title))
	d.printf("\tnode [shape=box, style=\"rounded,filled\", fontname=Helvetica, fontsize=10];\n")
	d.printf("\tedge [fontname=Helvetica, fontsize=9];\n")

	var loose []scheduler.GraphNode
	if d.opts.Clusters {
		byDesc := map[string][]scheduler.GraphNode{}
		for _, n := range nodes {
			if n.Descriptor == "" || n.Placeholder {
				loose = append(loose, n)
				continue
			}
			byDesc[n.Descriptor] = append(byDesc[n.Descriptor], n)
		}
		descs := make([]string, 0, len(byDesc))
		for name := range byDesc {
			descs = append(descs, name)
		}
		slices.Sort(descs)
		for i, name := range descs {
			d.printf("\tsubgraph cluster_%d {\n", i)
			d.printf("\t\tlabel=%s;\n\t\tstyle=\"rounded,dashed\";\n\t\tcolor=%s;\n", quote(name), quote(clusterColor))
			for _, n := range byDesc[name] {
				d.node("\t\t", n)
			}
			d.printf("\t}\n")
		}
	} else {
		loose = nodes
	}
	for _, n := range loose {
		d.node("\t", n)
	}
	for _, e := range edges {
		d.edge(e)
	}
	if d.opts.Legend {
		d.legend(nodes, snap.Seq)
	}
	d.printf("}\n")
}

// node writes the statement of one node.
func (d *dotWriter) node(indent string, n scheduler.GraphNode) {
	var attrs []string
	if n.Placeholder {
		attrs = append(attrs, "label="+quote(n.Key), `style=dashed`,
			"color="+quote(placeholderColor), "fontcolor="+quote(placeholderColor))
	} else {
		attrs = append(attrs, "label="+quote(n.Key+"\n"+n.State.String()), "fillcolor="+quote(StateColor(n.State)))
		if n.Derived {
			attrs = append(attrs, "shape=ellipse")
		}
		if style := nodeStyle(n); style != "" {
			attrs = append(attrs, "style="+quote(style))
		}
	}
	if d.touched[n.Key] {
		attrs = append(attrs, "penwidth="+touchedPenWidth)
	}
	if d.opts.Tooltips {
		attrs = append(attrs, "tooltip="+quote(nodeTooltip(n, d.touched[n.Key])))
	}
	d.printf("%s%s [%s];\n", indent, quoteID(n.Key), strings.Join(attrs, ", "))
}

// nodeStyle returns the style of a value's node ("" for the default,
// rounded and filled).
func nodeStyle(n scheduler.GraphNode) string {
	var style []string
	if !n.Derived {
		style = append(style, "rounded")
	}
	style = append(style, "filled")
	if n.State == scheduler.PENDING {
		style = append(style, "dashed")
	}
	if s := strings.Join(style, ","); s != "rounded,filled" {
		return s
	}
	return ""
}

// nodeTooltip describes a node in full, one line per fact.
func nodeTooltip(n scheduler.GraphNode, touched bool) string {
	var lines []string
	add := func(name, v string) {
		if v != "" {
			lines = append(lines, name+": "+v)
		}
	}
	lines = append(lines, n.Key)
	if n.Placeholder {
		lines = append(lines, "missing: nothing has this key")
		return strings.Join(lines, "\n")
	}
	add("label", n.Label)
	add("descriptor", n.Descriptor)
	add("state", n.State.String())
	if n.Origin != 0 {
		add("origin", n.Origin.String())
	}
	if n.Derived {
		lines = append(lines, "derived")
	}
	if touched {
		lines = append(lines, "touched by this transaction")
	}
	if n.Err != nil {
		add("error", n.Err.Error())
	}
	if n.Value != nil {
		add("value", valueText(n.Value))
	}
	if n.Metadata != nil {
		add("metadata", fmt.Sprintf("%+v", n.Metadata))
	}
	return truncate(strings.Join(lines, "\n"), maxTooltip)
}

// valueText renders a value as compact JSON: protojson's output with its
// deliberately unstable spacing removed, so that the text is
// deterministic. Sensitive fields are redacted (kv.Redact).
func valueText(m proto.Message) string {
	m = kv.Redact(m)
	name := string(m.ProtoReflect().Descriptor().FullName())
	raw, err := protojson.Marshal(m)
	if err != nil {
		return name + " (cannot render: " + err.Error() + ")"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return name + " (cannot render: " + err.Error() + ")"
	}
	return name + " " + b.String()
}

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// edge writes the statement of one edge.
func (d *dotWriter) edge(e scheduler.GraphEdge) {
	var attrs []string
	if e.Label != "" {
		attrs = append(attrs, "label="+quote(e.Label))
	}
	switch e.Kind {
	case scheduler.EdgeDerived:
		attrs = append(attrs, "color="+quote(derivedColor), "style=bold", "arrowhead=odiamond")
	case scheduler.EdgeAnyOf:
		attrs = append(attrs, "arrowhead=onormal")
	}
	if !e.Met && e.Kind != scheduler.EdgeDerived {
		attrs = append(attrs, "color="+quote(unmetColor), "fontcolor="+quote(unmetColor), "style=dashed")
	}
	if d.opts.Tooltips {
		attrs = append(attrs, "tooltip="+quote(edgeTooltip(e)))
	}
	d.printf("\t%s -> %s", quoteID(e.From), quoteID(e.To))
	if len(attrs) > 0 {
		d.printf(" [%s]", strings.Join(attrs, ", "))
	}
	d.printf(";\n")
}

func edgeTooltip(e scheduler.GraphEdge) string {
	var s string
	switch e.Kind {
	case scheduler.EdgeDerived:
		return e.To + " is derived from " + e.From
	case scheduler.EdgeAnyOf:
		s = e.From + " needs any of " + e.To
	default:
		s = e.From + " needs " + e.To
	}
	if e.Label != "" {
		s += " (" + e.Label + ")"
	}
	if e.Met {
		return s + ": met"
	}
	return s + ": unmet"
}

// legend writes a cluster with a sample node per state present and a
// sample edge per edge style. Its node IDs start with a prefix that no key
// of the snapshot starts with.
func (d *dotWriter) legend(nodes []scheduler.GraphNode, seq uint64) {
	prefix := "legend:"
	for clash := true; clash; {
		clash = false
		for _, n := range nodes {
			if strings.HasPrefix(n.Key, prefix) {
				prefix = "_" + prefix
				clash = true
				break
			}
		}
	}
	present := map[scheduler.State]bool{}
	var placeholders, derived bool
	for _, n := range nodes {
		if n.Placeholder {
			placeholders = true
			continue
		}
		present[n.State] = true
		derived = derived || n.Derived
	}
	d.printf("\tsubgraph cluster_legend {\n")
	d.printf("\t\tlabel=\"legend\";\n\t\tstyle=rounded;\n\t\tcolor=%s;\n\t\tfontsize=10;\n", quote(clusterColor))
	d.printf("\t\tnode [fontsize=9];\n\t\tedge [fontsize=8];\n")
	for _, s := range states() {
		if !present[s] {
			continue
		}
		n := scheduler.GraphNode{State: s}
		attrs := []string{"label=" + quote(s.String()), "fillcolor=" + quote(StateColor(s))}
		if style := nodeStyle(n); style != "" {
			attrs = append(attrs, "style="+quote(style))
		}
		d.printf("\t\t%s [%s];\n", quoteID(prefix+"state:"+s.String()), strings.Join(attrs, ", "))
	}
	if derived {
		d.printf("\t\t%s [label=\"derived value\", shape=ellipse, style=filled, fillcolor=%s];\n",
			quoteID(prefix+"derived"), quote(unknownStateColor))
	}
	if placeholders {
		d.printf("\t\t%s [label=\"missing target\", style=dashed, color=%s, fontcolor=%s];\n",
			quoteID(prefix+"placeholder"), quote(placeholderColor), quote(placeholderColor))
	}
	if len(d.touched) > 0 {
		d.printf("\t\t%s [label=%s, fillcolor=%s, penwidth=%s];\n", quoteID(prefix+"touched"),
			quote(fmt.Sprintf("touched by\ntransaction %d", seq)), quote(unknownStateColor), touchedPenWidth)
	}
	samples := []struct{ name, attrs string }{
		{"dependency", ""},
		{"any of", "arrowhead=onormal"},
		{"derived", "color=" + quote(derivedColor) + ", style=bold, arrowhead=odiamond"},
		{"unmet", "color=" + quote(unmetColor) + ", fontcolor=" + quote(unmetColor) + ", style=dashed"},
	}
	for _, s := range samples {
		from, to := quoteID(prefix+"edge:"+s.name+":from"), quoteID(prefix+"edge:"+s.name+":to")
		d.printf("\t\t%s [shape=point, label=\"\"];\n\t\t%s [shape=point, label=\"\"];\n", from, to)
		attrs := "label=" + quote(s.name)
		if s.attrs != "" {
			attrs += ", " + s.attrs
		}
		d.printf("\t\t%s -> %s [%s];\n", from, to, attrs)
	}
	d.printf("\t}\n")
}

// quote returns text as a quoted DOT string for a label, tooltip or
// other escString attribute, which graphviz displays as text: quotes and
// backslashes are escaped, '&' becomes "&amp;" (graphviz reads entities),
// line breaks become \n, and other control characters and invalid UTF-8
// become visible \xNN escapes.
func quote(text string) string { return quoteString(text, false) }

// quoteID returns a key as a quoted DOT node ID. Graphviz keeps the
// escapes of an ID as written ("a\\b" names a node a\\b, not a\b), so
// backslashes and line breaks are written as character references
// instead, which SVG titles render as the key.
func quoteID(key string) string { return quoteString(key, true) }

func quoteString(s string, id bool) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	backslash, newline := `\\`, `\n`
	if id {
		backslash, newline = "&#92;", "&#10;"
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(backslash)
			fmt.Fprintf(&b, "x%02x", s[i])
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(backslash)
		case r == '&':
			b.WriteString("&amp;")
		case r == '\n':
			b.WriteString(newline)
		case r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(backslash)
			fmt.Fprintf(&b, "x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
