package nb_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// problemError is an error whose fields say nothing: its text is all.
type problemError struct{ err error }

func (e *problemError) Error() string { return "config.yaml:3: " + e.err.Error() }

func TestSourceStateJSON(t *testing.T) {
	b, err := json.Marshal([]nb.SourceState{
		{Name: "file", Loaded: true, Keys: 2, Problem: &problemError{fmt.Errorf("did not find expected key")}},
		{Name: "etcd"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Problem":"config.yaml:3: did not find expected key"`, `"Name":"etcd","Loaded":false,"Keys":0,"LastUpdate"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s\ndoes not contain %s", b, want)
		}
	}
}
