package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// Every transport commits and reads through the one service.
func TestEveryTransportCommitsAndReads(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newEnv(t, envOptions{file: []nb.Change{{Key: "iface/f", Value: kvtest.Value("from-file")}}})
			c := tr.client(e.base)
			resp, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{
				Values: []*apiv1.Value{value("iface/a", "a1"), jsonValue("route/r", "dep:iface/a"), value("iface/f", "from-api")},
			}))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Msg.GetSeq() == 0 || len(resp.Msg.GetExecuted()) != 2 {
				t.Fatalf("commit: %v", resp.Msg)
			}
			e.want(t, "iface/a", "a1")
			e.want(t, "iface/f", "from-file")
			if o := outcome(resp.Msg, "iface/a"); o.GetOwner() != "api" || o.GetState() != "CONFIGURED" {
				t.Fatalf("iface/a: %v", o)
			}
			st, err := c.Status(ctx(t), connect.NewRequest(&apiv1.StatusRequest{Owner: "api"}))
			if err != nil || len(st.Msg.GetStatuses()) != 2 {
				t.Fatalf("status owner api: %v, %v", st, err)
			}
			_, err = c.Status(ctx(t), connect.NewRequest(&apiv1.StatusRequest{Key: "iface/nope"}))
			if connect.CodeOf(err) != connect.CodeNotFound || !strings.HasPrefix(connectMessage(err), "key:") {
				t.Fatalf("unknown key: %v", err)
			}
		})
	}
}

func connectMessage(err error) string {
	var ce *connect.Error
	if e, ok := err.(*connect.Error); ok {
		ce = e
		return ce.Message()
	}
	return ""
}

// REST paths answer from the same service, the reference agent's too.
func TestREST(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := transports[0].client(e.base)
	if _, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1")}})); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := h1().Get(e.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/status?key=iface/a")
	if code != 200 || !strings.Contains(body, `"iface/a"`) {
		t.Fatalf("/v1/status: %d %s", code, body)
	}
	code, body = get("/scheduler/status?key=iface/a")
	var list []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 {
		t.Fatalf("/scheduler/status: %d %s", code, body)
	}
	code, body = get("/scheduler/txn-history?since=0&until=99999999999")
	if code != 200 || !strings.HasPrefix(body, "[") {
		t.Fatalf("/scheduler/txn-history: %d %s", code, body)
	}
	code, body = get("/scheduler/graph?format=dot")
	if code != 200 || !strings.Contains(body, "digraph") {
		t.Fatalf("/scheduler/graph: %d %s", code, body)
	}
	code, body = get("/scheduler/dump?view=NB")
	if code != 200 || !strings.Contains(body, "iface/a") {
		t.Fatalf("/scheduler/dump: %d %s", code, body)
	}
	code, body = get("/v1/status?key=iface/nope")
	if code != http.StatusNotFound || !strings.Contains(body, "key:") {
		t.Fatalf("unknown key: %d %s", code, body)
	}
	resp, err := h1().Post(e.base+"/scheduler/downstream-resync?retry=true", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "seq") {
		t.Fatalf("downstream resync: %d %s", resp.StatusCode, b)
	}
}
