package ui

import (
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	render := func(ls []diffLine) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(l.Op + l.Text + "|")
		}
		return b.String()
	}
	for _, c := range []struct{ a, b, want string }{
		{"", "", ""},
		{"x", "x", " x|"},
		{"", "x\ny", "+x|+y|"},
		{"x\ny", "", "-x|-y|"},
		{"{\n  a: 1,\n  b: 2\n}", "{\n  a: 1,\n  b: 3\n}", " {|   a: 1,|-  b: 2|+  b: 3| }|"},
		{"a\nb\nc", "a\nc\nd", " a|-b| c|+d|"},
	} {
		if got := render(lineDiff(c.a, c.b)); got != c.want {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
	// Beyond the bound of its work: the old removed, the new added.
	big := strings.Repeat("x\n", 3000)
	other := strings.Repeat("y\n", 3000)
	got := lineDiff(big, other)
	if len(got) != 6002 || got[0].Op != "-" || got[len(got)-1].Op != "+" {
		t.Errorf("a diff beyond the bound: %d lines, first %v", len(got), got[0])
	}
}
