package apilimits_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// TestDocsListTheBounds: docs/api.md's table of bounds is Table.
func TestDocsListTheBounds(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range apilimits.Table {
		row := "| " + l.Fields + " | " + l.Max + " |"
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/api.md lacks the row\n%s", row)
		}
	}
}

func TestChecks(t *testing.T) {
	if err := apilimits.Count("buffer", 1<<30, apilimits.MaxWatchBuffer); err == nil || err.Error() != "buffer: 1073741824 is more than 65536, the bound" {
		t.Errorf("Count: %v", err)
	}
	if err := apilimits.Count("buffer", apilimits.MaxWatchBuffer, apilimits.MaxWatchBuffer); err != nil {
		t.Errorf("Count at the bound: %v", err)
	}
	if err := apilimits.Duration("confirm_within", 25*time.Hour, apilimits.MaxConfirmWithin); err == nil || !strings.HasPrefix(err.Error(), "confirm_within: 25h0m0s is more than 24h0m0s") {
		t.Errorf("Duration: %v", err)
	}
	if err := apilimits.Length("key", "abc", 2); err == nil || !strings.HasPrefix(err.Error(), "key: 3 bytes long") {
		t.Errorf("Length: %v", err)
	}
}
