package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentUI: the agent binary (in-memory southbound) serves the operator
// page on its HTTP listener: the file source owns its values, a route over
// a missing interface shows why it is pending, and a browser asking for /
// is sent to the page.
func TestAgentUI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, `linux/interface/br0:
  name: br0
  type: TYPE_BRIDGE
  enabled: true
linux/route/eth7/10.30.0.0/16:
  outgoingInterface: eth7
  dstNetwork: 10.30.0.0/16
`)
	a := startAgent(t, "-name", "tu", "-memory", "-file", cfg, "-state-dir", filepath.Join(dir, "state"))
	route := "linux/route/eth7/10.30.0.0/16"
	eventually(t, 30*time.Second, "the route pending", func() (bool, string) {
		code, body := a.get("/v1/status?key=" + route)
		return code == 200 && strings.Contains(body, `"PENDING"`), body
	})

	pages := []struct{ path, want string }{
		{"/ui/", "Needs attention"},
		{"/ui/values?prefix=linux/interface/", `data-key="linux/interface/br0" data-state="CONFIGURED"`},
		{"/ui/values?state=PENDING", `data-key="` + route + `"`},
		{"/ui/value?key=" + route, `id="why-pending"`},
		{"/ui/value?key=" + route, `href="value?key=linux%2finterface%2feth7"`},
		{"/ui/value?key=linux/interface/br0", "owner</dt><dd>file</dd>"},
		{"/ui/history", `id="txn-1"`},
		{"/ui/txn?seq=1", `id="planned"`},
		{"/ui/timeline?key=linux/interface/br0", `href="txn?seq=1"`},
		{"/ui/graph?seq=1", "<svg"},
	}
	for _, p := range pages {
		code, body := a.get(p.path)
		if code != http.StatusOK || !strings.Contains(body, p.want) {
			t.Errorf("GET %s: %d, want 200 with %s:\n%s", p.path, code, p.want, body)
		}
	}
	if code, body := a.get("/ui/txn?seq=x"); code != http.StatusBadRequest || !strings.Contains(body, `<code id="argument">seq</code>`) {
		t.Errorf("GET /ui/txn?seq=x: %d %s", code, body)
	}

	req, err := http.NewRequest("GET", a.base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / from a browser: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
