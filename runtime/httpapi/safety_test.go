package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/httpapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// TestTimelineUnknownKey: a key without a value that no descriptor
// handles is a 404 naming it, as /status answers; a key a descriptor
// handles that never had a value is an empty timeline.
func TestTimelineUnknownKey(t *testing.T) {
	srv, _ := setup(t, httpapi.Config{})
	for _, path := range []string{"/timeline?key=no/such", "/timeline?key=no/such&format=text", "/status?key=no/such"} {
		code, body := do(t, "GET", srv.URL+path, "", "")
		if code != 404 || !strings.Contains(body, `"argument":"key"`) || !strings.Contains(body, `no/such`) {
			t.Errorf("GET %s: %d %s, want 404 naming the key", path, code, body)
		}
	}
	if code, body := do(t, "GET", srv.URL+"/timeline?key=iface/never", "", ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /timeline?key=iface/never: %d %s, want 200 []", code, body)
	}
}

// TestPlanBodyIsOneObject: a body of two JSON objects, or one followed by
// anything but white space, is refused naming the body.
func TestPlanBodyIsOneObject(t *testing.T) {
	srv, _ := setup(t, httpapi.Config{})
	for _, body := range []string{
		`{"set": {"iface/a": "up"}}{"delete": ["iface/b"]}`,
		`{"set": {"iface/a": "up"}} {"delete": ["iface/b"]}`,
		`{"set": {"iface/a": "up"}}garbage`,
		`{"set": {"iface/a": "up"}}]`,
		`{"set": {"iface/a": "up"}} 1`,
	} {
		code, got := do(t, "POST", srv.URL+"/plan", body, "")
		if code != 400 || !strings.Contains(got, `"argument":"body"`) {
			t.Errorf("POST /plan %s: %d %s, want 400 naming the body", body, code, got)
		}
	}
	if code, got := do(t, "POST", srv.URL+"/plan", "{\"set\": {\"iface/a\": \"up\"}}\n\t \n", ""); code != 200 {
		t.Errorf("POST /plan with white space after the object: %d %s", code, got)
	}
}

// TestReadyzShowsProblems: the sources' problems are shown as their
// messages, not as {} (an error's JSON), at /readyz and on the page.
func TestReadyzShowsProblems(t *testing.T) {
	states := []nb.SourceState{
		{Name: "file", Loaded: false, Problem: errors.New("config.yaml:3: not a key of any model"), LastUpdate: time.Unix(0, 0)},
		{Name: "grpc", Loaded: true, Keys: 2},
	}
	srv, _ := setup(t, httpapi.Config{Ready: func() (bool, any) { return false, states }})
	code, body := do(t, "GET", srv.URL+"/readyz", "", "")
	var got struct {
		Ready  bool
		Detail []map[string]any
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 503 || len(got.Detail) != 2 {
		t.Fatalf("/readyz: %d %s (%v)", code, body, err)
	}
	if p := got.Detail[0]["Problem"]; p != "config.yaml:3: not a key of any model" {
		t.Errorf("/readyz: the file source's problem is %v:\n%s", p, body)
	}
	if _, ok := got.Detail[1]["Problem"]; ok {
		t.Errorf("/readyz: the grpc source has no problem, yet:\n%s", body)
	}
	if code, page := do(t, "GET", srv.URL+"/ui/", "", ""); code != 200 || !strings.Contains(page, "not a key of any model") {
		t.Errorf("/ui/: %d, the problem not shown:\n%s", code, page)
	}

	srv, _ = setup(t, httpapi.Config{Ready: func() (bool, any) { return false, errors.New("the store cannot be read") }})
	if code, body := do(t, "GET", srv.URL+"/readyz", "", ""); code != 503 || !strings.Contains(body, `"detail": "the store cannot be read"`) {
		t.Errorf("/readyz with an error: %d %s", code, body)
	}
}

// TestBounds: every query parameter beyond apilimits.MaxKeyLen, and a
// /plan beyond apilimits.MaxCommitKeys values, is a 400 naming it.
func TestBounds(t *testing.T) {
	srv, _ := setup(t, httpapi.Config{})
	long := strings.Repeat("x", apilimits.MaxKeyLen+1)
	for _, c := range []struct{ method, path, arg string }{
		{"GET", "/status?key=iface/" + long, "key"},
		{"GET", "/status?prefix=" + long, "prefix"},
		{"GET", "/status?descriptor=" + long, "descriptor"},
		{"GET", "/history?since=" + long, "since"},
		{"GET", "/history?until=" + long, "until"},
		{"GET", "/history?seq=" + long, "seq"},
		{"GET", "/timeline?key=" + long, "key"},
		{"GET", "/timeline?key=iface/b&at=" + long, "at"},
		{"GET", "/graph?time=" + long, "time"},
		{"GET", "/dump?prefix=" + long, "prefix"},
		{"GET", "/dump?descriptor=" + long, "descriptor"},
		{"GET", "/stats?prefix=" + long, "prefix"},
		{"GET", "/stats?flag=" + long, "flag"},
		{"GET", "/ui/values?prefix=" + long, "prefix"},
		{"GET", "/ui/value?key=" + long, "key"},
		{"GET", "/ui/timeline?key=" + long, "key"},
		{"POST", "/resync/downstream?retry=" + long, "retry"},
		{"POST", "/plan?format=" + long, "format"},
	} {
		code, body := do(t, c.method, srv.URL+c.path, "", "")
		named := `"argument":"` + c.arg + `"`
		if strings.HasPrefix(c.path, "/ui/") {
			// A page names it in its text.
			named = c.arg + ": "
		}
		if code != 400 || !strings.Contains(body, named) || !strings.Contains(body, "the bound") {
			t.Errorf("%s %s...: %d %.200s, want 400 naming %s", c.method, c.path[:min(len(c.path), 40)], code, body, c.arg)
		}
	}
	code, body := do(t, "GET", srv.URL+"/ui/history?limit="+fmt.Sprint(apilimits.MaxHistoryPage+1), "", "")
	if code != 400 || !strings.Contains(body, "limit") {
		t.Errorf("/ui/history beyond its limit: %d %.200s", code, body)
	}
	var b strings.Builder
	b.WriteString(`{"delete": [`)
	for i := range apilimits.MaxCommitKeys + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"iface/%d"`, i)
	}
	b.WriteString("]}")
	if code, body := do(t, "POST", srv.URL+"/plan", b.String(), ""); code != 400 || !strings.Contains(body, `"argument":"set, delete"`) {
		t.Errorf("/plan beyond %d keys: %d %.200s", apilimits.MaxCommitKeys, code, body)
	}
	if code, body := do(t, "POST", srv.URL+"/plan", `{"delete": ["iface/`+long+`"]}`, ""); code != 400 || !strings.Contains(body, `"argument":"delete[0]"`) {
		t.Errorf("/plan with a long key: %d %.200s", code, body)
	}
	if code, body := do(t, "POST", srv.URL+"/plan", `{"set": {"iface/`+long+`": "up"}}`, ""); code != 400 || !strings.Contains(body, `"argument":"set"`) {
		t.Errorf("/plan with a long key: %d %.200s", code, body)
	}
}
