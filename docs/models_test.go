package docs

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	_ "github.com/kvdescriptor/kvdescriptor/generated/examples/mock/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/examples/sysctl/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/abf/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/acl/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipsec/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/nat/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/stn/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/vpp/wireguard/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

var (
	modelHeading = regexp.MustCompile("(?m)^#{2,3} (?:Derived )?`([^`]+)`$")
	exampleKeyRe = regexp.MustCompile("(?m)^\\| Example key \\| `([^`]+)` \\|$")
)

// TestModelReferenceExamples reads the generated model reference
// (docs/models, one page per .proto file) as a user would: every model's
// example key must be a key of that model, and every example entry must
// decode (protojson) and pass the model's validation, as the agent's file
// source would decode and validate it, deriving the key it says it
// derives. The schemas are the generated packages' (kv.SchemaDescriptors):
// a page whose models this test does not link fails, naming the import
// to add above.
func TestModelReferenceExamples(t *testing.T) {
	t.Parallel()
	ds, err := kv.SchemaDescriptors()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]kv.Descriptor{}
	for _, d := range ds {
		byName[d.Name()] = d
	}
	dir := filepath.Join(repoRoot(t), "docs", "models")
	pages := 0
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Base(p) == "README.md" || !strings.HasSuffix(p, ".md") {
			return err
		}
		pages++
		rel, _ := filepath.Rel(repoRoot(t), p)
		md := readRepoFile(t, filepath.ToSlash(rel))
		checkModelPage(t, rel, md, byName)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages == 0 {
		t.Fatalf("no pages under %s", dir)
	}
}

func checkModelPage(t *testing.T, page, md string, byName map[string]kv.Descriptor) {
	heads := modelHeading.FindAllStringSubmatchIndex(md, -1)
	if len(heads) == 0 {
		t.Errorf("%s: no model", page)
	}
	for i, h := range heads {
		name := md[h[2]:h[3]]
		end := len(md)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		sec := md[h[1]:end]
		d := byName[name]
		if d == nil {
			t.Errorf("%s: model %s is not linked into this test: add a blank import of its generated package to docs/models_test.go", page, name)
			continue
		}
		k := exampleKeyRe.FindStringSubmatch(sec)
		if k == nil {
			t.Errorf("%s: %s has no example key", page, name)
		} else if !d.IsKey(k[1]) {
			t.Errorf("%s: the example key %q is not a key of %s (%s)", page, k[1], name, d.KeyTemplate())
		}
		examples := 0
		for _, b := range blocks(t, sec) {
			if b.info != "yaml" {
				continue
			}
			examples++
			checkModelExample(t, page, name, b.text, byName)
		}
		if examples != 1 {
			t.Errorf("%s: %s has %d example blocks, want 1", page, name, examples)
		}
	}
}

// checkModelExample checks one example entry (a line "KEY": {VALUE} and
// optionally "# derives KEY").
func checkModelExample(t *testing.T, page, name, text string, byName map[string]kv.Descriptor) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var entry map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+lines[0]+"}"), &entry); err != nil || len(entry) != 1 {
		t.Errorf("%s: %s: the example %q is not one entry: %v", page, name, lines[0], err)
		return
	}
	for key, raw := range entry {
		var d kv.Descriptor
		for _, x := range byName {
			if x.IsKey(key) {
				d = x
			}
		}
		if d == nil {
			t.Errorf("%s: %s: the example's key %q is no linked model's", page, name, key)
			return
		}
		v := d.ValueType().New().Interface()
		if err := protojson.Unmarshal(raw, v); err != nil {
			t.Errorf("%s: %s: the example's value %s does not decode as %s: %v", page, name, raw, d.Name(), err)
			return
		}
		if err := d.Validate(key, v); err != nil {
			t.Errorf("%s: %s: the example %s is not valid: %v", page, name, lines[0], err)
		}
		if d.Name() != name && len(lines) < 2 {
			t.Errorf("%s: %s: the example configures %s and says nothing of what it derives", page, name, d.Name())
		}
		for _, l := range lines[1:] {
			want, ok := strings.CutPrefix(l, "# derives ")
			if !ok {
				t.Errorf("%s: %s: unexpected line %q in the example", page, name, l)
				continue
			}
			var derived []string
			for _, x := range d.Derived(key, v) {
				derived = append(derived, x.Key)
			}
			if !slices.Contains(derived, want) {
				t.Errorf("%s: %s: the example derives %q, not %q", page, name, derived, want)
			}
			if dd := byName[name]; dd != nil && !dd.IsKey(want) {
				t.Errorf("%s: %s: the derived key %q is not a key of %s", page, name, want, name)
			}
		}
	}
}
