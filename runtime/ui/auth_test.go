package ui_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/ui"
)

const token = "s3cret token/+="

func loaded(t testing.TB) func(file, etcd nb.Sink) {
	return func(file, etcd nb.Sink) {
		apply(t, file, nb.Update{Resync: true})
		apply(t, etcd, nb.Update{Resync: true, Changes: set("iface/eth0", "up", "route/r1", "10.1.0.0/24 dep:iface/eth9")})
	}
}

// post sends a form, following no redirect.
func post(t *testing.T, target string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
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

// TestUIToken: with the API's token set, every page needs it, as a bearer
// token or as the cookie that the login form sets on the right token; the
// login form sends the browser on to the page it asked for, and to no
// other place; a login posted by another site is refused; the cookie can
// be forgotten.
func TestUIToken(t *testing.T) {
	a := newAgent(t, token, loaded(t))
	srv := a.serve(t)
	for _, path := range []string{"/ui/", "/ui/values", "/ui/value?key=iface/eth0", "/ui/history", "/ui/txn?seq=1", "/ui/graph", "/ui/timeline?key=iface/eth0", "/ui/nothing"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer" || !strings.Contains(body, `<form class="filter" method="post" action="login" id="login">`) ||
			strings.Contains(body, "iface/eth0</") {
			t.Errorf("GET %s without the token: %d, WWW-Authenticate %q\n%s", path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if resp, body := get(t, srv.URL+path, "Authorization", "Bearer nope"); resp.StatusCode != 401 || !strings.Contains(body, "the bearer token is wrong") {
			t.Errorf("GET %s with a wrong token: %d\n%s", path, resp.StatusCode, body)
		}
	}
	// The static files need none (they are the same on every agent).
	if resp, _ := get(t, srv.URL+"/ui/static/ui.css"); resp.StatusCode != 200 {
		t.Errorf("GET /ui/static/ui.css without the token: %d", resp.StatusCode)
	}
	resp, body := get(t, srv.URL+"/ui/values", "Authorization", "Bearer "+token)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-key="iface/eth0"`) {
		t.Errorf("GET /ui/values with the bearer token: %d\n%s", resp.StatusCode, body)
	}
	// A browser cannot send the token to the REST API: no link there.
	if strings.Contains(body, `class="api"`) || !strings.Contains(body, "forget the token") {
		t.Errorf("the page with a token links to the API, or offers no way to forget the token:\n%s", body)
	}

	// The form of the page asked for names it.
	_, body = get(t, srv.URL+"/ui/values?state=PENDING")
	if !strings.Contains(body, `name="next" value="values?state=PENDING"`) {
		t.Errorf("the login form does not come back to the page asked for:\n%s", body)
	}
	resp, body = post(t, srv.URL+"/ui/login", url.Values{"token": {"nope"}, "next": {"values"}})
	if resp.StatusCode != 401 || !strings.Contains(body, "the token is wrong") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("a login with a wrong token: %d, Set-Cookie %q\n%s", resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
	}
	resp, _ = post(t, srv.URL+"/ui/login", url.Values{"token": {token}, "next": {"values?state=PENDING"}})
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "./values?state=PENDING" || len(cookies) != 1 {
		t.Fatalf("a login with the token: %d to %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), cookies)
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "" || strings.Contains(c.Value, "s3cret") {
		t.Errorf("the cookie: %+v", c)
	}
	resp, body = get(t, srv.URL+"/ui/values?state=PENDING", "Cookie", c.String())
	if resp.StatusCode != 200 || !strings.Contains(body, `data-key="route/r1"`) {
		t.Errorf("GET /ui/values with the cookie: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := get(t, srv.URL+"/ui/values", "Cookie", cookieNamed(c.Name, "bm9wZQ")); resp.StatusCode != 401 {
		t.Errorf("GET /ui/values with the cookie of a wrong token: %d", resp.StatusCode)
	}
	// Nowhere but a page of the operator page's own.
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/v1/status", `\\evil.example`, "../v1/status", "values\r\nX-A: b"} {
		resp, _ := post(t, srv.URL+"/ui/login", url.Values{"token": {token}, "next": {next}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "./" {
			t.Errorf("a login to next=%q: %d to %q, want ./", next, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, body = post(t, srv.URL+"/ui/login", url.Values{"token": {token}}, "Origin", "http://evil.example")
	if resp.StatusCode != 403 || resp.Header.Get("Set-Cookie") != "" || !strings.Contains(body, `<code id="argument">origin</code>`) {
		t.Errorf("a login posted by another site: %d, Set-Cookie %q\n%s", resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
	}
	resp, _ = post(t, srv.URL+"/ui/login", url.Values{"token": {token}}, "Origin", srv.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a login posted by the page itself (its Origin): %d", resp.StatusCode)
	}
	resp, _ = post(t, srv.URL+"/ui/login", url.Values{"forget": {"1"}}, "Cookie", c.String())
	if cs := resp.Cookies(); resp.StatusCode != 200 || len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("forget: %d, cookies %v", resp.StatusCode, cs)
	}
	if resp, _ := get(t, srv.URL+"/ui/login"); resp.StatusCode != 200 {
		t.Errorf("GET /ui/login: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("DELETE", srv.URL+"/ui/login", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 405 {
		t.Errorf("DELETE /ui/login: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

func cookieNamed(name, value string) string { return (&http.Cookie{Name: name, Value: value}).String() }

// onlyService hides every method of a service but the page's: not an
// Authorizer.
type onlyService struct{ ui.Service }

// TestUIOptionsToken: over a service that checks no token of its own (a
// plain ui.Service), Options.Token guards the page alone.
func TestUIOptionsToken(t *testing.T) {
	a := newAgent(t, "", loaded(t))
	page, err := ui.New(onlyService{a.svc}, ui.Options{Token: token, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(page)
	defer srv.Close()
	if resp, _ := get(t, srv.URL+"/ui/values"); resp.StatusCode != 401 {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/ui/values", "Authorization", "Bearer x"+token); resp.StatusCode != 401 {
		t.Errorf("with a wrong token: %d", resp.StatusCode)
	}
	if resp, body := get(t, srv.URL+"/ui/values", "Authorization", "Bearer "+token); resp.StatusCode != 200 || !strings.Contains(body, `data-key="iface/eth0"`) {
		t.Errorf("with the token: %d\n%s", resp.StatusCode, body)
	}
	// Without a token anywhere, the login form is not needed.
	open, err := ui.New(onlyService{a.svc}, ui.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	open.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/login", nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "./" {
		t.Errorf("GET /ui/login without a token: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
}

// TestUIRemoteAgent: the page as a client of a remote agent's API (a
// Connect client): it forwards the page's credential as the bearer token
// of its calls, and shows the login form when the agent refuses a call.
func TestUIRemoteAgent(t *testing.T) {
	a := newAgent(t, token, loaded(t))
	h, err := a.svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	apiSrv := httptest.NewServer(h)
	defer apiSrv.Close()
	client := apiv1connect.NewAgentServiceClient(apiSrv.Client(), apiSrv.URL)
	page, err := ui.New(client, ui.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(page)
	defer srv.Close()
	if resp, body := get(t, srv.URL+"/ui/values"); resp.StatusCode != 401 || !strings.Contains(body, "authorization: a bearer token is required") {
		t.Errorf("the page of a remote agent, without the token: %d\n%s", resp.StatusCode, body)
	}
	resp, body := get(t, srv.URL+"/ui/value?key=route%2Fr1", "Authorization", "Bearer "+token)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="why-pending"`) || !strings.Contains(body, "10.1.0.0/24") {
		t.Errorf("the page of a remote agent, with the token: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := get(t, srv.URL+"/ui/graph", "Authorization", "Bearer "+token); resp.StatusCode != 200 || !strings.Contains(body, "<svg") {
		t.Errorf("the graph of a remote agent: %d\n%s", resp.StatusCode, body)
	}
}

// TestUIBehindServer: mounted in the API's Server (ServerConfig.Mount) on
// the tokenless default, the page is behind the Server's refusal of other
// sites' pages: a foreign Host (DNS rebinding) or Origin is refused, and
// the page's own forms (GET, relative, so of the agent's own Host and
// Origin) pass.
func TestUIBehindServer(t *testing.T) {
	a := newAgent(t, "", loaded(t))
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
	defer func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + srv.Addr()
	// The filter form of the values page, as a browser submits it.
	if resp, body := get(t, base+"/ui/values?prefix=route%2F&state=", "Origin", base); resp.StatusCode != 200 || !strings.Contains(body, `data-key="route/r1"`) {
		t.Errorf("the values page's form: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := get(t, base+"/ui/"); resp.StatusCode != 200 {
		t.Errorf("GET /ui/: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/v1/status?key=iface%2Feth0"); resp.StatusCode != 200 {
		t.Errorf("the API beside the page: %d", resp.StatusCode)
	}
	if resp, body := get(t, base+"/ui/values", "Origin", "http://evil.example"); resp.StatusCode != 403 || !strings.Contains(body, "origin") {
		t.Errorf("GET /ui/values with another site's Origin: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", base+"/ui/values", nil)
	req.Host = "rebound.example:80"
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("GET /ui/values with a foreign Host: %d", resp.StatusCode)
	}
	// A pattern ServeMux refuses is an error of NewServer.
	_, err = api.NewServer(a.svc, api.ServerConfig{Address: "127.0.0.1:0", Mount: map[string]http.Handler{"/": page}})
	if err == nil || !strings.Contains(err.Error(), `Mount["/"]`) {
		t.Errorf("a Mount of /: %v", err)
	}
	_, err = api.NewServer(a.svc, api.ServerConfig{Address: "127.0.0.1:0", Mount: map[string]http.Handler{"/x/": nil}})
	if err == nil || !strings.Contains(err.Error(), `Mount["/x/"] is nil`) {
		t.Errorf("a nil Mount: %v", err)
	}
}

// TestUIReadiness: the overview says whether the agent is ready, with a
// source's problem as the API's Readiness tells it.
func TestUIReadiness(t *testing.T) {
	a := newAgent(t, "", loaded(t))
	a.mux.Sink("file").Problem(errors.New("config.yaml:3: not a key of any model"))
	srv := a.serve(t)
	_, body := get(t, srv.URL+"/ui/")
	if !strings.Contains(body, "config.yaml:3: not a key of any model") || !strings.Contains(body, `<span class="tag">ready</span>`) {
		t.Errorf("the overview does not show the file source's problem:\n%s", body)
	}
	late := newAgent(t, "", func(file, etcd nb.Sink) { apply(t, file, nb.Update{Resync: true}) })
	_, body = get(t, late.serve(t).URL+"/ui/")
	if !strings.Contains(body, `<span class="tag bad">not ready</span>`) {
		t.Errorf("the overview of an agent whose etcd has not loaded:\n%s", body)
	}
}
