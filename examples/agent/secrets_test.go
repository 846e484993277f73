package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/boltstore"
)

// wgSecret returns a new wireguard key (base64 of 32 random bytes).
func wgSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func wgInterfaceJSON(name, key string) string {
	return `{"name":"` + name + `","type":"TYPE_WIREGUARD","enabled":true,"wireguard":{"privateKey":"` + key +
		`","port":51820,"srcAddress":"10.9.0.1"}}`
}

// TestAgentSecretsRedacted: wireguard private keys (sensitive fields)
// applied through the file source, the API (REST and gRPC) and kvctl,
// changed once (a change of a key alone re-creates the interface: it
// compares as a change), and one refused (a key of the wrong length,
// INVALID), never appear in what the agent shows: every read of the API
// over REST and gRPC (status, dump in its three views, history, timeline,
// graph and its snapshot, plan, watch), the operator page, kvctl's
// output and report, the agent's log at debug level, and the history it
// keeps in its state directory. The VPP plugin runs over govpp's mock
// adapter.
func TestAgentSecretsRedacted(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	secrets := map[string]string{}
	for _, n := range []string{"file", "rest", "rest2", "grpc", "kvctl", "plan", "bad"} {
		secrets[n] = wgSecret(t)
	}
	// "bad" is a key VPP refuses: 16 bytes.
	secrets["bad"] = secrets["bad"][:22] + "=="
	// An IPsec SA's keys, in hex.
	for _, n := range []string{"sa-crypto", "sa-integ"} {
		raw, _ := base64.StdEncoding.DecodeString(wgSecret(t))
		secrets[n] = hex.EncodeToString(raw)
	}
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "vpp/interface/wg-file: "+wgInterfaceJSON("wg-file", secrets["file"])+"\n"+
		`vpp/ipsec/sa/7: {"index":7,"spi":700,"cryptoAlg":"CRYPTO_ALG_AES_CBC_256","cryptoKey":"`+secrets["sa-crypto"]+
		`","integAlg":"INTEG_ALG_SHA_256_128","integKey":"`+secrets["sa-integ"]+`"}`+"\n")
	a := startAgent(t, "-name", "ts", "-memory", "-vpp-socket", "mock", "-file", cfg, "-state-dir", state)
	sock := filepath.Join(state, "grpc.sock")
	rest, grpc := httpClient(a.base), grpcClient(t, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A watch of the VPP interfaces, from the start.
	var watched bytes.Buffer
	wctx, wcancel := context.WithCancel(ctx)
	stream, err := grpc.Watch(wctx, &apiv1.WatchRequest{Prefix: "vpp/interface/"})
	if err != nil {
		t.Fatal(err)
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for stream.Receive() {
			b, _ := protojson.Marshal(stream.Msg())
			watched.Write(b)
			watched.WriteByte('\n')
		}
	}()

	value := func(name, key string) *apiv1.Value {
		return &apiv1.Value{Key: "vpp/interface/" + name, Value: &apiv1.Value_Json{Json: wgInterfaceJSON(name, key)}, JsonType: "vpp.interfaces.v1.Interface"}
	}
	commit := func(c agentClient, vs ...*apiv1.Value) *apiv1.CommitResponse {
		t.Helper()
		res, err := c.Commit(ctx, &apiv1.CommitRequest{Values: vs, Wait: true})
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
		return res
	}
	commit(rest, value("wg-rest", secrets["rest"]))
	commit(grpc, value("wg-grpc", secrets["grpc"]))
	// A new key alone is a change: the interface is created again.
	res := commit(rest, value("wg-rest", secrets["rest2"]))
	if !hasOp(res.GetExecuted(), "vpp/interface/wg-rest", "CREATE") {
		t.Errorf("a changed private key was not applied (no re-create of wg-rest): %v", res.GetExecuted())
	}
	// A key VPP refuses: INVALID, with the field named.
	res = commit(grpc, value("wg-bad", secrets["bad"]))
	if len(res.GetOutcomes()) != 1 || res.GetOutcomes()[0].GetState() != "INVALID" || !strings.Contains(res.GetOutcomes()[0].GetError(), "wireguard.private_key") {
		t.Errorf("the bad key: want INVALID, naming wireguard.private_key: %v", res.GetOutcomes())
	}
	if _, err := grpc.Plan(ctx, &apiv1.PlanRequest{Values: []*apiv1.Value{value("wg-plan", secrets["plan"])}}); err != nil {
		t.Fatalf("Plan: %v", err)
	}

	var out bytes.Buffer // everything the agent showed
	show := func(what string, b []byte) {
		out.WriteString("== " + what + "\n")
		out.Write(b)
		out.WriteByte('\n')
	}
	kvctl := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(kvctlBinary(t), append([]string{"--server", "unix:" + sock}, args...)...)
		b, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && len(b) > 0) {
			t.Fatalf("kvctl %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return b
	}
	kvFile := filepath.Join(dir, "kvctl.yaml")
	writeFile(t, kvFile, "vpp/interface/wg-kvctl: "+wgInterfaceJSON("wg-kvctl", secrets["kvctl"])+"\n")
	show("kvctl apply", kvctl("apply", "-f", kvFile, "--wait"))
	// kvctl resync sends the API source's values back as the API shows
	// them, redacted: each keeps its secret, nothing changes.
	show("kvctl resync", kvctl("resync"))
	for _, name := range []string{"wg-rest", "wg-grpc", "wg-kvctl"} {
		if st := a.status("vpp/interface/" + name); st.GetState() != "CONFIGURED" {
			t.Errorf("%s after kvctl resync: %v, want CONFIGURED with its key", name, st)
		}
	}
	h, err := rest.History(ctx, &apiv1.HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.GetRecords() {
		if strings.Contains(r.GetDescription(), "kvctl resync") && len(r.GetExecuted()) != 0 {
			t.Errorf("kvctl resync: want nothing changed, got %v", r)
		}
	}
	res = commit(rest) // the last transaction so far, for its number
	last := int(res.GetSeq())
	if st := a.status("vpp/ipsec/sa/7"); st.GetState() != "CONFIGURED" {
		t.Fatalf("the SA: %v, want CONFIGURED", st)
	}
	if st := a.status("vpp/interface/wg-kvctl"); st.GetState() != "CONFIGURED" {
		t.Fatalf("wg-kvctl: %v, want CONFIGURED", st)
	}
	st := a.status("vpp/interface/wg-rest")
	if st.GetState() != "CONFIGURED" || st.GetValue() == nil {
		t.Fatalf("wg-rest: %v, want CONFIGURED with its value", st)
	}

	// The API, over REST (JSON) and gRPC (the binary form, and its JSON).
	paths := []string{"/v1/status?prefix=vpp/", "/v1/history", "/v1/models", "/v1/graph-snapshot", "/v1/graph", "/v1/graph?format=GRAPH_FORMAT_SVG",
		"/scheduler/status", "/scheduler/txn-history", "/scheduler/graph", "/v1/stats"}
	for _, v := range []string{"VIEW_INTENDED", "VIEW_SOUTHBOUND", "VIEW_SCHEDULER"} {
		paths = append(paths, "/v1/dump?view="+v)
	}
	paths = append(paths, "/v1/timeline?key=vpp/ipsec/sa/7")
	for _, name := range []string{"wg-file", "wg-rest", "wg-grpc", "wg-bad", "wg-kvctl"} {
		paths = append(paths, "/v1/timeline?key=vpp/interface/"+name, "/scheduler/key-timeline?key=vpp/interface/"+name)
	}
	for seq := 1; seq <= last; seq++ {
		s := strconv.Itoa(seq)
		paths = append(paths, "/v1/history?seq="+s, "/v1/graph?seq="+s, "/v1/graph-snapshot?seq="+s)
	}
	for _, p := range paths {
		code, body := a.get(p)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %.300s", p, code, body)
		}
		show("GET "+p, []byte(body))
	}
	for _, c := range []struct {
		name string
		cl   agentClient
	}{{"REST", rest}, {"gRPC", grpc}} {
		var msgs []proto.Message
		add := func(m proto.Message, err error) {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				return
			}
			msgs = append(msgs, m)
		}
		add(c.cl.Status(ctx, &apiv1.StatusRequest{Prefix: "vpp/"}))
		for _, v := range []apiv1.View{apiv1.View_VIEW_INTENDED, apiv1.View_VIEW_SOUTHBOUND, apiv1.View_VIEW_SCHEDULER} {
			add(c.cl.Dump(ctx, &apiv1.DumpRequest{View: v}))
		}
		add(c.cl.History(ctx, &apiv1.HistoryRequest{}))
		add(c.cl.Timeline(ctx, &apiv1.TimelineRequest{Key: "vpp/interface/wg-rest"}))
		add(c.cl.Graph(ctx, &apiv1.GraphRequest{}))
		add(c.cl.Plan(ctx, &apiv1.PlanRequest{Values: []*apiv1.Value{value("wg-plan", secrets["plan"])}}))
		for _, m := range msgs {
			b, _ := proto.Marshal(m)
			show(c.name+" "+string(m.ProtoReflect().Descriptor().Name())+" (binary)", b)
			j, _ := protojson.Marshal(m)
			show(c.name+" "+string(m.ProtoReflect().Descriptor().Name()), j)
		}
	}

	// The operator page.
	ui := []string{"/ui/", "/ui/values?prefix=vpp/", "/ui/history", "/ui/value?key=vpp/ipsec/sa/7"}
	for _, name := range []string{"wg-file", "wg-rest", "wg-grpc", "wg-bad", "wg-kvctl"} {
		ui = append(ui, "/ui/value?key=vpp/interface/"+name, "/ui/timeline?key="+url.QueryEscape("vpp/interface/"+name))
	}
	for seq := 1; seq <= last; seq++ {
		ui = append(ui, "/ui/txn?seq="+strconv.Itoa(seq), "/ui/graph?seq="+strconv.Itoa(seq))
	}
	for _, p := range ui {
		code, body := a.get(p)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", p, code)
		}
		show("GET "+p, []byte(body))
	}

	// kvctl.
	for _, args := range [][]string{
		{"status", "vpp/"}, {"status", "vpp/interface/wg-rest"}, {"status", "-o", "json", "vpp/"}, {"dump"}, {"dump", "-o", "json"},
		{"history"}, {"history", "-o", "json"}, {"timeline", "vpp/interface/wg-rest"}, {"timeline", "-o", "json", "vpp/interface/wg-rest"},
		{"graph"}, {"why", "vpp/interface/wg-bad"}, {"apply", "-f", kvFile, "--plan"},
	} {
		show("kvctl "+strings.Join(args, " "), kvctl(args...))
	}
	for seq := 1; seq <= last; seq++ {
		show("kvctl history "+strconv.Itoa(seq), kvctl("history", strconv.Itoa(seq)))
	}
	show("kvctl report", untar(t, kvctl("report", "-o", "-")))

	wcancel()
	<-watchDone
	show("watch", watched.Bytes())
	if !strings.Contains(watched.String(), "wg-rest") {
		t.Errorf("the watch saw nothing of wg-rest:\n%s", watched.String())
	}

	// The history kept in the state directory, once the agent stopped.
	a.stop()
	show("agent log", []byte(a.log.String()))
	store, err := boltstore.Open(filepath.Join(state, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := store.ReadHistory(func(seq uint64, data []byte) error {
		n++
		show("persisted history "+strconv.FormatUint(seq, 10), data)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if n < last {
		t.Errorf("%d records in the persisted history, want %d", n, last)
	}
	// Every other file of the state directory (state.db holds the
	// configuration the sources gave, and must, to restore it).
	_ = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != "state.db" {
			b, _ := os.ReadFile(p)
			show("state file "+p, b)
		}
		return nil
	})

	text := out.String()
	if !strings.Contains(text, kv.RedactedText) {
		t.Errorf("no %s anywhere: the values were not shown at all", kv.RedactedText)
	}
	for name, s := range secrets {
		raw, _ := base64.StdEncoding.DecodeString(s)
		if h, err := hex.DecodeString(s); err == nil {
			raw = h
		}
		for _, form := range [][]byte{[]byte(s), raw} {
			if len(form) == 0 {
				continue
			}
			for i := 0; i < len(text); {
				j := bytes.Index([]byte(text[i:]), form)
				if j < 0 {
					break
				}
				at := i + j
				head := strings.LastIndex(text[:at], "\n== ")
				t.Errorf("secret %s shown in %s", name, strings.SplitN(text[head+1:], "\n", 2)[0])
				i = at + len(form)
			}
		}
	}
}

// hasOp reports whether ops hold an operation kind on key.
func hasOp(ops []*apiv1.Op, key, kind string) bool {
	for _, o := range ops {
		if o.GetKey() == key && o.GetKind() == kind {
			return true
		}
	}
	return false
}

// untar returns the files of a tar.gz archive, concatenated.
func untar(t *testing.T, b []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("kvctl report: %v", err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out.Bytes()
		}
		if err != nil {
			t.Fatalf("kvctl report: %v", err)
		}
		out.WriteString("-- " + h.Name + "\n")
		_, _ = io.Copy(&out, tr)
	}
}
