package kv_test

import (
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func TestAmbiguity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		want     string // substring of the reason; "" for unambiguous
	}{
		{name: "route: prefix before /gw/", template: "vpp/route/vrf/{vrf:uint}/dst/{dst:ipprefix}/gw/{gw:ip}"},
		{name: "names separated by /", template: "vpp/bd/{name}/interface/{iface}"},
		{name: "prefix before /", template: "linux/route/{dst:ipprefix}/{oif}"},
		{name: "interface address before /", template: "a/{addr:ipiface}/{x}"},
		{name: "mac before /", template: "a/{mac:mac}/{x}"},
		{name: "last placeholder", template: "a/{x}"},
		{name: "adjacent placeholders", template: "a/{x}{y}", want: "placeholders {x} and {y} have no literal text between them"},
		{name: "name before -", template: "a/{x}-{y}", want: `placeholder {x} (format name) is followed by "-"`},
		{name: "ip before .", template: "a/{x:ip}.{y:uint}", want: `placeholder {x} (format ip) is followed by "."`},
		{name: "ip before :", template: "a/{x:ip}:{y:uint}", want: `followed by ":"`},
		{name: "uint before a digit", template: "a/{x:uint}0{y}", want: `followed by "0"`},
		{name: "uint before a digit and /", template: "a/{x:uint}0/{y}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := kv.MustParseKeyTemplate(tc.template).Ambiguity()
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("Ambiguity(%q) = %q, want %q", tc.template, got, tc.want)
			}
		})
	}
}
