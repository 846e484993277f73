package docs

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agentSection is the README's section on building an agent.
const agentSection = "## Build your own agent"

// TestReadmeBuildYourOwnAgent builds and runs the README's "Build your own
// agent" as written, in a fresh module set up as the section before says
// (go mod init and edit, the vocabulary copied, its buf.yaml and
// buf.gen.yaml, with buf and the plugins on PATH): the section's files are
// written and its commands run; the agent's command is started by the
// test, which waits for the output the section shows, for the agent's
// HTTP API to answer, and for a clean exit at SIGTERM. One thing is the
// test's: the HTTP port, a free one instead of the section's.
func TestReadmeBuildYourOwnAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module of its own; skipped with -short")
	}
	t.Parallel()
	root := repoRoot(t)
	readme := readRepoFile(t, "README.md")
	home := t.TempDir()
	mod := filepath.Join(home, "acme")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(freshEnv(t, home, plugins(t), bufDir(t)), "KVD="+root)

	// The module, as "Use it in your own repository" makes it (steps 2
	// and 3); its models and main.go are left out.
	var setup []block
	for _, b := range blocks(t, section(t, readme, readmeSection)) {
		switch {
		case b.path() == "buf.yaml" || b.path() == "buf.gen.yaml":
			setup = append(setup, b)
		case b.info == "sh" && strings.Contains(b.text, "go mod init"):
			setup = append(setup, b)
		}
	}
	if len(setup) != 3 {
		t.Fatalf("the section %q shows %d of buf.yaml, buf.gen.yaml and the go mod init block", readmeSection, len(setup))
	}
	(&walk{t: t, doc: "README.md " + readmeSection, dir: mod, env: env}).run(setup)

	// The section's files and commands; the agent's command is the test's
	// to start.
	addr := "" // the agent listens on port 0 and logs the address it bound
	var agentCmd string
	var want string
	bs := blocks(t, section(t, readme, agentSection))
	var files []string
	w := &walk{t: t, doc: "README.md " + agentSection, dir: mod, env: env,
		line: func(t *testing.T, l string) (string, bool) {
			if strings.HasPrefix(l, "./") {
				agentCmd = l
				return "", false
			}
			return l, true
		}}
	for i, b := range bs {
		switch {
		case b.path() != "":
			text := b.text
			if b.path() == "agent.yaml" {
				if !strings.Contains(text, "127.0.0.1:9192") {
					t.Fatalf("agent.yaml does not listen on 127.0.0.1:9192, which the test replaces:\n%s", text)
				}
				text = strings.ReplaceAll(text, "127.0.0.1:9192", "127.0.0.1:0")
			}
			writeFile(t, filepath.Join(mod, filepath.FromSlash(b.path())), text)
			files = append(files, b.path())
		case b.info == "sh":
			if out := w.sh(b); out != "" {
				t.Logf("%s:%d printed:\n%s", w.doc, b.line, out)
			}
		case b.info == "text" && i > 0 && bs[i-1].info == "sh" && agentCmd != "":
			want = b.text
		}
	}
	wantFiles := []string{"proto/acme/dns/v1/dns.proto", "main.go", "agent.yaml", "zone.yaml"}
	if strings.Join(files, " ") != strings.Join(wantFiles, " ") {
		t.Errorf("the section's files, in order: %q, want %q", files, wantFiles)
	}
	if agentCmd == "" || want == "" {
		t.Fatalf("the section shows no command starting the agent (%q) or no output of it (%q)", agentCmd, want)
	}

	args := strings.Fields(agentCmd)
	cmd := exec.Command(filepath.Join(mod, args[0]), args[1:]...)
	cmd.Dir, cmd.Env = mod, env
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the agent's standard error:\n%s", stderr.String())
		}
	}()
	end := time.Now().Add(time.Minute)
	for stdout.String() != want || addr == "" || !ready(addr) {
		if addr == "" {
			addr = boundHTTP(stderr.String())
		}
		if time.Now().After(end) {
			t.Fatalf("%s printed, within a minute:\n%s\nthe README says:\n%s", agentCmd, stdout.String(), want)
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited: %v", agentCmd, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the agent exited with %v at SIGTERM", err)
		}
	case <-time.After(time.Minute):
		t.Errorf("the agent did not stop within a minute of SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(mod, "state", "state.db")); err != nil {
		t.Errorf("the agent kept no state: %v", err)
	}
}

// ready tells whether the agent at addr answers /readyz with 200.
func ready(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// boundHTTP returns the address the agent's log says its HTTP listener
// bound ("" until it says so).
func boundHTTP(log string) string {
	const mark = " listener=http address="
	i := strings.Index(log, mark)
	if i < 0 {
		return ""
	}
	addr, _, _ := strings.Cut(log[i+len(mark):], " ")
	return addr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
