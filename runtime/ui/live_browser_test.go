package ui_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/anypb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/ui"
)

// commitAPI commits key=value pairs through the API's Commit, as a client
// would.
func commitAPI(t *testing.T, a *agent, kvs ...string) {
	t.Helper()
	req := &apiv1.CommitRequest{Description: "a change made through the API"}
	for i := 0; i+1 < len(kvs); i += 2 {
		v, err := anypb.New(kvtest.Value(kvs[i+1]))
		if err != nil {
			t.Fatal(err)
		}
		req.Values = append(req.Values, &apiv1.Value{Key: kvs[i], Value: &apiv1.Value_Any{Any: v}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.svc.Commit(ctx, connect.NewRequest(req)); err != nil {
		t.Fatalf("Commit %v: %v", kvs, err)
	}
}

// rowState is the JavaScript of the state the values table shows for key.
func rowState(key string) string {
	return `(function(){var r=[...document.querySelectorAll("#values tr[data-key]")].find(function(e){return e.dataset.key===` +
		jsString(key) + `});return r?r.querySelector(".state").textContent:"";})()`
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestUILiveInBrowser opens the values page in headless Chromium and,
// with the page open, changes the agent through the API: a new value
// appears PENDING, then goes CONFIGURED when its interface comes, and a
// value the page showed PENDING goes CONFIGURED, all without a reload.
func TestUILiveInBrowser(t *testing.T) {
	_, a := fixture(t)
	b := newBrowser(t)
	base := serveAgent(t, a) + "/ui/"
	p := b.open(base + "values?prefix=route%2F")
	p.waitFor("the live stream is open", `document.getElementById("live").classList.contains("on")`)
	var loads int
	if err := p.eval(`performance.getEntriesByType("navigation").length`, &loads); err != nil || loads != 1 {
		t.Fatalf("navigations: %d, %v", loads, err)
	}
	p.screenshot("live-open")

	commitAPI(t, a, "route/r9", "10.9.9.0/24 dep:iface/eth7")
	took := p.waitFor("route/r9 shown PENDING", rowState("route/r9")+` === "PENDING"`)
	t.Logf("a new PENDING value showed on the open page %v after its Commit returned", took)
	p.screenshot("live-pending")

	commitAPI(t, a, "iface/eth7", "up", "iface/eth2", "up")
	took = p.waitFor("route/r9 shown CONFIGURED", rowState("route/r9")+` === "CONFIGURED"`)
	t.Logf("PENDING → CONFIGURED showed on the open page %v after the Commit returned", took)
	// route/r2 was on the page as it loaded, PENDING for iface/eth2.
	p.waitFor("route/r2 shown CONFIGURED", rowState("route/r2")+` === "CONFIGURED" && `+rowState("route/r3")+` === "CONFIGURED"`)
	p.screenshot("live-configured")
	// No reload happened: the document is the one loaded, not a new one.
	if err := p.eval(`performance.getEntriesByType("navigation").length`, &loads); err != nil || loads != 1 {
		t.Errorf("navigations after the updates: %d, %v", loads, err)
	}
	// The key of a new value is text, not markup.
	commitAPI(t, a, "route/"+evilValue, "10.8.0.0/24")
	p.waitFor("the new value with markup in its key shown", rowState("route/"+evilValue)+` !== ""`)
	if dom := p.dom(); strings.Contains(dom, "<title>pwned") || !strings.Contains(dom, "route/&lt;img src=x") {
		t.Errorf("the new row's key is not text:\n%s", dom)
	}
}

// TestUILiveBounds: the live streams are bounded in number (one more is
// 503 naming the option) and in lifetime (the stream ends with "end").
func TestUILiveBounds(t *testing.T) {
	_, a := fixture(t)
	srv := a.serveWith(t, ui.Options{MaxLiveStreams: 1, LiveStreamLifetime: 2 * time.Second})
	first, err := http.Get(srv.URL + "/ui/events?prefix=iface%2F")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	if first.StatusCode != 200 || first.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("events: %s %s", first.Status, first.Header.Get("Content-Type"))
	}
	resp, body := get(t, srv.URL+"/ui/events")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "MaxLiveStreams") {
		t.Errorf("a second stream beyond the bound: %s\n%s", resp.Status, body)
	}
	// The first ends by its lifetime, saying so; the bound's reading
	// waits for that, with a generous limit of its own.
	done := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(first.Body)
		done <- string(b)
	}()
	select {
	case got := <-done:
		for _, w := range []string{"retry: 2000", "event: ready", "event: end\ndata: lifetime"} {
			if !strings.Contains(got, w) {
				t.Errorf("the stream lacks %q:\n%s", w, got)
			}
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the stream outlived its lifetime")
	}
	// Once it ended, a stream may open again.
	waitUntil(t, "a stream opens once the first ended", func() bool {
		req, _ := http.NewRequest("GET", srv.URL+"/ui/events", nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200
	})
	resp, body = get(t, srv.URL+"/ui/events?colour=red")
	if resp.StatusCode != 400 || !strings.Contains(body, `<code id="argument">colour</code>`) {
		t.Errorf("events with an unknown parameter: %s\n%s", resp.Status, body)
	}
}

// waitUntil waits for cond, asking again as soon as it answered, for a
// generous bound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 2m", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
