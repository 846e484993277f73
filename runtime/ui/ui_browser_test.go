package ui_test

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/ui"
)

var screenshotDir = flag.String("ui.screenshots", "",
	"directory to keep the operator page's screenshots in (default: a temporary directory removed after the test)")

// chromiumCommand is the browser the page is tested in (Debian's chromium
// package; make tools installs it).
const chromiumCommand = "chromium"

// browser loads pages in headless Chromium: the DOM after the page's
// scripts ran, and a screenshot.
type browser struct {
	t       *testing.T
	path    string
	profile string
	shots   string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath(chromiumCommand)
	if err != nil {
		// No skip: make tools installs it, and a test that cannot find
		// a tool fails.
		t.Fatalf("%s is not installed (make tools installs the Debian package chromium): %v", chromiumCommand, err)
	}
	shots := *screenshotDir
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, path: path, profile: t.TempDir(), shots: shots}
}

// load renders url and returns the DOM as the browser serialises it,
// saving a screenshot as name.png.
func (b *browser) load(name, url string) string {
	b.t.Helper()
	// The bound is for a browser that hangs, not a speed target: a loaded
	// 2-core machine has taken 14 s for one page, and a page's speed is
	// not something a unit test can assert (timing lives in benchmarks).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shot := filepath.Join(b.shots, name+".png")
	cmd := exec.CommandContext(ctx, b.path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--disable-quic",
		"--disable-component-update", "--disable-sync", "--user-data-dir="+b.profile,
		"--window-size=1280,900", "--hide-scrollbars", "--screenshot="+shot, "--dump-dom", url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("%s %s: %v\n%s", chromiumCommand, url, err, stderr.String())
	}
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		b.t.Errorf("%s: no screenshot (%v)\n%s", url, err, stderr.String())
	}
	dom := stdout.String()
	if !strings.Contains(dom, "</html>") {
		b.t.Fatalf("%s: the browser dumped no page:\n%s\n%s", url, dom, stderr.String())
	}
	return dom
}

// svgNode returns the SVG group of the graph's node key, as the browser
// serialises it ("" when the graph has no such node).
func svgNode(dom, key string) string {
	title := "<title>" + strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(key) + "</title>"
	for rest := dom; ; {
		i := strings.Index(rest, title)
		if i < 0 {
			return ""
		}
		start := strings.LastIndex(rest[:i], "<g ")
		if start >= 0 && strings.Contains(rest[start:i], `class="node`) {
			end := strings.Index(rest[i:], `class="node`)
			if e := strings.Index(rest[i:], `class="edge`); e >= 0 && (end < 0 || e < end) {
				end = e
			}
			if end < 0 {
				end = len(rest) - i
			}
			return rest[start : i+end]
		}
		rest = rest[i+len(title):]
	}
}

// serveAgent serves the agent's API with the page mounted at /ui/, in the
// API's own Server (so, on the tokenless default, behind its refusal of
// other sites' pages), and returns its base URL.
func serveAgent(t *testing.T, a *agent) string {
	t.Helper()
	page, err := ui.New(a.svc, ui.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.NewServer(a.svc, api.ServerConfig{Address: "127.0.0.1:0", Logger: quiet, Mount: map[string]http.Handler{"/ui/": page}})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return "http://" + srv.Addr()
}

// TestUIInBrowser loads every view of the operator page in headless
// Chromium over an agent with a pending, a failed and a malicious value,
// served by the API's Server, checks what the rendered page shows, and
// saves screenshots (-ui.screenshots=DIR keeps them).
func TestUIInBrowser(t *testing.T) {
	_, a := fixture(t)
	b := newBrowser(t)
	base := serveAgent(t, a) + "/ui/"
	type check struct {
		name, path string
		want, not  []string
	}
	checks := []check{
		{"overview", "", []string{"8 values", "Needs attention", "device busy", `href="txn?seq=5"`}, nil},
		{"values", "values", []string{`data-key="iface/eth0"`, `data-key="route/r3"`, "overrides etcd"}, nil},
		{"values-form", "values?prefix=route%2F&state=PENDING",
			[]string{`data-key="route/r2"`, `value="route/"`, `<option value="PENDING" selected="">`}, []string{`data-key="route/r1"`}},
		{"values-pending", "values?state=PENDING",
			[]string{`data-key="route/r2"`, `data-key="route/r3"`, `<option value="PENDING" selected="">`},
			[]string{`data-key="iface/eth0"`}},
		{"values-prefix", "values?prefix=iface%2F",
			[]string{`data-key="iface/eth9"`, `value="iface/"`}, []string{`data-key="route/r1"`}},
		{"value-pending", "value?key=route%2Fr3",
			[]string{`id="why-pending"`, "(not intended, a descriptor handles it)", `href="value?key=iface%2feth2"`, `href="value?key=route%2fr2"`}, nil},
		{"value-failed", "value?key=iface%2Feth9", []string{`id="error"`, "device busy"}, []string{`id="why-pending"`}},
		{"value-evil", "value?key=" + strings.ReplaceAll(strings.ReplaceAll(evilKey, "<", "%3C"), "'", "%27"),
			[]string{"&lt;img src=x onerror="}, nil},
		{"timeline", "timeline?key=iface%2Feth1", []string{`id="timeline"`, `href="txn?seq=1"`, `href="txn?seq=5"`, ">UPDATE<", ">CREATE<"}, nil},
		{"history", "history",
			[]string{`id="txn-1"`, `id="txn-5"`, "routes over a missing interface<", "4 planned, 4 executed", "1 batch of 2",
				`<td class="opkind">CREATE</td><td><a href="value?key=route%2fr1" class="key">route/r1</a></td>`,
				"iface/eth9: CREATE: device busy"}, nil},
		{"txn", "txn?seq=3", []string{`id="planned"`, `id="executed"`, `class="op failed"`, "device busy", "no batch"}, nil},
		{"txn-input", "txn?seq=2", []string{`id="input"`, "10.3.0.0/24 dep:route/r2", `href="graph?seq=2"`}, nil},
		{"error", "txn?seq=abc", []string{`<code id="argument">seq</code>`, "not a transaction number"}, nil},
	}
	for _, c := range checks {
		dom := b.load(c.name, base+c.path)
		for _, w := range c.want {
			if !strings.Contains(dom, w) {
				t.Errorf("%s: the rendered page lacks %s", c.name, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(dom, w) {
				t.Errorf("%s: the rendered page has %s", c.name, w)
			}
		}
		// No page runs the script in the malicious key or value.
		if strings.Contains(dom, "<title>pwned") {
			t.Errorf("%s: an injected script ran", c.name)
		}
		if t.Failed() {
			t.Fatalf("%s: the rendered page:\n%s", c.name, dom)
		}
	}

	// The graph now: the SVG is inline, the pan-and-zoom script ran (it
	// marks the page and makes the nodes links), nothing is highlighted.
	dom := b.load("graph", base+"graph")
	if !strings.Contains(dom, `<html lang="en" class="js">`) {
		t.Errorf("graph: the pan-and-zoom script did not run")
	}
	if !regexp.MustCompile(`<svg width="100%" height="100%"[^>]*viewBox=`).MatchString(dom) {
		t.Errorf("graph: no scalable inline SVG")
	}
	for _, key := range []string{"iface/eth0", "iface/eth9", "route/r3", evilKey} {
		n := svgNode(dom, key)
		if n == "" {
			t.Errorf("graph: no node %s", key)
			continue
		}
		if !strings.Contains(n, `class="node linked"`) {
			t.Errorf("graph: node %s is not a link: %s", key, n)
		}
		if strings.Contains(n, `stroke-width="3"`) {
			t.Errorf("graph now: node %s is highlighted: %s", key, n)
		}
	}

	// The graph as of transaction 2: its values highlighted, and nothing
	// of later transactions.
	dom = b.load("graph-seq2", base+"graph?seq=2")
	for _, key := range []string{"route/r2", "route/r3"} {
		if n := svgNode(dom, key); !strings.Contains(n, `stroke-width="3"`) {
			t.Errorf("graph of #2: touched node %s not highlighted: %q", key, n)
		}
	}
	if n := svgNode(dom, "iface/eth0"); n == "" || strings.Contains(n, `stroke-width="3"`) {
		t.Errorf("graph of #2: iface/eth0 missing or highlighted: %q", n)
	}
	if n := svgNode(dom, "iface/eth9"); n != "" {
		t.Errorf("graph of #2 shows iface/eth9, created by #3")
	}
	if !strings.Contains(dom, `<option value="2" selected="">#2</option>`) || !strings.Contains(dom, "touched 2 values") {
		t.Errorf("graph of #2: the form does not say which transaction")
	}
	if t.Failed() {
		t.Logf("the rendered graph page:\n%s", dom)
	}
	if *screenshotDir != "" {
		t.Logf("screenshots in %s", *screenshotDir)
	}
}

// TestUILoginInBrowser: with a token, the browser gets the login form,
// and no value.
func TestUILoginInBrowser(t *testing.T) {
	a := newAgent(t, token, loaded(t))
	b := newBrowser(t)
	dom := b.load("login", a.serve(t).URL+"/ui/values?state=PENDING")
	for _, w := range []string{`<form class="filter" method="post" action="login" id="login">`, `type="password" name="token"`,
		`name="next" value="values?state=PENDING"`, "a bearer token is required"} {
		if !strings.Contains(dom, w) {
			t.Errorf("the login page lacks %s", w)
		}
	}
	if strings.Contains(dom, "route/r1") {
		t.Errorf("the login page shows a value")
	}
	if t.Failed() {
		t.Logf("the rendered page:\n%s", dom)
	}
}
