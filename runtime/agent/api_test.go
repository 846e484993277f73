package agent

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
)

// anyPort is a loopback address whose port the agent's listener picks:
// the tests read it back with httpAddr, so that no other process can take
// a port between its choice and the listen.
const anyPort = "127.0.0.1:0"

// httpAddr returns the address r's HTTP listener bound.
func httpAddr(t *testing.T, r *running) string {
	t.Helper()
	addr := r.a.Address("http")
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		t.Fatalf("the agent's HTTP listener reports address %q, not the port it bound", addr)
	}
	return addr
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b != "" {
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestAgentServesAPI: the agent serves runtime/api on its listener: the
// API's source "api" below the file source in the priority order, the
// agent's log level set by SetLogLevel, metrics behind the token on the
// same listener, the probes without it.
func TestAgentServesAPI(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	writeFile(t, file, "x/a: from-file\n")
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb := kvtest.NewSB()
	r := startTestAgent(t, sb, file, filepath.Join(dir, "state"), func(c *Config) {
		c.HTTP.Address, c.HTTP.TokenFile = anyPort, tokenFile
		c.Version = "v1.2.3-test"
	})
	defer r.stop(t)
	addr := httpAddr(t, r)
	if g := r.a.Address("grpc"); g != "" {
		t.Errorf("the gRPC listener is off and reports address %q", g)
	}
	base := "http://" + addr
	cl := apiv1connect.NewAgentServiceClient(&http.Client{Transport: bearer("s3cret")}, base)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := cl.Commit(ctx, connect.NewRequest(&apiv1.CommitRequest{
		Values: []*apiv1.Value{strValue("x/a", "from-api"), strValue("x/b", "from-api")},
		Wait:   true,
	}))
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if res.Msg.GetSeq() == 0 {
		t.Errorf("Commit: no transaction: %v", res.Msg)
	}
	owners := map[string]string{}
	st, err := cl.Status(ctx, connect.NewRequest(&apiv1.StatusRequest{Prefix: "x/"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Msg.GetStatuses() {
		owners[s.GetKey()] = s.GetOwner()
	}
	if owners["x/a"] != "file" || owners["x/b"] != "api" {
		t.Errorf("owners: %v (want x/a the file's, above the API's source, and x/b the API's)", owners)
	}

	lv, err := cl.SetLogLevel(ctx, connect.NewRequest(&apiv1.SetLogLevelRequest{Level: "debug"}))
	if err != nil || lv.Msg.GetPrevious() != "info" || r.a.LogLevel().Level() != slog.LevelDebug {
		t.Errorf("SetLogLevel: %v %v; the agent's level: %v", lv, err, r.a.LogLevel().Level())
	}

	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := (&http.Client{Transport: bearer(token)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics", ""); code != http.StatusUnauthorized || !strings.Contains(body, "authorization") {
		t.Errorf("metrics without the token: %d %s", code, body)
	}
	if code, body := get("/metrics", "s3cret"); code != http.StatusOK || !strings.Contains(body, "kvdescriptor_") {
		t.Errorf("metrics: %d %.200s", code, body)
	}
	if code, body := get("/readyz", ""); code != http.StatusOK || !strings.Contains(body, `"ready":true`) {
		t.Errorf("readyz: %d %s", code, body)
	}
	if code, _ := get("/v1/status?key=x/a", ""); code != http.StatusUnauthorized {
		t.Errorf("a read without the token: %d", code)
	}

	// AgentInfo, by REST: the agent's name, version, descriptors and its
	// configuration without the token file's path.
	code, body := get("/v1/info", "s3cret")
	for _, want := range []string{`"name":"t"`, `"version":"v1.2.3-test"`, `"descriptors":1`, `"goVersion":"go`, `"startTime":"`, "token_file: REDACTED", "state_dir: " + filepath.Join(dir, "state")} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /v1/info: %d, no %s in %s", code, want, body)
		}
	}
	if strings.Contains(body, tokenFile) {
		t.Errorf("GET /v1/info holds the token file's path: %s", body)
	}
}

func strValue(key, text string) *apiv1.Value {
	return &apiv1.Value{Key: key, Value: &apiv1.Value_Json{Json: `"` + text + `"`}, JsonType: "google.protobuf.StringValue"}
}
