package scheduler_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The fault harness's excuses quote doc.go, in either form: its name, a
// colon and the sentence in double quotes, or the sentence in double
// quotes followed by "(doc.go)"; "[...]" marks an elision. Each quote
// must still be in doc.go, so that an edit of the contract cannot leave
// an excuse without the sentence it rests on.
func TestDocQuotes(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	contract := normalizeComment(string(doc))
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	quoteREs := []*regexp.Regexp{
		regexp.MustCompile(`doc\.go: "([^"]*)"`),
		regexp.MustCompile(`"([^"]*)" \(doc\.go\)`),
	}
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := normalizeComment(string(src))
		for _, re := range quoteREs {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				n++
				if !containsInOrder(contract, strings.Split(m[1], "[...]")) {
					t.Errorf("%s quotes doc.go, which no longer says: %q", f, m[1])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no doc.go quotes found: the pattern no longer matches the excuses")
	}
}

var commentMarkRE = regexp.MustCompile(`\n\s*//\s*(-\s)?`)

// normalizeComment joins comment lines (dropping "//" and list markers)
// and collapses runs of white space.
func normalizeComment(s string) string {
	return strings.Join(strings.Fields(commentMarkRE.ReplaceAllString(s, " ")), " ")
}

func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		p = strings.TrimSpace(p)
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
