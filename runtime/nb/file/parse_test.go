package file_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	interfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	l3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

// models maps key prefixes to message types, as the scheduler's
// descriptors would.
type models map[string]protoreflect.MessageType

func (m models) MessageType(key string) (protoreflect.MessageType, bool) {
	for prefix, mt := range m {
		if strings.HasPrefix(key, prefix) {
			return mt, true
		}
	}
	return nil, false
}

var testModels = models{
	"linux/interface/": (&interfaces.Interface{}).ProtoReflect().Type(),
	"linux/route/":     (&l3.Route{}).ProtoReflect().Type(),
	"test/string/":     (&wrapperspb.StringValue{}).ProtoReflect().Type(),
	"test/int64/":      (&wrapperspb.Int64Value{}).ProtoReflect().Type(),
}

func veth(name, peer string, addrs ...string) *interfaces.Interface {
	return &interfaces.Interface{Name: name, Type: interfaces.Interface_TYPE_VETH, VethPeer: peer, IpAddresses: addrs}
}

func checkChanges(t *testing.T, got []nb.Change, want ...nb.Change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d changes %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i].Key != want[i].Key || !proto.Equal(got[i].Value, want[i].Value) {
			t.Errorf("change %d: got %s=%v, want %s=%v", i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
}

func TestParseYAML(t *testing.T) {
	data := `# the example
linux/interface/veth1:
  name: veth1
  type: TYPE_VETH
  vethPeer: veth2
  ipAddresses: ["10.0.0.1/24"]
linux/interface/veth2: &v2
  name: veth2
  type: 3          # an enum by number
  veth_peer: veth1 # the .proto's name
  mtu: 0x5dc
linux/interface/1234:
  name: 1234       # a string field: the string "1234"
  vxlan: {vni: 0010_0, dstPort: 4789} # 0010_0 is decimal
linux/route/veth1/10.1.0.0/16:
  outgoingInterface: veth1
  dstNetwork: 10.1.0.0/16
  gwAddr: 10.0.0.2
  scope: SCOPE_GLOBAL
linux/interface/empty:
test/int64/big: 9223372036854775807
test/int64/str: "-9223372036854775808"
test/string/yes: yes
`
	changes, err := file.Parse("config.yaml", []byte(data), testModels)
	if err != nil {
		t.Fatal(err)
	}
	v2 := veth("veth2", "veth1")
	v2.Type = interfaces.Interface_Type(3)
	v2.Mtu = 1500
	checkChanges(t, changes,
		nb.Change{Key: "linux/interface/veth1", Value: veth("veth1", "veth2", "10.0.0.1/24")},
		nb.Change{Key: "linux/interface/veth2", Value: v2},
		nb.Change{Key: "linux/interface/1234", Value: &interfaces.Interface{Name: "1234", Vxlan: &interfaces.Interface_Vxlan{Vni: 100, DstPort: 4789}}},
		nb.Change{Key: "linux/route/veth1/10.1.0.0/16", Value: &l3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.2", Scope: l3.Route_SCOPE_GLOBAL}},
		nb.Change{Key: "linux/interface/empty", Value: &interfaces.Interface{}},
		nb.Change{Key: "test/int64/big", Value: wrapperspb.Int64(9223372036854775807)},
		nb.Change{Key: "test/int64/str", Value: wrapperspb.Int64(-9223372036854775808)},
		nb.Change{Key: "test/string/yes", Value: wrapperspb.String("yes")},
	)
}

func TestParseForms(t *testing.T) {
	list := `
- key: linux/interface/veth1
  value: {name: veth1, type: TYPE_VETH, vethPeer: veth2, ipAddresses: [10.0.0.1/24]}
- key: linux/interface/base
  value: &base {type: TYPE_VETH}
- key: linux/interface/veth2
  value: {<<: *base, name: veth2, vethPeer: veth1}
- key: linux/interface/veth3
  value:
    <<: [{mtu: 1400, name: x}, {mtu: 1500, type: TYPE_VETH}]
    name: veth3
`
	changes, err := file.Parse("config.yml", []byte(list), testModels)
	if err != nil {
		t.Fatal(err)
	}
	checkChanges(t, changes,
		nb.Change{Key: "linux/interface/veth1", Value: veth("veth1", "veth2", "10.0.0.1/24")},
		nb.Change{Key: "linux/interface/base", Value: &interfaces.Interface{Type: interfaces.Interface_TYPE_VETH}},
		nb.Change{Key: "linux/interface/veth2", Value: veth("veth2", "veth1")},
		nb.Change{Key: "linux/interface/veth3", Value: &interfaces.Interface{Name: "veth3", Type: interfaces.Interface_TYPE_VETH, Mtu: 1400}},
	)
	for _, empty := range []string{"{}", "[]", "~", "# nothing\n{}\n"} {
		changes, err := file.Parse("config.yaml", []byte(empty), testModels)
		if err != nil || len(changes) != 0 {
			t.Errorf("%q: got %v, %v; want no changes", empty, changes, err)
		}
	}
}

func TestParseJSON(t *testing.T) {
	data := "{\n\t\"linux/interface/veth1\": {\n\t\t\"name\": \"veth1\",\n\t\t\"type\": \"TYPE_VETH\",\n\t\t\"vethPeer\": \"veth2\",\n\t\t\"ipAddresses\": [\"10.0.0.1/24\"]\n\t},\n\t\"test/int64/big\": 9223372036854775807\n}\n"
	changes, err := file.Parse("config.json", []byte(data), testModels)
	if err != nil {
		t.Fatal(err)
	}
	checkChanges(t, changes,
		nb.Change{Key: "linux/interface/veth1", Value: veth("veth1", "veth2", "10.0.0.1/24")},
		nb.Change{Key: "test/int64/big", Value: wrapperspb.Int64(9223372036854775807)},
	)
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, data string
		want             []string // in the message
		unknown          bool
	}{
		{"malformed YAML", "config.yaml", "linux/interface/a:\n  name: a\n  type: [TYPE_VETH\n", []string{"config.yaml:"}, false},
		{"bad indent", "config.yaml", "linux/interface/a:\n  name: a\n type: x\n", []string{"config.yaml:3: did not find expected key"}, false},
		{"malformed JSON", "config.json", "{\n  \"linux/interface/a\": {\n    \"name\": \"a\",\n  }\n}\n", []string{"config.json:4:3", "invalid JSON"}, false},
		{"trailing JSON", "config.json", "{}\n{}\n", []string{"config.json:2:1"}, false},
		{"unknown key", "config.yaml", "linux/interface/a: {name: a}\n\nlinux/foo/x:\n  name: x\n", []string{`config.yaml:3:1: key "linux/foo/x": no model handles it (unknown key)`}, true},
		{"duplicate key", "config.yaml", "linux/interface/a: {name: a}\nlinux/interface/b: {name: b}\nlinux/interface/a: {name: c}\n", []string{`config.yaml:3:1: key "linux/interface/a": duplicate key (first at line 1)`}, false},
		{"unknown field", "config.yaml", "linux/interface/a:\n  name: a\n  colour: blue\n", []string{`config.yaml:3:3: key "linux/interface/a": linux.interfaces.v1.Interface has no field "colour"`}, false},
		{"duplicate field", "config.yaml", "linux/interface/a:\n  name: a\n  mtu: 1\n  mtu: 2\n", []string{`config.yaml:4:3: key "linux/interface/a": "mtu" twice (first at line 3)`}, false},
		{"bad enum", "config.yaml", "linux/interface/a:\n  name: a\n  type: TYPE_BANANA\n", []string{`config.yaml:3:9: key "linux/interface/a": field type: "TYPE_BANANA" is not a value of linux.interfaces.v1.Interface.Type`}, false},
		{"bad number", "config.yaml", "linux/interface/a:\n  mtu: -1\n", []string{`config.yaml:2:8: key "linux/interface/a": field mtu: "-1" is not a uint32`}, false},
		{"bad bool", "config.yaml", "linux/interface/a:\n  enabled: yes\n", []string{`config.yaml:2:12: key "linux/interface/a": field enabled: "yes" is not a boolean`}, false},
		{"list as mapping", "config.yaml", "linux/interface/a:\n  name: a\n  ipAddresses: {x: y}\n", []string{`config.yaml:3:16: key "linux/interface/a": field ipAddresses: a list is expected`}, false},
		{"message as scalar", "config.yaml", "linux/interface/a:\n  vxlan: 5\n", []string{`config.yaml:2:10: key "linux/interface/a": field vxlan: a mapping (a linux.interfaces.v1.Interface.Vxlan) is expected`}, false},
		{"value not a mapping", "config.yaml", "linux/interface/a: [1]\n", []string{`config.yaml:1:20: key "linux/interface/a": the value must be a mapping (a linux.interfaces.v1.Interface)`}, false},
		{"wrapper as mapping", "config.yaml", "test/string/a: {value: x}\n", []string{`config.yaml:1:16: key "test/string/a": the value is not a google.protobuf.StringValue: invalid value for string field value: {`}, false},
		{"int64 overflow", "config.yaml", "test/int64/x: 9223372036854775808\n", []string{`config.yaml:1:15: key "test/int64/x": the value is not a google.protobuf.Int64Value: invalid value for int64 field value: 9223372036854775808`}, false},
		{"not a mapping", "config.yaml", "- 1\n", []string{"config.yaml:1:3", "an entry of the list"}, false},
		{"empty", "config.yaml", "\n# nothing yet\n", []string{"config.yaml: the file is empty"}, false},
		{"empty JSON", "config.json", "", []string{"config.json: the file is empty"}, false},
		{"two documents", "config.yaml", "{}\n---\n{}\n", []string{"config.yaml:2:1", "second document"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := file.Parse(tc.file, []byte(tc.data), testModels)
			if err == nil {
				t.Fatalf("no error; changes %v", changes)
			}
			if changes != nil {
				t.Errorf("changes with an error: %v", changes)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var pe *file.ParseError
			if !errors.As(err, &pe) {
				t.Errorf("error %v is not a *ParseError", err)
			}
			var uk *nb.UnknownKeyError
			if got := errors.As(err, &uk); got != tc.unknown {
				t.Errorf("errors.As(UnknownKeyError) = %v, want %v", got, tc.unknown)
			}
			t.Log(err)
		})
	}
}

func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("a" + string(rune('0'+i%10)) + string(rune('a'+i)) + ": &a" + string(rune('a'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			if i == 1 {
				b.WriteString("*a0")
			} else {
				b.WriteString("*a" + string(rune('a'+i-1)))
			}
		}
		b.WriteString("]\n")
	}
	m := models{"": (&wrapperspb.StringValue{}).ProtoReflect().Type()}
	if _, err := file.Parse("bomb.yaml", []byte(b.String()), m); err == nil {
		t.Fatal("no error")
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"linux/interface/veth1:\n  name: veth1\n  type: TYPE_VETH\n  vethPeer: veth2\n  ipAddresses: [\"10.0.0.1/24\"]\n",
		"- key: linux/route/a/10.0.0.0/8\n  value: {outgoingInterface: a, dstNetwork: 10.0.0.0/8, metric: 0x10}\n",
		"{\"linux/interface/a\": {\"name\": \"a\", \"mtu\": 1500}}",
		"a: &a {name: x}\nlinux/interface/b: {<<: *a, vxlan: {vni: 1}}\n",
		"test/int64/x: -0b101\ntest/string/y: !!binary aGVsbG8=\n",
		"x: [*y]\n",
		"{}",
	} {
		f.Add("config.yaml", []byte(seed))
		f.Add("config.json", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		changes, err := file.Parse(name, data, testModels)
		if err != nil && changes != nil {
			t.Fatal("changes with an error")
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}

// TestParseSyntaxErrorLine checks the line of each kind of YAML syntax
// error: the parser's (which yaml.v3 numbers from 0), the scanner's (from
// 1), those on the first line (which it gives no line) and those it gives
// no place at all.
func TestParseSyntaxErrorLine(t *testing.T) {
	const head = "linux/interface/a:\n  name: a\n  mtu: 1500\n" // lines 1-3
	for _, tc := range []struct {
		name, data string
		line       int
		msg        string
	}{
		{"tab starting a line", head + "linux/interface/b:\n  name: b\n\ttype: TYPE_VETH\n", 6, "found a tab character that violates indentation"},
		{"tab after a long scalar", head + "linux/interface/b:\n  name: b\n    c\n    d\n\ttype: TYPE_VETH\n", 8, "found a tab character that violates indentation"},
		{"tab after a scalar of line 1", "linux/interface/a: a\n\tb\n\tc\n", 2, "found a tab character that violates indentation"},
		{"tab indenting a key", head + "linux/interface/b:\n\tname: b\n", 5, "found character that cannot start any token"},
		{"unclosed [", head + "linux/interface/b:\n  ipAddresses: [10.0.0.1/24\n  mtu: 1\n", 5, "did not find expected ',' or ']'"},
		{"unclosed [ at the end", head + "linux/interface/b:\n  ipAddresses: [10.0.0.1/24\n", 5, "did not find expected ',' or ']'"},
		{"unclosed {", head + "linux/interface/b: {name: b\nlinux/interface/c: {}\n", 4, "did not find expected ',' or '}'"},
		{"bad indent", head + " linux/interface/b: {}\n", 4, "did not find expected key"},
		{"list in a mapping", head + "- linux/interface/b\n", 4, "did not find expected key"},
		{"[ at the end", head + "linux/interface/b:\n  ipAddresses: [\n", 5, "did not find expected node content"},
		{"unclosed quote", head + "linux/interface/b:\n  name: \"b\n", 5, "found unexpected end of stream"},
		{"key without colon", head + "linux/interface/b\nlinux/interface/c: {}\n", 4, "could not find expected ':'"},
		{"two colons", head + "linux/interface/b: name: b\n", 4, "mapping values are not allowed in this context"},
		{"undefined tag", head + "linux/interface/b: !x!y {}\n", 4, "found undefined tag handle"},
		{"first line", "linux/interface/a: name: a\n", 1, "mapping values are not allowed in this context"},
		{"first line [", "linux/interface/a: {name: [a}\n", 1, "did not find expected ',' or ']'"},
		{"unknown anchor", head + "linux/interface/b:\n  name: *nothing\n", 5, "unknown anchor 'nothing' referenced"},
		{"control character", head + "linux/interface/b:\n  name: b\x01\n", 5, "control characters are not allowed"},
		{"bad UTF-8", head + "linux/interface/b:\n  name: b\xff\n", 5, "invalid leading UTF-8 octet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := file.Parse("config.yaml", []byte(tc.data), testModels)
			var pe *file.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Line != tc.line || pe.Err.Error() != tc.msg {
				t.Errorf("line %d, %q; want line %d, %q\n%s", pe.Line, pe.Err, tc.line, tc.msg, numbered(tc.data))
			}
		})
	}
}

func numbered(s string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		fmt.Fprintf(&b, "%3d  %q\n", i+1, l)
	}
	return b.String()
}
