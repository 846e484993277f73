package docs

import (
	"regexp"
	"strings"
	"testing"
)

// block is a fenced code block of a markdown file.
type block struct {
	info  string // what follows the opening ```: "sh", "go", "text", ...
	text  string // the lines between the fences, each ending in '\n'
	line  int    // the line of the opening fence, from 1
	first string // the first line of text
}

// fileMarker matches the first line of a block that is a file to write: a
// comment naming its path ("# buf.yaml", "// main.go").
var fileMarker = regexp.MustCompile(`^(?:#|//) ([\w./-]+\.\w+)$`)

// path returns the path of the file the block is, or "".
func (b block) path() string {
	if m := fileMarker.FindStringSubmatch(b.first); m != nil {
		return m[1]
	}
	return ""
}

// blocks returns the fenced code blocks of md, in order. Fences are "```"
// at the start of a line; blocks do not nest.
func blocks(t testing.TB, md string) []block {
	t.Helper()
	var out []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		b := block{info: strings.TrimSpace(info), line: i + 1}
		var body strings.Builder
		closed := false
		for i++; i < len(lines); i++ {
			if lines[i] == "```" {
				closed = true
				break
			}
			body.WriteString(lines[i] + "\n")
		}
		if !closed {
			t.Fatalf("line %d: a code block that is never closed", b.line)
		}
		b.text = body.String()
		b.first, _, _ = strings.Cut(b.text, "\n")
		out = append(out, b)
	}
	return out
}

// section returns the text of the section of md under the heading (a
// whole line, "## Title"), up to the next heading of the same or a higher
// level.
func section(t testing.TB, md, heading string) string {
	t.Helper()
	md = "\n" + md
	start := strings.Index(md, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	level := strings.Index(heading, " ")
	rest := md[start+len(heading)+2:]
	for i := 0; i < len(rest); {
		nl := strings.IndexByte(rest[i:], '\n')
		if nl < 0 {
			break
		}
		line := rest[i : i+nl]
		if strings.HasPrefix(line, "```") {
			// Skip the block: a "# comment" line in it is no heading.
			end := strings.Index(rest[i+nl+1:], "\n```\n")
			if end < 0 {
				break
			}
			i += nl + 1 + end + 5
			continue
		}
		if h := strings.IndexByte(line, ' '); h > 0 && h <= level && strings.Trim(line[:h], "#") == "" {
			return rest[:i]
		}
		i += nl + 1
	}
	return rest
}

func TestBlocks(t *testing.T) {
	md := "# T\n\ntext\n\n```sh\n# a comment\necho hi\n```\n\n## S\n\n```go\n// main.go\npackage main\n```\n\n## Next\n"
	bs := blocks(t, md)
	if len(bs) != 2 {
		t.Fatalf("blocks: got %d, want 2", len(bs))
	}
	if bs[0].info != "sh" || bs[0].text != "# a comment\necho hi\n" || bs[0].line != 5 || bs[0].path() != "" {
		t.Errorf("first block: %+v", bs[0])
	}
	if bs[1].path() != "main.go" || bs[1].info != "go" {
		t.Errorf("second block: %+v, path %q", bs[1], bs[1].path())
	}
	if got := section(t, md, "# T"); !strings.Contains(got, "## Next") {
		t.Errorf("section # T ends early: %q", got)
	}
	if got := section(t, md, "## S"); got != "\n```go\n// main.go\npackage main\n```\n\n" {
		t.Errorf("section ## S: %q", got)
	}
}
