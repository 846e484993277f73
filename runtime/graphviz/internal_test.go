package graphviz

import (
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestEveryStateHasItsColour fails when the scheduler gains a state that
// this package has no colour for, or when two states share a colour.
func TestEveryStateHasItsColour(t *testing.T) {
	t.Parallel()
	all := states()
	if len(all) < 11 || all[0] != scheduler.NONEXISTENT || !contains(all, scheduler.UNIMPLEMENTED) {
		t.Fatalf("states() = %v, want every state the scheduler names", all)
	}
	seen := map[string]scheduler.State{}
	for _, s := range all {
		c, ok := stateColors[s]
		if !ok {
			t.Errorf("state %v has no colour", s)
			continue
		}
		if other, dup := seen[c]; dup {
			t.Errorf("states %v and %v share the colour %s", other, s, c)
		}
		seen[c] = s
		if StateColor(s) != c {
			t.Errorf("StateColor(%v) = %s, want %s", s, StateColor(s), c)
		}
	}
	if len(stateColors) != len(all) {
		t.Errorf("%d colours for %d states", len(stateColors), len(all))
	}
	if got := StateColor(scheduler.State(250)); got != unknownStateColor {
		t.Errorf("StateColor of an unknown state = %s, want %s", got, unknownStateColor)
	}
}

func contains(ss []scheduler.State, s scheduler.State) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, text, id string
	}{
		{"plain", "iface/eth0", `"iface/eth0"`, `"iface/eth0"`},
		{"key characters", "route/0/10.0.0.0%2F8:x.y", `"route/0/10.0.0.0%2F8:x.y"`, `"route/0/10.0.0.0%2F8:x.y"`},
		{"quotes", `a"b"`, `"a\"b\""`, `"a\"b\""`},
		{"backslash", `C:\dir\`, `"C:\\dir\\"`, `"C:&#92;dir&#92;"`},
		{"backslash before quote", `a\"`, `"a\\\""`, `"a&#92;\""`},
		{"graphviz escapes stay text", `\N \G \l`, `"\\N \\G \\l"`, `"&#92;N &#92;G &#92;l"`},
		{"entities", "a&amp;b & c", `"a&amp;amp;b &amp; c"`, `"a&amp;amp;b &amp; c"`},
		{"markup", "<b>x</b>", `"<b>x</b>"`, `"<b>x</b>"`},
		{"newline", "a\nb", `"a\nb"`, `"a&#10;b"`},
		{"tab kept", "a\tb", "\"a\tb\"", "\"a\tb\""},
		{"control", "a\x01b\x7f", `"a\\x01b\\x7f"`, `"a&#92;x01b&#92;x7f"`},
		{"invalid utf-8", "a\xffb", `"a\\xffb"`, `"a&#92;xffb"`},
		{"replacement character kept", "a\uFFFDb", "\"a\uFFFDb\"", "\"a\uFFFDb\""},
		{"unicode", "rozhraní/ěšč", `"rozhraní/ěšč"`, `"rozhraní/ěšč"`},
		{"empty", "", `""`, `""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := quote(tc.in); got != tc.text {
				t.Errorf("quote(%q) = %s, want %s", tc.in, got, tc.text)
			}
			if got := quoteID(tc.in); got != tc.id {
				t.Errorf("quoteID(%q) = %s, want %s", tc.in, got, tc.id)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 3000) // 6000 bytes
	got := truncate(long, maxTooltip)
	if len(got) > maxTooltip || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("truncate: %d bytes, suffix %q", len(got), got[len(got)-6:])
	}
	if strings.ContainsRune(got, '\uFFFD') {
		t.Error("truncate cut a rune in two")
	}
	if got := truncate("short", maxTooltip); got != "short" {
		t.Errorf("truncate(short) = %q", got)
	}
}
