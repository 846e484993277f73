package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/httpapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The keys of the UI fixture.
const (
	evilKey = `note/<script>document.title='pwned'</script>`
	// evilValue would run a script if a page wrote it unescaped.
	evilValue = `<img src=x onerror="document.title='pwned'">`
)

// uiOwners says that routes come from the file, everything else from etcd.
type uiOwners struct{}

func (uiOwners) Owner(key string) (string, []string) {
	if strings.HasPrefix(key, "route/") {
		return "file", []string{"etcd"}
	}
	return "etcd", nil
}

// uiFixture serves a scheduler whose history holds five transactions:
//
//	#1 creates iface/eth0, iface/eth1, route/r0 and route/r1 (on eth0; the routes in a batch)
//	#2 sets route/r2 (waits for iface/eth2: PENDING) and route/r3 (waits for route/r2)
//	#3 fails to create iface/eth9 (FAILED: device busy)
//	#4 sets a value whose key and text would inject a script
//	#5 updates iface/eth1
func uiFixture(t *testing.T) (*httptest.Server, *scheduler.Scheduler) {
	t.Helper()
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	sb := kvtest.NewSB()
	for _, c := range []kvtest.Config{
		{Name: "iface", KeyTemplate: "iface/{name}"},
		{Name: "route", KeyTemplate: "route/{name}", Batch: true},
		{Name: "note", KeyPrefix: "note/"},
	} {
		d, err := sb.Descriptor(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	commit := func(txn *scheduler.Txn) {
		t.Helper()
		if _, err := txn.Commit(ctx); err != nil && !strings.Contains(err.Error(), "device busy") {
			t.Fatal(err)
		}
	}
	commit(s.Txn(scheduler.Description("interfaces and a route")).
		Set("iface/eth0", kvtest.Value("up")).Set("iface/eth1", kvtest.Value("up mtu=9000")).
		Set("route/r0", kvtest.Value("10.9.0.0/24 dep:iface/eth0")).Set("route/r1", kvtest.Value("10.0.0.0/24 dep:iface/eth0")))
	commit(s.Txn(scheduler.Description("routes over a missing interface")).
		Set("route/r2", kvtest.Value("10.2.0.0/24 dep:iface/eth2")).Set("route/r3", kvtest.Value("10.3.0.0/24 dep:route/r2")))
	sb.Fail("iface/eth9", kvtest.Failure{Op: "create", Err: errors.New("device busy"), Terminal: true})
	commit(s.Txn().Set("iface/eth9", kvtest.Value("up")))
	commit(s.Txn().Set(evilKey, kvtest.Value(evilValue)))
	commit(s.Txn().Set("iface/eth1", kvtest.Value("up mtu=1500")))
	h, err := httpapi.New(httpapi.Config{Scheduler: s, Owners: uiOwners{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, s
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
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
	srv, _ := uiFixture(t)
	tests := []struct {
		name, path string
		code       int
		want       []string // in the page
		not        []string // not in the page
	}{
		{"overview", "/ui/", 200, []string{"8 values", `href="values?state=PENDING"`, "device busy", "#5"}, nil},
		{"values", "/ui/values", 200, []string{`data-key="iface/eth0"`, `data-key="route/r3"`, "overrides etcd", ">etcd<", ">file<"}, nil},
		{"values by prefix", "/ui/values?prefix=route/", 200,
			[]string{`data-key="route/r1"`, `data-key="route/r2"`, `<a href="value?key=iface%2feth2" class="key">iface/eth2</a>`},
			[]string{`data-key="iface/eth0"`}},
		{"values by state", "/ui/values?state=PENDING", 200,
			[]string{`data-key="route/r2"`, `data-key="route/r3"`}, []string{`data-key="route/r1"`, `data-key="iface/eth9"`}},
		{"values by prefix and state", "/ui/values?prefix=iface/&state=FAILED", 200,
			[]string{`data-key="iface/eth9"`, "device busy", `<option value="FAILED" selected>`}, []string{`data-key="iface/eth0"`}},
		{"empty filters", "/ui/values?prefix=&state=", 200, []string{`data-key="iface/eth0"`}, nil},
		{"no match", "/ui/values?prefix=zzz/", 200, []string{"no value under"}, []string{`data-key=`}},
		{"bad state", "/ui/values?state=HAPPY", 400, []string{`<code id="argument">state</code>`, "&#34;HAPPY&#34; is not a state"}, nil},
		{"unknown parameter", "/ui/values?colour=red", 400, []string{`<code id="argument">colour</code>`}, nil},
		{"pending value", "/ui/value?key=route/r3", 200,
			[]string{`id="why-pending"`, `<a href="value?key=route%2fr2" class="key">route/r2</a>`, `<a href="value?key=iface%2feth2" class="key">iface/eth2</a>`,
				"not intended, a descriptor handles it", "owner</dt><dd>file"}, nil},
		{"failed value", "/ui/value?key=iface/eth9", 200, []string{`id="error">`, "device busy", "st-FAILED"}, []string{`id="why-pending"`}},
		{"configured value", "/ui/value?key=iface/eth1", 200, []string{"mtu=1500", "(intended and applied)", `href="txn?seq=5"`}, []string{`id="why-pending"`}},
		{"unknown key", "/ui/value?key=nope/x", 404, []string{`<code id="argument">key</code>`, "nope/x"}, nil},
		{"no key", "/ui/value", 400, []string{`<code id="argument">key</code>`, "required"}, nil},
		{"timeline", "/ui/timeline?key=iface/eth1", 200, []string{`href="txn?seq=1"`, `href="txn?seq=5"`, "UPDATE", "mtu=9000"}, nil},
		{"timeline of an unknown key", "/ui/timeline?key=nope/x", 404, []string{`<code id="argument">key</code>`}, nil},
		{"history", "/ui/history", 200,
			[]string{`id="txn-1"`, `id="txn-5"`, "interfaces and a route", "4 planned, 4 executed", "1 batch of 2", "iface/eth9: CREATE: device busy"}, nil},
		{"history, limited", "/ui/history?limit=2", 200, []string{`id="txn-5"`, `id="txn-4"`, `href="history?before=4&amp;limit=2"`}, []string{`id="txn-3"`}},
		{"history, older", "/ui/history?before=4&limit=2", 200, []string{`id="txn-3"`, `id="txn-2"`, `href="history?limit=2"`}, []string{`id="txn-4"`, `id="txn-1"`}},
		{"history, bad limit", "/ui/history?limit=0", 400, []string{`<code id="argument">limit</code>`}, nil},
		{"history, bad before", "/ui/history?before=x", 400, []string{`<code id="argument">before</code>`}, nil},
		{"transaction", "/ui/txn?seq=2", 200,
			[]string{"routes over a missing interface", `id="planned"`, `id="executed"`, "IS-PENDING", `href="txn?seq=1"`, `href="txn?seq=3"`, `href="graph?seq=2"`}, nil},
		{"failed transaction", "/ui/txn?seq=3", 200, []string{`id="errors"`, "device busy", `class="op failed"`}, nil},
		{"bad seq", "/ui/txn?seq=abc", 400, []string{`<code id="argument">seq</code>`, "not a transaction number"}, nil},
		{"seq not in the history", "/ui/txn?seq=99", 404, []string{`<code id="argument">seq</code>`, "#99"}, nil},
		{"no seq", "/ui/txn", 400, []string{`<code id="argument">seq</code>`}, nil},
		{"graph", "/ui/graph", 200, []string{"<svg", `class="graph"`, "static/graph.js"}, nil},
		{"graph of a transaction", "/ui/graph?seq=1", 200, []string{"<svg", `<tr class="touched">`, "touched 4 values"}, nil},
		{"graph, bad seq", "/ui/graph?seq=-1", 400, []string{`<code id="argument">seq</code>`}, nil},
		{"graph, seq ahead", "/ui/graph?seq=42", 404, []string{`<code id="argument">seq</code>`}, nil},
		{"unknown page", "/ui/nothing", 404, []string{`<code id="argument">path</code>`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, srv.URL+tc.path)
			if resp.StatusCode != tc.code {
				t.Errorf("GET %s: %d, want %d\n%s", tc.path, resp.StatusCode, tc.code, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("GET %s: Content-Type %q", tc.path, ct)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
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

// scriptTag matches the opening of any script element.
var scriptTag = regexp.MustCompile(`(?i)<script[\s>]`)

// TestUIEscapes: a key and a value that hold markup show as text on every
// page that shows them; the only script element is the graph's own file.
func TestUIEscapes(t *testing.T) {
	srv, _ := uiFixture(t)
	for _, path := range []string{
		"/ui/", "/ui/values", "/ui/values?prefix=note/", "/ui/value?key=" + url.QueryEscape(evilKey),
		"/ui/timeline?key=" + url.QueryEscape(evilKey), "/ui/history", "/ui/txn?seq=4", "/ui/graph", "/ui/graph?seq=4",
		"/ui/values?prefix=" + url.QueryEscape(evilKey), "/ui/values?state=" + url.QueryEscape(evilValue),
		"/ui/value?key=" + url.QueryEscape("nope/"+evilValue),
	} {
		_, body := get(t, srv.URL+path)
		for _, bad := range []string{"<script>document", "<img", "onerror=\"", "onerror=&#34;document"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: the page holds %q unescaped", path, bad)
			}
		}
		scripts := scriptTag.FindAllStringIndex(body, -1)
		for _, loc := range scripts {
			if !strings.HasPrefix(body[loc[0]:], `<script src="static/graph.js">`) {
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

// TestUIRoot: GET / sends a browser to the page and keeps answering the
// API's index to everything else; the index names the page.
func TestUIRoot(t *testing.T) {
	srv, _ := uiFixture(t)
	resp, _ := get(t, srv.URL+"/", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / from a browser: %d to %q, want 302 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := get(t, srv.URL+"/")
	if resp.StatusCode != 200 || !strings.Contains(body, "/status") || !strings.Contains(body, "GET  /ui/") {
		t.Errorf("GET / from curl: %d %s", resp.StatusCode, body)
	}
	resp, _ = get(t, srv.URL+"/ui")
	if resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want a redirect to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, want := range map[string]string{"/ui/static/ui.css": "text/css", "/ui/static/states.css": "text/css", "/ui/static/graph.js": "javascript"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), want) || body == "" {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	_, body = get(t, srv.URL+"/ui/static/states.css")
	if !strings.Contains(body, ".st-PENDING { background: #fff3bf; }") {
		t.Errorf("states.css lacks the PENDING colour:\n%s", body)
	}
	for _, path := range []string{"/ui/static/", "/ui/static/nope.css", "/ui/static/../httpapi.go", "/ui/a/b"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != 404 && resp.StatusCode/100 != 3 {
			t.Errorf("GET %s: %d, want 404 (or a redirect)", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/ui/values", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST /ui/values: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestUICutsLongLists: the values page lists at most 1000 values and the
// history page at most 50 operations of a transaction, saying what they
// left out; the transaction's page lists them all.
func TestUICutsLongLists(t *testing.T) {
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	d, err := kvtest.NewSB().Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	txn := s.Txn()
	for i := range 1001 {
		txn.Set(fmt.Sprintf("iface/e%04d", i), kvtest.Value("up"))
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Scheduler: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

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
		"/ui/value?key=%3Cscript%3E", "/ui/nope", "/ui/static/ui.css"} {
		f.Add(s)
	}
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close(context.Background())
	d, _ := kvtest.NewSB().Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	_ = s.Register(d)
	_, _ = s.Txn().Set("iface/b", kvtest.Value("up")).Set("iface/c", kvtest.Value("dep:iface/a")).Commit(context.Background())
	h, err := httpapi.New(httpapi.Config{Scheduler: s, Logger: quiet})
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
