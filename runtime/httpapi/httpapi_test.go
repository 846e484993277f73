package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	linuxif "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/httpapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	nbfile "github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type owners struct{}

func (owners) Owner(key string) (string, []string) {
	if strings.HasPrefix(key, "route/") {
		return "file", []string{"etcd"}
	}
	return "etcd", nil
}

// setup serves a scheduler with two harness descriptors: iface/b exists,
// route/r1 waits for iface/a (PENDING).
func setup(t *testing.T, cfg httpapi.Config) (*httptest.Server, *scheduler.Scheduler) {
	t.Helper()
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	sb := kvtest.NewSB()
	for _, name := range []string{"iface", "route"} {
		d, err := sb.Descriptor(kvtest.Config{Name: name, KeyTemplate: name + "/{name}"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Txn().Set("iface/b", kvtest.Value("up")).Set("route/r1", kvtest.Value("v=1 dep:iface/a")).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.Scheduler = s
	cfg.Logger = quiet
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, s
}

func do(t *testing.T, method, url, body, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	srv, _ := setup(t, httpapi.Config{Owners: owners{}})
	dot := "needs dot"
	if _, err := exec.LookPath("dot"); err == nil {
		dot = "<svg"
	}
	tests := []struct {
		method, path, body string
		code               int
		want               string // in the body
	}{
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/readyz", "", 200, `"ready": true`},
		{"GET", "/", "", 200, "/status"},
		{"GET", "/status?key=route/r1", "", 200, `"state": "PENDING"`},
		{"GET", "/status?key=route/r1", "", 200, `"owner": "file"`},
		{"GET", "/status?key=route/r1", "", 200, `"overridden": [`},
		{"GET", "/status?key=route/r1", "", 200, `iface/a`},
		{"GET", "/status?key=route/r1&format=text", "", 200, "route/r1 PENDING"},
		{"GET", "/status?prefix=iface/", "", 200, `"key": "iface/b"`},
		{"GET", "/status?descriptor=route", "", 200, `"key": "route/r1"`},
		{"GET", "/status?key=nope/x", "", 404, `"argument":"key"`},
		{"GET", "/status?descriptor=nope", "", 404, `no descriptor \"nope\"`},
		{"GET", "/status?key=a&prefix=b", "", 400, `one of key, prefix and descriptor`},
		{"GET", "/status?bogus=1", "", 400, `"argument":"bogus"`},
		{"GET", "/status?format=xml", "", 400, `"argument":"format"`},
		{"GET", "/history", "", 200, `"seq": 1`},
		{"GET", "/history?seq=1", "", 200, `"kind": "NB transaction"`},
		{"GET", "/history?seq=1&format=text", "", 200, "#1 NB transaction"},
		{"GET", "/history?since=1h&until=0s", "", 200, `"seq": 1`},
		{"GET", "/history?since=2000-01-01T00:00:00Z", "", 200, `"seq": 1`},
		{"GET", "/history?seq=abc", "", 400, `seq: \"abc\" is not a transaction number`},
		{"GET", "/history?seq=99", "", 404, `#99`},
		{"GET", "/history?since=yesterday", "", 400, `"argument":"since"`},
		{"GET", "/history?since=1m&until=1h", "", 400, `before since`},
		{"GET", "/timeline?key=iface/b", "", 200, `"op": "CREATE"`},
		{"GET", "/timeline?key=iface/b&format=text", "", 200, "#1"},
		{"GET", "/timeline", "", 400, `key: required`},
		{"GET", "/timeline?key=iface/b&at=2000-01-01T00:00:00Z", "", 200, `[]`},
		{"GET", "/timeline?key=iface/b&at=0s", "", 200, `"op": "CREATE"`},
		{"GET", "/timeline?key=iface/b&at=soon", "", 400, `"argument":"at"`},
		{"GET", "/graph?format=json&time=0s", "", 200, `"seq": 1`},
		{"GET", "/graph?format=json&time=2000-01-01T00:00:00Z", "", 404, `"argument":"time"`},
		{"GET", "/graph?seq=1&time=0s", "", 400, `seq or time`},
		{"GET", "/stats", "", 200, `"PENDING": 1`},
		{"GET", "/stats?prefix=route/", "", 200, `"IS-PENDING": 1`},
		{"GET", "/stats?flag=DERIVED", "", 200, `"DERIVED": 0`},
		{"GET", "/stats?flag=SHINY", "", 400, `"argument":"flag"`},
		{"GET", "/graph?format=dot", "", 200, "digraph"},
		{"GET", "/graph?format=dot&seq=1", "", 200, "digraph"},
		{"GET", "/graph?format=json", "", 200, `"nodes"`},
		{"GET", "/graph?seq=0", "", 400, `"argument":"seq"`},
		{"GET", "/graph?seq=77", "", 404, `"argument":"seq"`},
		{"GET", "/graph?format=png", "", 400, `"argument":"format"`},
		{"GET", "/dump?view=intended", "", 200, `"key": "route/r1"`},
		{"GET", "/dump?view=scheduler&descriptor=iface", "", 200, `"state": "CONFIGURED"`},
		{"GET", "/dump?view=southbound", "", 501, "southbound"},
		{"GET", "/dump?view=other", "", 400, `"argument":"view"`},
		{"GET", "/dump?descriptor=x", "", 404, `"argument":"descriptor"`},
		{"GET", "/models", "", 200, `"keyTemplate": "route/{name}"`},
		{"GET", "/models", "", 200, `"message": "google.protobuf.StringValue"`},
		{"GET", "/metrics", "", 404, "no metrics"},
		{"POST", "/status", "", 405, "use GET"},
		{"GET", "/plan", "", 405, "use POST"},
		{"GET", "/nowhere", "", 404, "no endpoint"},
		{"POST", "/plan", `{"set": {"iface/a": "up"}}`, 200, `"key": "route/r1"`},
		{"POST", "/plan", `{"delete": ["iface/b"]}`, 200, `"op": "DELETE"`},
		{"POST", "/plan", `{"set": {"nope/x": "up"}}`, 400, `unknown key`},
		{"POST", "/plan", `{"set": {"iface/a": 5}}`, 400, `"argument":"set.iface/a"`},
		{"POST", "/plan", `{"sett": {}}`, 400, `"argument":"body"`},
		{"POST", "/plan", `{}`, 400, `nothing to plan`},
		{"POST", "/plan", `[`, 400, `"argument":"body"`},
		{"POST", "/plan?format=file", "iface/a: up\n", 501, `"argument":"format"`},
		{"POST", "/plan?format=yaml", "", 400, `"argument":"format"`},
		{"POST", "/resync/downstream?verbose=true", "", 200, `"executed"`},
		{"POST", "/resync/downstream?retry=maybe", "", 400, `"argument":"retry"`},
	}
	if dot == "<svg" {
		tests = append(tests, struct {
			method, path, body string
			code               int
			want               string
		}{"GET", "/graph?format=svg&seq=1", "", 200, "<svg"})
	} else if os.Getenv("CI") != "" {
		t.Error("graphviz's dot is not installed (make tools installs it)")
	}
	for _, tc := range tests {
		code, body := do(t, tc.method, srv.URL+tc.path, tc.body, "")
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s %s: %d %s\nwant %d with %q", tc.method, tc.path, tc.body, code, body, tc.code, tc.want)
		}
	}
	// A plan preview executes nothing.
	code, body := do(t, "GET", srv.URL+"/status?key=route/r1", "", "")
	if code != 200 || !strings.Contains(body, "PENDING") {
		t.Errorf("after the plan preview route/r1 is %s", body)
	}
}

func TestTokenGuardsPosts(t *testing.T) {
	srv, _ := setup(t, httpapi.Config{Token: "s3cret"})
	if code, _ := do(t, "POST", srv.URL+"/resync/downstream", "", ""); code != 401 {
		t.Errorf("POST without a token: %d, want 401", code)
	}
	if code, _ := do(t, "POST", srv.URL+"/resync/downstream", "", "wrong"); code != 401 {
		t.Errorf("POST with a wrong token: %d, want 401", code)
	}
	if code, body := do(t, "POST", srv.URL+"/resync/downstream", "", "s3cret"); code != 200 {
		t.Errorf("POST with the token: %d %s", code, body)
	}
	if code, _ := do(t, "GET", srv.URL+"/status", "", ""); code != 200 {
		t.Errorf("GET without a token: %d, want 200", code)
	}
}

func TestReadyz(t *testing.T) {
	srv, _ := setup(t, httpapi.Config{Ready: func() (bool, any) { return false, map[string]string{"file": "loading"} }})
	code, body := do(t, "GET", srv.URL+"/readyz", "", "")
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 503 || got["ready"] != false {
		t.Errorf("/readyz not ready: %d %s", code, body)
	}
}

// FuzzQuery: no query or path makes the API answer 5xx or panic.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"/status?key=route/r1", "/history?seq=1&format=text", "/history?since=%zz", "/graph?seq=18446744073709551616",
		"/dump?view=southbound&prefix=a&descriptor=b", "/timeline?key=", "/status?key=a;b", "/models?x=1", "/graph?format=json&seq=1"} {
		f.Add(s)
	}
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close(context.Background())
	sb := kvtest.NewSB()
	d, _ := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	_ = s.Register(d)
	_, _ = s.Txn().Set("iface/b", kvtest.Value("up")).Commit(context.Background())
	h, err := httpapi.New(httpapi.Config{Scheduler: s, Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.Parse(target)
		if err != nil || u.Path == "" || u.Path[0] != '/' {
			return
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.URL = &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != 501 && rec.Code != 503 {
			t.Errorf("GET %s: %d %s", target, rec.Code, rec.Body.String())
		}
	})
}

type nopRoutes struct{}

func (nopRoutes) Create(context.Context, linuxl3.RouteKey, *linuxl3.Route) (struct{}, error) {
	return struct{}{}, nil
}
func (nopRoutes) Delete(context.Context, linuxl3.RouteKey, *linuxl3.Route, struct{}) error {
	return nil
}

type nopInterfaces struct{}

func (nopInterfaces) Create(context.Context, linuxif.InterfaceKey, *linuxif.Interface) (struct{}, error) {
	return struct{}{}, nil
}
func (nopInterfaces) Delete(context.Context, linuxif.InterfaceKey, *linuxif.Interface, struct{}) error {
	return nil
}

// TestModelsShowTheSchema: /models says what the schema says of a field:
// the model it references, the values it derives, a re-create.
func TestModelsShowTheSchema(t *testing.T) {
	s, err := scheduler.New(scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d, err := linuxl3.NewRouteDescriptor[struct{}](nopRoutes{})
	if err != nil {
		t.Fatal(err)
	}
	// Routes are read after interfaces (RetrieveDependencies): those
	// are registered with them.
	ifd, err := linuxif.NewInterfaceDescriptor[struct{}](nopInterfaces{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(ifd, d); err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Scheduler: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/models", nil))
	for _, want := range []string{`"keyTemplate": "linux/route/{outgoing_interface:name}/{dst_network:ipprefix}"`, `"ref": "linux.interfaces.v1.Interface"`, `"recreate": "true"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/models lacks %s:\n%s", want, rec.Body.String())
		}
	}
}

// TestPlanFile: POST /plan?format=file answers with what Config.PlanFile
// (the file source's apply, as a dry run) plans, and its parse errors are
// 400s naming the body. Without PlanFile it is a 501 (in TestAPI): no other
// code may stand in for the apply.
func TestPlanFile(t *testing.T) {
	var s *scheduler.Scheduler
	srv, s0 := setup(t, httpapi.Config{
		PlanFile: func(ctx context.Context, name string, data []byte) (*scheduler.Result, error) {
			changes, err := nbfile.Parse(name, data, nb.SchedulerModels(s))
			if err != nil {
				return nil, err
			}
			txn := s.Txn(scheduler.DryRun())
			for _, c := range changes {
				txn.Set(c.Key, c.Value)
			}
			return txn.Commit(ctx)
		},
	})
	s = s0
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"planned", "iface/a: up\nroute/r1: \"v=2 dep:iface/a\"\n", 200, `"flags": "WAS-PENDING"`},
		{"syntax", "iface/a: [\n", 400, `body:1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, "POST", srv.URL+"/plan?format=file", tc.body, "")
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("POST /plan?format=file %q: %d %s, want %d with %q", tc.body, code, body, tc.code, tc.want)
			}
		})
	}
}
