package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReport writes a support bundle of an agent whose two listeners have
// tokens: every part is in the archive (the metrics and the readiness
// from the listener kvctl calls), its configuration without secrets, and
// neither token anywhere. Without --config, the configuration and the
// agent's version come from the agent (AgentInfo), without secrets.
// Without the token, the other parts are still written and errors.txt
// names those that failed.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	grpcToken, httpToken := "grpc-"+randomHex(t), "http-"+randomHex(t)
	grpcTokFile := writeConfig(t, dir, "grpc-token", grpcToken+"\n")
	httpTokFile := writeConfig(t, dir, "http-token", httpToken+"\n")
	cfg := writeConfig(t, dir, "cfg.yaml", config)
	// The HTTP listener is there for its token (kvctl calls the gRPC
	// one): port 0, a free port the agent takes itself.
	addr := "127.0.0.1:0"
	state := filepath.Join(dir, "state")
	agentCfg := writeConfig(t, dir, "agent.yaml", `# the agent of TestReport; password: hunter2
name: report-agent
http: {address: "`+addr+`", token_file: "`+httpTokFile+`"}
grpc: {address: "unix:`+state+`/grpc.sock", token_file: "`+grpcTokFile+`"}
state_dir: "`+state+`"
southbound: {memory: true}
sources: {file: {path: "`+cfg+`"}}
`)
	a := launchAgent(t, &agentProc{server: "unix:" + state + "/grpc.sock", flags: []string{"--token-file", grpcTokFile}}, "-config", agentCfg)

	bundle := filepath.Join(dir, "report.tar.gz")
	out, code := a.kvctl(t, "report", "-o", bundle, "--config", agentCfg)
	if code != 0 || !strings.Contains(out, "wrote "+bundle+": 8 parts, 0 failed") {
		t.Fatalf("report: exit code %d\n%s", code, out)
	}
	files := untar(t, bundle)
	for name, want := range map[string]string{
		"version.txt":    "kvctl: ",
		"config.yaml":    "name: report-agent",
		"status.json":    `"key": "linux/interface/veth2"`,
		"history.json":   `"seq":`,
		"models.json":    `"key_template": "linux/interface/`,
		"graph.dot":      "digraph",
		"metrics.txt":    "# TYPE ",
		"readiness.json": `"ready": true`,
		"errors.txt":     "none\n",
	} {
		if !strings.Contains(files[name], want) {
			t.Errorf("%s lacks %q:\n%.600s", name, want, files[name])
		}
	}
	if n := strings.Count(files["config.yaml"], "token_file: REDACTED"); n != 2 {
		t.Errorf("config.yaml has %d token_file: REDACTED, want 2:\n%s", n, files["config.yaml"])
	}
	for name, data := range files {
		for _, secret := range []string{grpcToken, httpToken, "hunter2"} {
			if strings.Contains(data, secret) {
				t.Errorf("%s holds the secret %q", name, secret)
			}
		}
	}

	// No --config: the configuration is the one the agent serves
	// (AgentInfo), without its secrets, and so is the agent's version.
	bundle = filepath.Join(dir, "served.tar.gz")
	out, code = a.kvctl(t, "report", "-o", bundle)
	if code != 0 || !strings.Contains(out, "8 parts, 0 failed") {
		t.Fatalf("report without --config: exit code %d\n%s", code, out)
	}
	files = untar(t, bundle)
	if !strings.Contains(files["status.json"], "veth2") || files["graph.dot"] == "" || !strings.Contains(files["metrics.txt"], "# TYPE") {
		t.Errorf("the agent's parts are missing: %v", slices.Sorted(maps.Keys(files)))
	}
	if !strings.Contains(files["version.txt"], "agent: "+testAgentVersion+" (go") || !strings.Contains(files["version.txt"], `name "report-agent"`) {
		t.Errorf("version.txt lacks the agent's version %s:\n%s", testAgentVersion, files["version.txt"])
	}
	for _, want := range []string{"name: report-agent", "state_dir: " + state, "token_file: REDACTED", "memory: true"} {
		if !strings.Contains(files["config.yaml"], want) {
			t.Errorf("config.yaml served by the agent lacks %q:\n%s", want, files["config.yaml"])
		}
	}
	if n := strings.Count(files["config.yaml"], "token_file: REDACTED"); n != 2 {
		t.Errorf("config.yaml served by the agent has %d token_file: REDACTED, want 2:\n%s", n, files["config.yaml"])
	}
	for name, data := range files {
		for _, secret := range []string{grpcToken, httpToken, grpcTokFile, httpTokFile} {
			if strings.Contains(data, secret) {
				t.Errorf("%s holds the secret %q", name, secret)
			}
		}
	}
	out, code = a.kvctl(t, "info")
	if code != 0 || !strings.Contains(out, "kvctl: ") || !strings.Contains(out, "agent: "+testAgentVersion) {
		t.Errorf("kvctl info: exit code %d\n%s", code, out)
	}
	bundle = filepath.Join(dir, "untokened.tar.gz")
	out, code = kvctl(t, "--server", a.server, "report", "-o", bundle, "--config", agentCfg)
	if code != 0 || !strings.Contains(out, "6 of 8 parts failed") {
		t.Fatalf("report without the token: exit code %d\n%s", code, out)
	}
	files = untar(t, bundle)
	for _, part := range []string{"status.json", "history.json", "models.json", "graph.dot", "metrics.txt", "readiness.json"} {
		if _, ok := files[part]; ok {
			t.Errorf("the failed part %s is in the archive", part)
		}
		if !strings.Contains(files["errors.txt"], part+": ") {
			t.Errorf("errors.txt does not name %s:\n%s", part, files["errors.txt"])
		}
	}
	if !strings.Contains(files["errors.txt"], "authorization") {
		t.Errorf("errors.txt:\n%s", files["errors.txt"])
	}
	if !strings.Contains(files["version.txt"], "agent: unknown (AgentInfo: ") || !strings.Contains(files["config.yaml"], "name: report-agent") {
		t.Errorf("without the token: version.txt:\n%s\nconfig.yaml (from --config):\n%s", files["version.txt"], files["config.yaml"])
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// freeAddr returns a loopback address with a port free a moment ago
// (for an etcd server, which cannot be told to take port 0 and report
// it; an agent takes port 0).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// untar returns the files of a report's tar.gz archive by name (under
// kvctl-report/).
func untar(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, "kvctl-report/")
		if !ok {
			t.Errorf("%s: %s is outside kvctl-report/", path, h.Name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
}
