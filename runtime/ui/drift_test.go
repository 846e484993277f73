package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestValuePageDrift: a value whose drift is reported (the note model's
// policy) shows DRIFTED on its page, with the policy and what differs,
// field by field; the overview lists DRIFTED among what needs attention.
func TestValuePageDrift(t *testing.T) {
	t.Parallel()
	a := newAgent(t, "", func(file, etcd nb.Sink) {
		apply(t, file, nb.Update{Resync: true})
		apply(t, etcd, nb.Update{Resync: true, Changes: set("note/n", "colour=blue")})
	})
	srv := a.serve(t)
	a.sb.Put("note/n", "colour=red")
	if _, err := a.s.CheckDrift(context.Background(), scheduler.DriftCheck{Keys: []string{"note/n"}}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, srv.URL+"/ui/value?key=note/n")
	for _, want := range []string{`id="drift"`, "st-DRIFTED", "Changed in the southbound behind the agent's back", `data-field="drift-policy">report<`,
		`<table id="drift-diff">`, "<td>value</td><td>&#34;colour=blue&#34;</td><td>&#34;colour=red&#34;</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the value page lacks %s:\n%s", want, body)
		}
	}
	_, body = get(t, srv.URL+"/ui/")
	if !strings.Contains(body, "DRIFTED") {
		t.Errorf("the overview does not show DRIFTED:\n%s", body)
	}
}
