package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// TestHistoryInput: a transaction's record holds its input, the values set
// and the keys deleted (a Value with no value), over RPC and REST (the
// operator page shows them).
func TestHistoryInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := transports[2].client(e.base)
	if _, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a1"), value("iface/b", "b1")}})); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/a", "a2")}, Deletes: []string{"iface/b"}}))
	if err != nil {
		t.Fatal(err)
	}
	seq := resp.Msg.GetSeq()
	h, err := c.History(ctx(t), connect.NewRequest(&apiv1.HistoryRequest{Seq: seq}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range h.Msg.GetRecords()[0].GetValues() {
		text := "(delete)"
		if a := v.GetAny(); a != nil {
			var s wrapperspb.StringValue
			if err := a.UnmarshalTo(&s); err != nil {
				t.Fatal(err)
			}
			text = s.GetValue()
		} else if v.GetValue() != nil {
			text = fmt.Sprint(v.GetValue())
		}
		got[v.GetKey()] = text
	}
	if len(got) != 2 || got["iface/a"] != "a2" || got["iface/b"] != "(delete)" {
		t.Errorf("the input of transaction %d: %v", seq, got)
	}
	if r := h.Msg.GetRecords()[0]; r.GetBatches() != 0 || r.GetBatchedOps() != 0 {
		t.Errorf("batches of a descriptor that does not batch: %d of %d", r.GetBatches(), r.GetBatchedOps())
	}
	res, err := http.Get(fmt.Sprintf("%s/v1/history?seq=%d", e.base, seq))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	// protojson varies its whitespace from one build to another on
	// purpose: compare the compact form.
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatalf("REST history of %d: %d, not JSON: %v %s", seq, res.StatusCode, err, raw)
	}
	body := compact.Bytes()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"values":[{"key":"iface/a","any":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"a2"}},{"key":"iface/b"}]`) {
		t.Errorf("REST history of %d: %d %s", seq, res.StatusCode, body)
	}
}

// TestAuthorize: Authorize checks a header as the calls check their
// token.
func TestAuthorize(t *testing.T) {
	e := newEnv(t, envOptions{token: "tok"})
	for _, c := range []struct {
		header string
		ok     bool
	}{{"", false}, {"Bearer nope", false}, {"Basic tok", false}, {"Bearer tok", true}} {
		h := http.Header{}
		if c.header != "" {
			h.Set("Authorization", c.header)
		}
		err := e.svc.Authorize(h)
		if (err == nil) != c.ok || (err != nil && (connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.HasPrefix(connectMessage(err), "authorization:"))) {
			t.Errorf("Authorize(%q): %v", c.header, err)
		}
	}
	if err := newEnv(t, envOptions{}).svc.Authorize(http.Header{}); err != nil {
		t.Errorf("Authorize without a token: %v", err)
	}
}

// TestTimelineDependencies: a timeline entry holds the dependencies of its
// value, a key or an AnyOf's prefixes.
func TestTimelineDependencies(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := transports[0].client(e.base)
	if _, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{
		value("iface/a", "up"), value("route/r", "dep:iface/a any:iface/")}})); err != nil {
		t.Fatal(err)
	}
	tl, err := c.Timeline(ctx(t), connect.NewRequest(&apiv1.TimelineRequest{Key: "route/r"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range tl.Msg.GetEntries()[0].GetDependencies() {
		got = append(got, fmt.Sprintf("%s|%s|%v|%s", d.GetLabel(), d.GetKey(), d.GetAnyOf(), d.GetMatch()))
	}
	if want := "iface/a|iface/a|[]|,any iface/||[iface/]|"; strings.Join(got, ",") != want {
		t.Errorf("the dependencies of route/r: %q, want %q", strings.Join(got, ","), want)
	}
}
