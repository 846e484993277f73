package gen_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
	"github.com/kvdescriptor/kvdescriptor/protoc-gen-kvdescriptor/internal/gen"
)

// docsLab is the schema of the docs' golden test, under testdata/docs.
const docsLab = "lab/v1/lab.proto"

// labRequest compiles testdata/docs/lab/v1/lab.proto into the request a
// plugin gets, its custom options decoded into their Go types.
func labRequest(t *testing.T) *pluginpb.CodeGeneratorRequest {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	r := &protocompile.SourceResolver{ImportPaths: []string{dir, filepath.Join(repoRoot(t), "models")}}
	req := compileRequest(t, r, "", docsLab)
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := &pluginpb.CodeGeneratorRequest{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// generateDocs runs the docs output on req and returns its files by name.
func generateDocs(t *testing.T, req *pluginpb.CodeGeneratorRequest) (map[string]string, error) {
	t.Helper()
	resp, err := runPlugin(t, req, gen.GenerateDocs)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range resp.GetFile() {
		out[f.GetName()] = f.GetContent()
	}
	return out, nil
}

// compareTree compares generated files with the files under dir (all of
// them, so that a file no longer generated is reported too), or with
// -update rewrites dir to hold exactly them.
func compareTree(t *testing.T, dir string, got map[string]string, how string) {
	t.Helper()
	var committed []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		committed = append(committed, filepath.ToSlash(rel))
		return err
	}); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if *update {
		for _, name := range committed {
			if _, ok := got[name]; !ok {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, content := range got {
			writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
		}
		return
	}
	for _, name := range committed {
		if _, ok := got[name]; !ok {
			t.Errorf("%s/%s is committed but no longer generated; %s", dir, name, how)
		}
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: generated but not committed (%s): %v", name, how, err)
			continue
		}
		if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got[name], "\n")); diff != "" {
			t.Errorf("%s/%s is stale; %s (-committed +generated):\n%s", dir, name, how, diff)
		}
	}
}

// TestDocsGolden generates the reference pages of testdata/docs/lab (a
// schema that sets every option) and compares them with
// testdata/docs/golden (-update rewrites it): one page for the .proto
// file, and the index.
func TestDocsGolden(t *testing.T) {
	t.Parallel()
	got, err := generateDocs(t, labRequest(t))
	if err != nil {
		t.Fatalf("generate docs: %v", err)
	}
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, []string{"README.md", "lab/v1/lab.md"}) {
		t.Fatalf("generated %v, want README.md and lab/v1/lab.md", names)
	}
	compareTree(t, filepath.Join("testdata", "docs", "golden"), got, "review and run go test -update")

	// The page says what a user needs in order to configure a value.
	page := got["lab/v1/lab.md"]
	for _, want := range []string{
		"| Example key | `lab/port/name1` |",              // IF_NAME example, in key form
		"| Example key | `lab/route/vrf1/192.0.2.0/24` |", // an IP_PREFIX keyed as a network
		"| Label | `dst` |",                               // ModelOptions.label
		"| Label | the key's variable part (after `lab/port/`), e.g. `name1/member/port1` |",
		`"lab/port/name1": {"name": "name1", "kind": "KIND_PHYSICAL", "optics": {"vendor": "vendor1", "lanes": [{}]}, "slot": 1}`, // required, and required_if met, at depth
		"1 to 8, or 0 (unset); required when `kind` is `KIND_PHYSICAL`",
		"set when, and only when, `kind` is `KIND_TUNNEL`",
		"empty unless `kind` is `KIND_PHYSICAL` or `KIND_TUNNEL`; must differ from `name`",
		"| yes (with `tunnel`) |",
		"`tunnel.local_ip` (`localIp`)",
		"mode \\| a pipe in a cell.",
		"| Element | string (an element of `addresses`) |",
		`"lab/vrf/name1": {"name": "name1", "priority": 1}`, // a minimum zero does not meet
		// only_if of the deriving field met, and the fields that
		// kind then requires set:
		`"lab/port/name1": {"name": "name1", "kind": "KIND_TUNNEL", "addresses": ["192.0.2.1/24"], "tunnel": {"localIp": "192.0.2.1"}}`,
		`"lab/port/name1": {"name": "name1", "kind": "KIND_PHYSICAL", "members": [{"port": "port1"}], "optics": {"vendor": "vendor1", "lanes": [{}]}, "slot": 1}` + "\n# derives lab/port/name1/member/port1",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("lab/v1/lab.md lacks %q", want)
		}
	}
}

// TestDocsCommitted generates the reference pages of the models under
// models/ in-process and compares them with the committed docs/models:
// TestGolden's check for the pages, without buf (make generate writes
// them; -update rewrites them here).
func TestDocsCommitted(t *testing.T) {
	root := repoRoot(t)
	models := filepath.Join(root, "models")
	req := compileRequest(t, &protocompile.SourceResolver{ImportPaths: []string{models}}, "", modelFiles(t, models)...)
	got, err := generateDocs(t, req)
	if err != nil {
		t.Fatalf("generate docs: %v", err)
	}
	if _, ok := got["README.md"]; !ok {
		t.Errorf("no index README.md among %v", slices.Sorted(maps.Keys(got)))
	}
	compareTree(t, filepath.Join(root, "docs", "models"), got, "run make generate (or go test -update) and commit")
}

// vocabulary lists the fields of the messages of the annotation
// vocabulary (options.proto), read from its descriptor: every option a
// schema can set, new ones included.
func vocabulary() []protoreflect.FieldDescriptor {
	var out []protoreflect.FieldDescriptor
	msgs := kvdescriptorv1.File_kvdescriptor_v1_options_proto.Messages()
	for i := range msgs.Len() {
		fields := msgs.Get(i).Fields()
		for j := range fields.Len() {
			out = append(out, fields.Get(j))
		}
	}
	return out
}

// clearOption clears option field fd wherever it is set in the options
// message m (nested option messages included). It returns how many it
// cleared and the text they held (strings and enum names, at any depth).
func clearOption(m protoreflect.Message, fd protoreflect.FieldDescriptor) (int, []string) {
	n, words := 0, []string(nil)
	var subs []protoreflect.Message
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case f.FullName() == fd.FullName():
			n++
			words = append(words, texts(v, f)...)
		case f.Message() != nil && f.IsList():
			for i := range v.List().Len() {
				subs = append(subs, v.List().Get(i).Message())
			}
		case f.Message() != nil && !f.IsMap():
			subs = append(subs, v.Message())
		}
		return true
	})
	if n > 0 {
		m.Clear(fd)
	}
	for _, s := range subs {
		sn, sw := clearOption(s, fd)
		n, words = n+sn, append(words, sw...)
	}
	return n, words
}

// clearInFile clears option fd in the model and field options of every
// message of file fp (see clearOption).
func clearInFile(fp *descriptorpb.FileDescriptorProto, fd protoreflect.FieldDescriptor) (int, []string) {
	n, words := 0, []string(nil)
	add := func(o proto.Message) {
		if o != nil && o.ProtoReflect().IsValid() {
			on, ow := clearOption(o.ProtoReflect(), fd)
			n, words = n+on, append(words, ow...)
		}
	}
	var walk func(msgs []*descriptorpb.DescriptorProto)
	walk = func(msgs []*descriptorpb.DescriptorProto) {
		for _, msg := range msgs {
			add(msg.GetOptions())
			for _, f := range msg.GetField() {
				add(f.GetOptions())
			}
			walk(msg.GetNestedType())
		}
	}
	walk(fp.GetMessageType())
	return n, words
}

// texts lists the text that a value holds: strings and enum names, of
// lists and messages too.
func texts(v protoreflect.Value, fd protoreflect.FieldDescriptor) []string {
	if fd.IsList() {
		var out []string
		l := v.List()
		for i := range l.Len() {
			out = append(out, scalarTexts(l.Get(i), fd)...)
		}
		return out
	}
	return scalarTexts(v, fd)
}

func scalarTexts(v protoreflect.Value, fd protoreflect.FieldDescriptor) []string {
	switch x := v.Interface().(type) {
	case string:
		return []string{x}
	case protoreflect.EnumNumber:
		return []string{string(fd.Enum().Values().ByNumber(x).Name())}
	case protoreflect.Message:
		var out []string
		x.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			out = append(out, texts(v, f)...)
			return true
		})
		return out
	}
	return nil
}

// TestDocsRenderEveryOption fails when an option of the vocabulary is not
// rendered by the reference pages. For each field of each message of
// options.proto, read from its descriptor (so an option added to
// options.proto is checked without changing this test), it clears the
// option wherever testdata/docs/lab sets it and generates again: the
// pages must change. Where the schema is not valid without the option
// (a key, a dependency's label), the generator fails instead, and every
// text the option held must appear on the pages. An option that the
// schema sets nowhere fails too: add it to lab.proto and render it.
func TestDocsRenderEveryOption(t *testing.T) {
	t.Parallel()
	base, err := generateDocs(t, labRequest(t))
	if err != nil {
		t.Fatalf("generate docs: %v", err)
	}
	all := base["README.md"] + base["lab/v1/lab.md"]
	for _, fd := range vocabulary() {
		name := string(fd.Parent().Name()) + "." + string(fd.Name())
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := labRequest(t)
			n, words := 0, []string(nil)
			for _, fp := range req.GetProtoFile() {
				if fp.GetName() == docsLab {
					n, words = clearInFile(fp, fd)
				}
			}
			if n == 0 {
				t.Fatalf("testdata/docs/%s sets %s nowhere: set it there and render it (docs.go), then go test -update", docsLab, name)
			}
			got, err := generateDocs(t, req)
			if err == nil {
				if got["README.md"]+got["lab/v1/lab.md"] == all {
					t.Errorf("the pages are the same with and without %s: docs.go does not render it", name)
				}
				return
			}
			if len(words) == 0 {
				t.Fatalf("without %s the schema is invalid (%v), and it holds no text to look for on the pages", name, err)
			}
			for _, w := range words {
				if !strings.Contains(all, w) {
					t.Errorf("%s = %q: not on the pages (without it, the schema is invalid: %v)", name, w, err)
				}
			}
		})
	}
}

// TestDocsFormats checks that the pages describe every format of the
// vocabulary (lab.proto uses each): "`IP`: an IPv4 ...".
func TestDocsFormats(t *testing.T) {
	t.Parallel()
	got, err := generateDocs(t, labRequest(t))
	if err != nil {
		t.Fatalf("generate docs: %v", err)
	}
	values := kvdescriptorv1.Format_FORMAT_UNSPECIFIED.Descriptor().Values()
	for i := range values.Len() {
		v := string(values.Get(i).Name())
		if values.Get(i).Number() == 0 {
			v = "NAME` (default)"
		} else {
			v += "`"
		}
		if !regexp.MustCompile("`" + regexp.QuoteMeta(v) + `: \w`).MatchString(got["lab/v1/lab.md"]) {
			t.Errorf("lab/v1/lab.md does not describe the format %s (as %q followed by its description): describe it in formatDocs (docs.go) and use it in testdata/docs/%s", values.Get(i).Name(), "`"+v+": ", docsLab)
		}
	}
}

// TestDocsIndexLinks checks that every link of the committed index leads
// to a page and a heading of it.
func TestDocsIndexLinks(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot(t), "docs", "models")
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(index), -1)
	if len(links) == 0 {
		t.Fatal("the index has no links")
	}
	for _, l := range links {
		page, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(l[1])))
		if err != nil {
			t.Errorf("the index links to %s: %v", l[1], err)
			continue
		}
		if l[2] == "" {
			continue
		}
		found := false
		for _, h := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(string(page), -1) {
			found = found || "#"+githubAnchor(h[1]) == l[2]
		}
		if !found {
			t.Errorf("the index links to %s%s, a heading %s does not have", l[1], l[2], l[1])
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
