package graphviz_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Keys that need escaping in DOT, in SVG, or both.
const (
	keyQuote     = `iface/"quoted"`
	keyEntity    = `note/a&lt;b&c`
	keyBackslash = `path/C:\dir`
	keyTagLike   = `html/<b>bold</b>`
	keyPercent   = `route/vrf/0/dst/10.0.0.0%2F8:x`
	keyNewline   = "multi\nline"
)

// snapshot returns a graph snapshot with a node of every state, derived
// values, placeholders, every kind of edge met and unmet, and keys that
// need escaping.
func snapshot() *scheduler.GraphSnapshot {
	str := wrapperspb.String
	return &scheduler.GraphSnapshot{
		Seq:  7,
		Time: time.Date(2025, 3, 4, 5, 6, 7, 800, time.UTC),
		Nodes: []scheduler.GraphNode{
			{Key: "bd/b1", Label: "b1", Descriptor: "bd", State: scheduler.CONFIGURED, Origin: kv.OriginNB, Value: str("derive:bd/b1/if/eth0"), Metadata: 3},
			{Key: "bd/b1/if/eth0", Label: "eth0", Descriptor: "bdif", State: scheduler.PENDING, Origin: kv.OriginNB, Value: str("dep:iface/eth0"), Derived: true},
			{Key: "iface/eth0", Label: "eth0", Descriptor: "iface", State: scheduler.FAILED, Origin: kv.OriginNB, Value: str("mtu=9000"), Err: errors.New(`create "eth0": no such device & <more>`)},
			{Key: "iface/eth1", Label: "eth1", Descriptor: "iface", State: scheduler.RETRYING, Origin: kv.OriginNB, Value: str("x")},
			{Key: "iface/lo", Label: "lo", Descriptor: "iface", State: scheduler.OBTAINED, Origin: kv.OriginSB, Value: str("loopback")},
			{Key: "iface/lo/addr/127.0.0.1", Label: "127.0.0.1", Descriptor: "addr", State: scheduler.DISCOVERED, Origin: kv.OriginSB, Derived: true},
			{Key: "iface/bad", Label: "bad", Descriptor: "iface", State: scheduler.INVALID, Value: str("invalid:mtu"), Err: errors.New("mtu: marked invalid")},
			{Key: "iface/gone", Label: "gone", Descriptor: "iface", State: scheduler.MISSING, Origin: kv.OriginNB},
			{Key: "iface/old", Label: "old", Descriptor: "iface", State: scheduler.REMOVED},
			{Key: "iface/none", Label: "none", Descriptor: "iface", State: scheduler.NONEXISTENT},
			{Key: "vpp/x", State: scheduler.UNIMPLEMENTED, Value: str("?"), Err: errors.New("no descriptor handles the key")},
			{Key: "route/r1", Label: "r1", Descriptor: "route", State: scheduler.PENDING, Value: str("dep:iface/eth0 any:iface/eth0/addr/@10.0.0.1")},
			{Key: "iface/eth0/addr/", Placeholder: true, State: scheduler.NONEXISTENT},
			{Key: "iface/missing", Placeholder: true, State: scheduler.NONEXISTENT},
			{Key: keyQuote, Label: `"quoted"`, Descriptor: "iface", State: scheduler.CONFIGURED, Value: str(`say "hi" \ & <bye>`)},
			{Key: keyEntity, Label: "a&lt;b&c", Descriptor: "note", State: scheduler.CONFIGURED},
			{Key: keyBackslash, Label: `C:\dir`, Descriptor: "path", State: scheduler.CONFIGURED},
			{Key: keyTagLike, Descriptor: "html", State: scheduler.CONFIGURED},
			{Key: keyPercent, Descriptor: "route", State: scheduler.CONFIGURED},
			{Key: keyNewline, Descriptor: "", State: scheduler.UNIMPLEMENTED},
		},
		Edges: []scheduler.GraphEdge{
			{From: "bd/b1", To: "bd/b1/if/eth0", Kind: scheduler.EdgeDerived, Met: true},
			{From: "bd/b1/if/eth0", To: "iface/eth0", Label: "iface/eth0", Kind: scheduler.EdgeDependency, Met: false},
			{From: "iface/lo", To: "iface/lo/addr/127.0.0.1", Kind: scheduler.EdgeDerived, Met: true},
			{From: "route/r1", To: "iface/eth0", Label: "interface", Kind: scheduler.EdgeDependency, Met: false},
			{From: "route/r1", To: "iface/eth0/addr/", Label: "gateway", Kind: scheduler.EdgeAnyOf, Met: false},
			{From: "iface/eth1", To: "iface/lo", Label: "any iface/lo", Kind: scheduler.EdgeAnyOf, Met: true},
			{From: "iface/eth1", To: "iface/missing", Label: "iface/missing", Kind: scheduler.EdgeDependency, Met: false},
			{From: keyQuote, To: keyBackslash, Label: `needs "C:\dir"`, Kind: scheduler.EdgeDependency, Met: true},
			{From: keyTagLike, To: keyEntity, Kind: scheduler.EdgeDependency, Met: true},
		},
		Touched: []string{"bd/b1", "bd/b1/if/eth0", "iface/eth0", keyQuote},
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts graphviz.Options
	}{
		{"full", graphviz.DefaultOptions()},
		{"plain", graphviz.Options{}},
		{"titled", graphviz.Options{Highlight: true, Title: "my \"graph\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := graphviz.DOT(snapshot(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tc.name+".dot"), got)
		})
	}
}

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

// TestDeterministic checks that the order of the snapshot's nodes and
// edges does not change the output.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	want, err := graphviz.DOT(snapshot(), graphviz.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		snap := snapshot()
		r.Shuffle(len(snap.Nodes), func(i, j int) { snap.Nodes[i], snap.Nodes[j] = snap.Nodes[j], snap.Nodes[i] })
		r.Shuffle(len(snap.Edges), func(i, j int) { snap.Edges[i], snap.Edges[j] = snap.Edges[j], snap.Edges[i] })
		got, err := graphviz.DOT(snap, graphviz.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("shuffled snapshot renders differently:\n%s", cmp.Diff(string(want), string(got)))
		}
	}
}

// statement returns the DOT statement (one line) of a node or edge: the
// line that starts with the quoted ID, or the two quoted IDs of an edge.
func statement(t *testing.T, dot, head string) string {
	t.Helper()
	for _, line := range strings.Split(dot, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, "\t"), head+" [") {
			return line
		}
	}
	t.Fatalf("no statement starts with %s in:\n%s", head, dot)
	return ""
}

func TestStyles(t *testing.T) {
	t.Parallel()
	b, err := graphviz.DOT(snapshot(), graphviz.Options{Highlight: true})
	if err != nil {
		t.Fatal(err)
	}
	dot := string(b)
	tests := []struct {
		name, head  string
		want, never []string
	}{
		{"configured", `"iface/lo"`, []string{`fillcolor="` + graphviz.StateColor(scheduler.OBTAINED) + `"`}, []string{"dashed", "penwidth"}},
		{"pending dashed", `"route/r1"`, []string{`style="rounded,filled,dashed"`, `fillcolor="` + graphviz.StateColor(scheduler.PENDING) + `"`}, []string{"penwidth"}},
		{"pending derived touched", `"bd/b1/if/eth0"`, []string{`shape=ellipse`, `style="filled,dashed"`, `penwidth=3`}, nil},
		{"derived", `"iface/lo/addr/127.0.0.1"`, []string{`shape=ellipse`, `style="filled"`}, []string{"dashed"}},
		{"touched", `"iface/eth0"`, []string{`penwidth=3`, `fillcolor="` + graphviz.StateColor(scheduler.FAILED) + `"`}, nil},
		{"placeholder", `"iface/missing"`, []string{`label="iface/missing"`, `style=dashed`}, []string{"fillcolor", "NONEXISTENT"}},
		{"derived edge", `"bd/b1" -> "bd/b1/if/eth0"`, []string{`style=bold`, `arrowhead=odiamond`, `color="#1c7ed6"`}, []string{"dashed"}},
		{"unmet dependency", `"route/r1" -> "iface/eth0"`, []string{`style=dashed`, `color="#e03131"`, `label="interface"`}, []string{"arrowhead"}},
		{"unmet anyof", `"route/r1" -> "iface/eth0/addr/"`, []string{`arrowhead=onormal`, `style=dashed`}, nil},
		{"met anyof", `"iface/eth1" -> "iface/lo"`, []string{`arrowhead=onormal`}, []string{"dashed", "color"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := statement(t, dot, tc.head)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%s lacks %s", line, w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(line, n) {
					t.Errorf("%s has %s", line, n)
				}
			}
		})
	}
	// Without Highlight nothing is thick.
	b, err = graphviz.DOT(snapshot(), graphviz.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "penwidth") {
		t.Error("penwidth without Highlight")
	}
}

func TestLegendAvoidsKeys(t *testing.T) {
	t.Parallel()
	snap := &scheduler.GraphSnapshot{Nodes: []scheduler.GraphNode{
		{Key: "legend:state:CONFIGURED", Descriptor: "x", State: scheduler.CONFIGURED},
		{Key: "_legend:x", Descriptor: "x", State: scheduler.CONFIGURED},
	}}
	b, err := graphviz.DOT(snap, graphviz.Options{Legend: true})
	if err != nil {
		t.Fatal(err)
	}
	dot := string(b)
	if n := strings.Count(dot, `"legend:state:CONFIGURED" [`); n != 1 {
		t.Errorf("the key's node is declared %d times, want once:\n%s", n, dot)
	}
	statement(t, dot, `"__legend:state:CONFIGURED"`)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	if err := graphviz.WriteDOT(io.Discard, nil, graphviz.Options{}); err == nil {
		t.Error("WriteDOT(nil snapshot) succeeded")
	}
	broken := errors.New("disk full")
	err := graphviz.WriteDOT(failingWriter{broken}, snapshot(), graphviz.Options{})
	if !errors.Is(err, broken) {
		t.Errorf("WriteDOT to a failing writer: %v, want it to wrap %v", err, broken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// requireDot fails the test when graphviz is missing: the tests of SVG
// must run wherever the tests run (.ci/run and make tools install it).
func requireDot(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("dot"); err != nil {
		t.Fatalf("graphviz's dot is needed by this test and is not in PATH (make tools installs it): %v", err)
	}
}

// svgDoc is what the tests read of an SVG: the groups of nodes and edges.
type svgDoc struct {
	XMLName xml.Name   `xml:"svg"`
	Groups  []svgGroup `xml:"g>g"`
}

type svgGroup struct {
	Class  string     `xml:"class,attr"`
	Title  string     `xml:"title"`
	Texts  []string   `xml:"text"`
	Shapes []svgShape `xml:",any"`
	Links  []svgLink  `xml:"g>a"`
}

type svgShape struct {
	XMLName   xml.Name
	Fill      string `xml:"fill,attr"`
	Stroke    string `xml:"stroke,attr"`
	Width     string `xml:"stroke-width,attr"`
	DashArray string `xml:"stroke-dasharray,attr"`
}

type svgLink struct {
	Title  string     `xml:"title,attr"`
	Texts  []string   `xml:"text"`
	Shapes []svgShape `xml:",any"`
}

// parseSVG parses an SVG and returns its node and edge groups by title.
func parseSVG(t *testing.T, svg []byte) (nodes, edges map[string]svgGroup, clusters []string) {
	t.Helper()
	var doc svgDoc
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("the SVG is not valid XML: %v\n%s", err, svg)
	}
	nodes, edges = map[string]svgGroup{}, map[string]svgGroup{}
	for _, g := range doc.Groups {
		switch g.Class {
		case "node":
			nodes[g.Title] = g
		case "edge":
			edges[g.Title] = g
		case "cluster":
			clusters = append(clusters, g.Title)
		}
	}
	return nodes, edges, clusters
}

// shape returns the node's outline (polygon, ellipse or path).
func (g svgGroup) shape() svgShape {
	all := g.Shapes
	for _, l := range g.Links {
		all = append(all, l.Shapes...)
	}
	for _, s := range all {
		switch s.XMLName.Local {
		case "polygon", "ellipse", "path":
			return s
		}
	}
	return svgShape{}
}

func (g svgGroup) texts() []string {
	out := slices.Clone(g.Texts)
	for _, l := range g.Links {
		out = append(out, l.Texts...)
	}
	return out
}

func TestSVG(t *testing.T) {
	t.Parallel()
	requireDot(t)
	snap := snapshot()
	svg, err := graphviz.SVG(context.Background(), snap, graphviz.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges, clusters := parseSVG(t, svg)

	for _, n := range snap.Nodes {
		g, ok := nodes[n.Key]
		if !ok {
			t.Errorf("no node titled %q in the SVG; titles: %q", n.Key, keys(nodes))
			continue
		}
		// The label shows the key exactly, whatever it contains, then
		// the state.
		want := append(strings.Split(n.Key, "\n"), n.State.String())
		if n.Placeholder {
			want = want[:len(want)-1]
		}
		if diff := cmp.Diff(want, g.texts()); diff != "" {
			t.Errorf("texts of node %q (-want +got):\n%s", n.Key, diff)
		}
		s := g.shape()
		switch {
		case n.Placeholder:
			if s.Fill != "none" || s.DashArray == "" {
				t.Errorf("placeholder %q: fill %q, dash %q; want unfilled and dashed", n.Key, s.Fill, s.DashArray)
			}
		case !strings.EqualFold(s.Fill, graphviz.StateColor(n.State)):
			t.Errorf("node %q (%v) is filled %q, want %q", n.Key, n.State, s.Fill, graphviz.StateColor(n.State))
		}
		if dashed := s.DashArray != ""; !n.Placeholder && dashed != (n.State == scheduler.PENDING) {
			t.Errorf("node %q (%v): dashed = %v", n.Key, n.State, dashed)
		}
		if thick := s.Width == "3"; thick != slices.Contains(snap.Touched, n.Key) {
			t.Errorf("node %q: stroke-width %q, touched = %v", n.Key, s.Width, !thick)
		}
	}
	if len(edges) < len(snap.Edges) {
		t.Errorf("the SVG has %d edges, want at least %d (legend samples come on top)", len(edges), len(snap.Edges))
	}
	if s := edges["bd/b1->bd/b1/if/eth0"].shape(); !strings.EqualFold(s.Stroke, "#1c7ed6") {
		t.Errorf("derived edge stroke %q, want #1c7ed6 (edges: %v)", s.Stroke, keys(edges))
	}
	// A cluster per descriptor, and the legend.
	wantClusters := []string{"cluster_0", "cluster_1", "cluster_2", "cluster_3", "cluster_4", "cluster_5", "cluster_6", "cluster_7", "cluster_legend"}
	slices.Sort(clusters)
	if diff := cmp.Diff(wantClusters, clusters); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	// Tooltips: escaped by dot for XML, read back as written.
	tooltip := ""
	for _, l := range nodes[keyQuote].Links {
		tooltip = l.Title
	}
	if !strings.Contains(tooltip, keyQuote+"\n") || !strings.Contains(tooltip, "state: CONFIGURED") ||
		!strings.Contains(tooltip, "touched by this transaction") || !strings.Contains(tooltip, `value: google.protobuf.StringValue "say \"hi\" `) || !strings.Contains(tooltip, ` & <bye>"`) {
		t.Errorf("tooltip of %q = %q", keyQuote, tooltip)
	}
	var failedTip string
	for _, l := range nodes["iface/eth0"].Links {
		failedTip = l.Title
	}
	if !strings.Contains(failedTip, `error: create "eth0": no such device & <more>`) {
		t.Errorf("tooltip of iface/eth0 = %q, want the error as written", failedTip)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSVGWithoutDot runs with an empty PATH: the error says what is
// missing and how to install it.
func TestSVGWithoutDot(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := graphviz.SVG(context.Background(), snapshot(), graphviz.Options{})
	if !errors.Is(err, graphviz.ErrNoGraphviz) {
		t.Fatalf("SVG without dot: %v, want ErrNoGraphviz", err)
	}
	for _, want := range []string{"dot command was not found in PATH", "install graphviz"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestRenderSVGErrors(t *testing.T) {
	t.Parallel()
	requireDot(t)
	_, err := graphviz.RenderSVG(context.Background(), []byte("digraph { a -> }"))
	if err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("RenderSVG of bad DOT: %v, want dot's syntax error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = graphviz.RenderSVG(ctx, []byte("digraph { a -> b }"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("RenderSVG with a cancelled context: %v, want context.Canceled", err)
	}
}

func ExampleWriteDOT() {
	snap := &scheduler.GraphSnapshot{
		Seq: 2,
		Nodes: []scheduler.GraphNode{
			{Key: "iface/eth0", Descriptor: "iface", State: scheduler.CONFIGURED},
			{Key: "route/r1", Descriptor: "route", State: scheduler.PENDING},
		},
		Edges:   []scheduler.GraphEdge{{From: "route/r1", To: "iface/eth0", Label: "interface", Met: true}},
		Touched: []string{"route/r1"},
	}
	if err := graphviz.WriteDOT(os.Stdout, snap, graphviz.Options{Highlight: true}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// digraph kvdescriptor {
	// 	graph [label="values as of transaction 2", labelloc=t, rankdir=LR, fontname=Helvetica];
	// 	node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10];
	// 	edge [fontname=Helvetica, fontsize=9];
	// 	"iface/eth0" [label="iface/eth0\nCONFIGURED", fillcolor="#b2f2bb"];
	// 	"route/r1" [label="route/r1\nPENDING", fillcolor="#fff3bf", style="rounded,filled,dashed", penwidth=3];
	// 	"route/r1" -> "iface/eth0" [label="interface"];
	// }
}
