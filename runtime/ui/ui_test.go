package ui_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/ui"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// The keys of the fixture.
const (
	evilKey = `note/<script>document.title='pwned'</script>`
	// evilValue would run a script if a page wrote it unescaped.
	evilValue = `<img src=x onerror="document.title='pwned'">`
)

// agent is a scheduler with its sources and the API's service over it: what
// the page is a client of.
type agent struct {
	s   *scheduler.Scheduler
	sb  *kvtest.SB
	mux *nb.Mux
	svc *api.Service
}

// newAgent registers the descriptors iface, route (batched) and note on a
// scheduler whose Mux has the sources file (first), etcd and the API's.
// The file's and etcd's first loads are given by load.
func newAgent(t testing.TB, token string, load func(file, etcd nb.Sink)) *agent {
	t.Helper()
	a := &agent{sb: kvtest.NewSB()}
	var err error
	if a.s, err = scheduler.New(scheduler.WithLogger(quiet)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.s.Close(context.Background()) })
	for _, c := range []kvtest.Config{
		{Name: "iface", KeyTemplate: "iface/{name}"},
		{Name: "route", KeyTemplate: "route/{name}", Batch: true},
		{Name: "note", KeyPrefix: "note/", DriftPolicy: kv.DriftReport},
	} {
		d, err := a.sb.Descriptor(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	a.mux = nb.NewMux(a.s, nb.WithMuxLogger(quiet), nb.WithLoadDeadline(0),
		nb.WithPriorityOrder("file", "etcd", "api"), nb.WithSources("file", "etcd", "api"))
	t.Cleanup(a.mux.Close)
	load(a.mux.Sink("file"), a.mux.Sink("etcd"))
	remote, err := nb.NewRemote(a.mux, nb.SchedulerModels(a.s), nb.RemoteConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remote.Close)
	if a.svc, err = api.New(api.Deps{Scheduler: a.s, Mux: a.mux, Remote: remote, Token: token, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.svc.Close)
	return a
}

// serve mounts the page at /ui/ beside the API's handler, as an agent
// does, on a test server.
func (a *agent) serve(t testing.TB) *httptest.Server {
	t.Helper()
	return a.serveWith(t, ui.Options{})
}

// serveWith is serve with the page's options (its Logger quiet).
func (a *agent) serveWith(t testing.TB, opts ui.Options) *httptest.Server {
	t.Helper()
	h, err := a.svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = quiet
	page, err := ui.New(a.svc, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("/ui/", page)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func apply(t testing.TB, sink nb.Sink, u nb.Update) {
	t.Helper()
	if err := sink.Apply(context.Background(), u); err != nil && !strings.Contains(err.Error(), "device busy") {
		t.Fatal(err)
	}
}

func set(kvs ...string) []nb.Change {
	var out []nb.Change
	for i := 0; i+1 < len(kvs); i += 2 {
		var v proto.Message
		if kvs[i+1] != "-" {
			v = kvtest.Value(kvs[i+1])
		}
		out = append(out, nb.Change{Key: kvs[i], Value: v})
	}
	return out
}

// fixture serves an agent whose history holds five transactions:
//
//	#1 the startup resync: etcd's iface/eth0, iface/eth1, route/r0, and
//	   route/r1 of the file (overriding etcd's); the routes in a batch
//	#2 etcd sets route/r2 (waits for iface/eth2: PENDING) and route/r3
//	   (waits for route/r2)
//	#3 etcd fails to create iface/eth9 (FAILED: device busy)
//	#4 etcd sets a value whose key and text would inject a script
//	#5 etcd updates iface/eth1
func fixture(t testing.TB) (*httptest.Server, *agent) {
	t.Helper()
	a := newAgent(t, "", func(file, etcd nb.Sink) {
		apply(t, file, nb.Update{Resync: true, Changes: set("route/r1", "10.0.0.0/24 dep:iface/eth0")})
		apply(t, etcd, nb.Update{Resync: true, Description: "interfaces and a route", Changes: set(
			"iface/eth0", "up", "iface/eth1", "up mtu=9000",
			"route/r0", "10.9.0.0/24 dep:iface/eth0", "route/r1", "10.1.0.0/24 dep:iface/eth0")})
	})
	etcd := a.mux.Sink("etcd")
	apply(t, etcd, nb.Update{Description: "routes over a missing interface", Changes: set(
		"route/r2", "10.2.0.0/24 dep:iface/eth2", "route/r3", "10.3.0.0/24 dep:route/r2")})
	a.sb.Fail("iface/eth9", kvtest.Failure{Op: "create", Err: errors.New("device busy"), Terminal: true})
	apply(t, etcd, nb.Update{Changes: set("iface/eth9", "up")})
	apply(t, etcd, nb.Update{Changes: set(evilKey, evilValue)})
	apply(t, etcd, nb.Update{Changes: set("iface/eth1", "up mtu=1500")})
	if h := a.s.History(); len(h) != 5 {
		t.Fatalf("the fixture's history holds %d transactions, want 5", len(h))
	}
	return a.serve(t), a
}

func get(t testing.TB, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req) // no redirect followed
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestUIPages: each view answers with its content, escaped, and a bad
// argument gets a 4xx page naming it.
func TestUIPages(t *testing.T) {
	srv, _ := fixture(t)
	tests := []struct {
		name, path string
		code       int
		want       []string // in the page
		not        []string // not in the page
	}{
		{"overview", "/ui/", 200, []string{"8 values", `href="values?state=PENDING"`, "device busy", "#5", `href="../v1/stats"`,
			`&#34;name&#34;: &#34;etcd&#34;`}, nil},
		{"values", "/ui/values", 200, []string{`data-key="iface/eth0"`, `data-key="route/r3"`, "overrides etcd", ">etcd<", ">file<"}, nil},
		{"values by prefix", "/ui/values?prefix=route/", 200,
			[]string{`data-key="route/r1"`, `data-key="route/r2"`, `<a href="value?key=iface%2feth2" class="key">iface/eth2</a>`,
				`href="../v1/status?prefix=route%2F"`},
			[]string{`data-key="iface/eth0"`}},
		{"values by state", "/ui/values?state=PENDING", 200,
			[]string{`data-key="route/r2"`, `data-key="route/r3"`}, []string{`data-key="route/r1"`, `data-key="iface/eth9"`}},
		{"values by prefix and state", "/ui/values?prefix=iface/&state=FAILED", 200,
			[]string{`data-key="iface/eth9"`, "device busy", `<option value="FAILED" selected>`}, []string{`data-key="iface/eth0"`}},
		{"empty filters", "/ui/values?prefix=&state=", 200, []string{`data-key="iface/eth0"`}, nil},
		{"no match", "/ui/values?prefix=zzz/", 200, []string{"no value under"}, []string{`data-key=`}},
		{"bad state", "/ui/values?state=HAPPY", 400, []string{`<code id="argument">state</code>`, "&#34;HAPPY&#34; is not a state"}, nil},
		{"unknown parameter", "/ui/values?colour=red", 400, []string{`<code id="argument">colour</code>`}, nil},
		{"parameter twice", "/ui/values?prefix=a&prefix=b", 400, []string{`<code id="argument">prefix</code>`, "given 2 times"}, nil},
		{"prefix beyond the API's bound", "/ui/values?prefix=" + strings.Repeat("x", 1025), 400, []string{`<code id="argument">prefix</code>`}, nil},
		{"pending value", "/ui/value?key=route/r3", 200,
			[]string{`id="why-pending"`, `<a href="value?key=route%2fr2" class="key">route/r2</a>`, `<a href="value?key=iface%2feth2" class="key">iface/eth2</a>`,
				"not intended, a descriptor handles it", "owner</dt><dd>etcd"}, []string{"<pre>route/r3 is PENDING"}},
		{"overriding value", "/ui/value?key=route/r1", 200, []string{"owner</dt><dd>file", "overrides</dt><dd>etcd", "10.0.0.0/24"}, []string{"10.1.0.0/24"}},
		{"failed value", "/ui/value?key=iface/eth9", 200, []string{`id="error">`, "device busy", "st-FAILED"}, []string{`id="why-pending"`}},
		{"configured value", "/ui/value?key=iface/eth1", 200, []string{"mtu=1500", "(intended and applied)", `href="txn?seq=5"`}, []string{`id="why-pending"`}},
		{"unknown key", "/ui/value?key=nope/x", 404, []string{`<code id="argument">key</code>`, "nope/x", "no descriptor handles it"}, nil},
		{"key without a value", "/ui/value?key=iface/eth7", 404, []string{`<code id="argument">key</code>`, "has no value"}, nil},
		{"no key", "/ui/value", 400, []string{`<code id="argument">key</code>`, "required"}, nil},
		{"timeline", "/ui/timeline?key=iface/eth1", 200, []string{`href="txn?seq=1"`, `href="txn?seq=5"`, "UPDATE", "mtu=9000"}, nil},
		{"timeline with dependencies", "/ui/timeline?key=route/r3", 200,
			[]string{`<div class="deps"><span class="dep"><span class="label">route/r2</span> → <a href="value?key=route%2fr2" class="key">route/r2</a></span></div>`}, nil},
		{"timeline of an unknown key", "/ui/timeline?key=nope/x", 404, []string{`<code id="argument">key</code>`}, nil},
		{"history", "/ui/history", 200,
			[]string{`id="txn-1"`, `id="txn-5"`, "routes over a missing interface", "4 planned, 4 executed", "1 batch of 2", "iface/eth9: CREATE: device busy"}, nil},
		{"history, limited", "/ui/history?limit=2", 200, []string{`id="txn-5"`, `id="txn-4"`, `href="history?before=4&amp;limit=2"`}, []string{`id="txn-3"`}},
		{"history, older", "/ui/history?before=4&limit=2", 200, []string{`id="txn-3"`, `id="txn-2"`, `href="history?limit=2"`}, []string{`id="txn-4"`, `id="txn-1"`}},
		{"history, bad limit", "/ui/history?limit=0", 400, []string{`<code id="argument">limit</code>`}, nil},
		{"history, bad before", "/ui/history?before=x", 400, []string{`<code id="argument">before</code>`}, nil},
		{"transaction", "/ui/txn?seq=2", 200,
			[]string{"routes over a missing interface", `id="planned"`, `id="executed"`, "IS-PENDING", `href="txn?seq=1"`, `href="txn?seq=3"`, `href="graph?seq=2"`,
				`id="input"`, "10.2.0.0/24 dep:iface/eth2", `href="../v1/history?seq=2"`}, nil},
		{"first transaction", "/ui/txn?seq=1", 200, []string{"1 batch holding 2 operations", `href="txn?seq=2"`}, []string{`rel="prev"`}},
		{"failed transaction", "/ui/txn?seq=3", 200, []string{`id="errors"`, "device busy", `class="op failed"`, "no batch"}, []string{`rel="next" href="txn?seq=6"`}},
		{"bad seq", "/ui/txn?seq=abc", 400, []string{`<code id="argument">seq</code>`, "not a transaction number"}, nil},
		{"seq not in the history", "/ui/txn?seq=99", 404, []string{`<code id="argument">seq</code>`, "transaction 99 is not in the history"}, nil},
		{"no seq", "/ui/txn", 400, []string{`<code id="argument">seq</code>`}, nil},
		{"graph", "/ui/graph", 200, []string{"<svg", `class="graph"`, "static/graph.js", `href="../v1/graph-snapshot"`}, nil},
		{"graph of a transaction", "/ui/graph?seq=1", 200, []string{"<svg", `<tr class="touched">`, "touched 4 values"}, nil},
		{"graph, bad seq", "/ui/graph?seq=-1", 400, []string{`<code id="argument">seq</code>`}, nil},
		{"graph, seq ahead", "/ui/graph?seq=42", 404, []string{`<code id="argument">seq</code>`}, nil},
		{"unknown page", "/ui/nothing", 404, []string{`<code id="argument">path</code>`}, nil},
		{"login without a token", "/ui/login", 303, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, srv.URL+tc.path)
			if resp.StatusCode != tc.code {
				t.Errorf("GET %s: %d, want %d\n%s", tc.path, resp.StatusCode, tc.code, body)
			}
			if tc.code/100 != 3 {
				if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
					t.Errorf("GET %s: Content-Type %q", tc.path, ct)
				}
				if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
					t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %s", tc.path, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s has %s", tc.path, w)
				}
			}
			if t.Failed() {
				t.Logf("the page:\n%s", body)
			}
		})
	}
}

// TestUIShowsTheAPIsData: the page shows what the API answers every
// client, not what it would read itself: a value's status as the REST
// API gives it (its owner, why it is pending, as the API writes it).
func TestUIShowsTheAPIsData(t *testing.T) {
	srv, _ := fixture(t)
	_, rest := get(t, srv.URL+"/v1/status?key=route%2Fr3")
	for _, w := range []string{`"owner":"etcd"`, `"whyPending":["route/r3 is PENDING"`, `iface/eth2: NONEXISTENT, not intended, a descriptor handles it`} {
		if !strings.Contains(rest, w) {
			t.Fatalf("the API's status of route/r3 lacks %s: %s", w, rest)
		}
	}
	_, page := get(t, srv.URL+"/ui/value?key=route%2Fr3")
	if !strings.Contains(page, "owner</dt><dd>etcd") ||
		!regexp.MustCompile(`iface/eth2</a></span> <span class="state st-NONEXISTENT">NONEXISTENT</span>\s*<span class="facts">\(not intended, a descriptor handles it\)`).MatchString(page) {
		t.Errorf("the page does not show the API's why-pending of route/r3:\n%s", page)
	}
}

// scriptTag matches the opening of any script element.
var scriptTag = regexp.MustCompile(`(?i)<script[\s>]`)

// TestUIEscapes: a key and a value that hold markup show as text on every
// page that shows them; the only script elements are the page's own files
// (the graph's and the live updates').
func TestUIEscapes(t *testing.T) {
	srv, _ := fixture(t)
	for _, path := range []string{
		"/ui/", "/ui/values", "/ui/values?prefix=note/", "/ui/value?key=" + url.QueryEscape(evilKey),
		"/ui/timeline?key=" + url.QueryEscape(evilKey), "/ui/history", "/ui/txn?seq=4", "/ui/graph", "/ui/graph?seq=4",
		"/ui/values?prefix=" + url.QueryEscape(evilKey), "/ui/values?state=" + url.QueryEscape(evilValue),
		"/ui/value?key=" + url.QueryEscape("nope/"+evilValue),
		"/ui/search?q=note", "/ui/search?q=pwned", "/ui/diff?a=3&b=4", "/ui/diff?key=" + url.QueryEscape(evilKey),
	} {
		_, body := get(t, srv.URL+path)
		for _, bad := range []string{"<script>document", "<img", "onerror=\"", "onerror=&#34;document"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: the page holds %q unescaped", path, bad)
			}
		}
		for _, loc := range scriptTag.FindAllStringIndex(body, -1) {
			if !strings.HasPrefix(body[loc[0]:], `<script src="static/graph.js">`) && !strings.HasPrefix(body[loc[0]:], `<script src="static/live.js">`) {
				t.Errorf("GET %s: a script element: %.80s", path, body[loc[0]:])
			}
		}
	}
	// The key is on the pages, as text.
	_, body := get(t, srv.URL+"/ui/values?prefix=note/")
	if !strings.Contains(body, "note/&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;") {
		t.Errorf("the values page does not show the key as text:\n%s", body)
	}
	_, body = get(t, srv.URL+"/ui/value?key="+url.QueryEscape(evilKey))
	if !strings.Contains(body, "&lt;img src=x onerror=") {
		t.Errorf("the value page does not show the value as text:\n%s", body)
	}
}

// TestUIMount: mounted at /ui/ of a ServeMux, /ui sends to /ui/; the
// static files are served, nothing else under static/ nor deeper than
// the pages; a POST to a page is a 405.
func TestUIMount(t *testing.T) {
	srv, _ := fixture(t)
	resp, _ := get(t, srv.URL+"/ui")
	if resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want a redirect to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, want := range map[string]string{"/ui/static/ui.css": "text/css", "/ui/static/states.css": "text/css", "/ui/static/graph.js": "javascript"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), want) || body == "" {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	_, body := get(t, srv.URL+"/ui/static/states.css")
	if !strings.Contains(body, ".st-PENDING { background: #fff3bf; }") {
		t.Errorf("states.css lacks the PENDING colour:\n%s", body)
	}
	for _, path := range []string{"/ui/static/", "/ui/static/nope.css", "/ui/static/../ui.go", "/ui/a/b"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != 404 && resp.StatusCode/100 != 3 {
			t.Errorf("GET %s: %d, want 404 (or a redirect)", path, resp.StatusCode)
		}
	}
	resp, err := http.Post(srv.URL+"/ui/values", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST /ui/values: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestUIPath: mounted elsewhere (Options.Path), the pages answer there and
// link to the REST API from there; a bad Path is refused.
func TestUIPath(t *testing.T) {
	_, a := fixture(t)
	page, err := ui.New(a.svc, ui.Options{Path: "/ops/agent/", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/agent/", page)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, body := get(t, srv.URL+"/ops/agent/values?prefix=route/")
	if resp.StatusCode != 200 || !strings.Contains(body, `data-key="route/r1"`) || !strings.Contains(body, `href="../../v1/status?prefix=route%2F"`) {
		t.Errorf("GET /ops/agent/values: %d\n%s", resp.StatusCode, body)
	}
	for _, p := range []string{"ui/", "/ui", "/a//b/"} {
		if _, err := ui.New(a.svc, ui.Options{Path: p}); err == nil || !strings.Contains(err.Error(), "Options.Path") {
			t.Errorf("Path %q: %v, want an error naming Options.Path", p, err)
		}
	}
	if _, err := ui.New(nil, ui.Options{}); err == nil {
		t.Errorf("a nil service: no error")
	}
}

// TestUICutsLongLists: the values page lists at most 1000 values and the
// history page at most 50 operations of a transaction, saying what they
// left out; the transaction's page lists them all.
func TestUICutsLongLists(t *testing.T) {
	a := newAgent(t, "", func(file, etcd nb.Sink) {
		apply(t, file, nb.Update{Resync: true})
		var kvs []string
		for i := range 1001 {
			kvs = append(kvs, fmt.Sprintf("iface/e%04d", i), "up")
		}
		apply(t, etcd, nb.Update{Resync: true, Changes: set(kvs...)})
	})
	srv := a.serve(t)
	_, body := get(t, srv.URL+"/ui/values")
	if n := strings.Count(body, "<tr data-key="); n != 1000 || !strings.Contains(body, "the first 1000 of 1001 values") {
		t.Errorf("the values page lists %d values and says %q", n, regexp.MustCompile(`id="cut">[^<]*`).FindString(body))
	}
	_, body = get(t, srv.URL+"/ui/values?prefix=iface/e1")
	if n := strings.Count(body, "<tr data-key="); n != 1 || strings.Contains(body, `id="cut"`) {
		t.Errorf("the values page under iface/e1 lists %d values", n)
	}
	_, body = get(t, srv.URL+"/ui/history")
	if n := strings.Count(body, `<tr class="op`); n != 50 || !strings.Contains(body, "and 951 more") || !strings.Contains(body, "1001 planned, 1001 executed") {
		t.Errorf("the history page lists %d operations of 1001:\n%.2000s", n, body)
	}
	_, body = get(t, srv.URL+"/ui/txn?seq=1")
	if n := strings.Count(body, `<tr class="op`); n != 2002 {
		t.Errorf("the transaction's page lists %d operations, want 1001 planned and 1001 executed", n)
	}
}

// FuzzUIQuery: no path or query of the operator page makes it answer 5xx
// or anything but HTML, and no argument comes back unescaped.
func FuzzUIQuery(f *testing.F) {
	for _, s := range []string{"/ui/", "/ui/values?prefix=iface/&state=PENDING", "/ui/value?key=iface/b", "/ui/timeline?key=",
		"/ui/history?before=1&limit=500", "/ui/txn?seq=18446744073709551616", "/ui/graph?seq=1", "/ui/values?state=%3Cb%3E",
		"/ui/value?key=%3Cscript%3E", "/ui/nope", "/ui/static/ui.css", "/ui/login?x=1"} {
		f.Add(s)
	}
	a := newAgent(f, "", func(file, etcd nb.Sink) {
		apply(f, file, nb.Update{Resync: true})
		apply(f, etcd, nb.Update{Resync: true, Changes: set("iface/b", "up", "iface/c", "dep:iface/a")})
	})
	h, err := ui.New(a.svc, ui.Options{Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.Parse(target)
		if err != nil || !strings.HasPrefix(u.Path, "/ui/") || strings.HasPrefix(u.Path, "/ui/static/") {
			return
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.URL = &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("GET %s: %d %s", target, rec.Code, rec.Body.String())
		}
		if ct := rec.Header().Get("Content-Type"); rec.Code/100 != 3 && !strings.HasPrefix(ct, "text/html") && !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET %s: Content-Type %q", target, ct)
		}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") && strings.Contains(rec.Body.String(), "<script>") {
			t.Errorf("GET %s: a script element in the page", target)
		}
	})
}
