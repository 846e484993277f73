package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
)

// optionNames lists every option of options.proto, as the reference names
// them: the extensions as "(kvdescriptor.v1.model)", the fields of its
// messages as "Message.field", the values of its enums as "Enum.VALUE".
func optionNames(fd protoreflect.FileDescriptor) []string {
	var names []string
	exts := fd.Extensions()
	for i := range exts.Len() {
		names = append(names, "("+string(exts.Get(i).FullName())+")")
	}
	msgs := fd.Messages()
	for i := range msgs.Len() {
		m := msgs.Get(i)
		fields := m.Fields()
		for j := range fields.Len() {
			names = append(names, string(m.Name())+"."+string(fields.Get(j).Name()))
		}
	}
	enums := fd.Enums()
	for i := range enums.Len() {
		e := enums.Get(i)
		values := e.Values()
		for j := range values.Len() {
			names = append(names, string(e.Name())+"."+string(values.Get(j).Name()))
		}
	}
	slices.Sort(names)
	return names
}

// referenceHeading is the heading of one option in annotations.md.
var referenceHeading = regexp.MustCompile("(?m)^### `([^`]+)`$")

// TestAnnotationReference fails when an option of options.proto (its
// descriptor, as the generated Go package registers it) has no heading in
// docs/annotations.md, when a heading names an option that does not
// exist, or when an option's section shows no proto example.
func TestAnnotationReference(t *testing.T) {
	t.Parallel()
	md := readRepoFile(t, "docs/annotations.md")
	want := optionNames(kvdescriptorv1.File_kvdescriptor_v1_options_proto)
	if len(want) < 40 {
		t.Fatalf("options.proto has only %d options? %q", len(want), want)
	}

	documented := map[string]string{} // name -> its section
	locs := referenceHeading.FindAllStringSubmatchIndex(md, -1)
	for i, loc := range locs {
		name := md[loc[2]:loc[3]]
		end := len(md)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if next := strings.Index(md[loc[1]:end], "\n## "); next >= 0 {
			end = loc[1] + next
		}
		if _, dup := documented[name]; dup {
			t.Errorf("annotations.md documents %s twice", name)
		}
		documented[name] = md[loc[1]:end]
	}
	for _, name := range want {
		sec, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("annotations.md does not document %s (a heading ### `%s`)", name, name)
		case !strings.Contains(sec, "```proto\n"):
			t.Errorf("annotations.md shows no proto example for %s", name)
		}
	}
	for name := range documented {
		if !slices.Contains(want, name) {
			t.Errorf("annotations.md documents %s, which options.proto does not have", name)
		}
	}
}

func TestOptionNames(t *testing.T) {
	names := optionNames(kvdescriptorv1.File_kvdescriptor_v1_options_proto)
	for _, n := range []string{"(kvdescriptor.v1.model)", "(kvdescriptor.v1.field)", "ModelOptions.key", "Validate.allow_unknown", "Format.MAC"} {
		if !slices.Contains(names, n) {
			t.Errorf("optionNames lacks %s: %q", n, names)
		}
	}
}
