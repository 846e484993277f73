package kv_test

import (
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestParseKeyValues: the ParseKey functions accept exactly the key form
// of their format, what KeyValue writes, and nothing a key never holds.
func TestParseKeyValues(t *testing.T) {
	t.Parallel()
	parse := map[kv.Format]func(string) bool{
		kv.FormatName:        func(s string) bool { _, ok := kv.ParseKeyName(s); return ok },
		kv.FormatUint:        func(s string) bool { _, ok := kv.ParseKeyUint(s, 64); return ok },
		kv.FormatIP:          func(s string) bool { _, ok := kv.ParseKeyIP(s); return ok },
		kv.FormatIPPrefix:    func(s string) bool { _, ok := kv.ParseKeyIPPrefix(s); return ok },
		kv.FormatIPInterface: func(s string) bool { _, ok := kv.ParseKeyIPInterface(s); return ok },
		kv.FormatMAC:         func(s string) bool { _, ok := kv.ParseKeyMAC(s); return ok },
	}
	tests := []struct {
		name   string
		format kv.Format
		in     string
		want   bool
	}{
		{"name", kv.FormatName, "eth0", true},
		{"name: escapes", kv.FormatName, "a%2Fb%25", true},
		{"name: empty", kv.FormatName, "", false},
		{"name: NUL", kv.FormatName, "eth\x000", false},
		{"name: newline", kv.FormatName, "eth0\n", false},
		{"name: DEL", kv.FormatName, "\x7f", false},
		{"name: raw slash", kv.FormatName, "a/b", false},
		{"name: lone percent", kv.FormatName, "%", false},
		{"name: truncated escape", kv.FormatName, "a%4", false},
		{"name: not hex", kv.FormatName, "%zz", false},
		{"name: escaped control character", kv.FormatName, "%00", false},
		{"uint", kv.FormatUint, "42", true},
		{"uint: leading zero", kv.FormatUint, "042", false},
		{"ip: IPv4", kv.FormatIP, "10.0.0.1", true},
		{"ip: IPv6", kv.FormatIP, "fe80::1", true},
		{"ip: IPv4-mapped", kv.FormatIP, "::ffff:10.0.0.1", true},
		{"ip: zone", kv.FormatIP, "fe80::1%eth0", false},
		{"ip: leading zero", kv.FormatIP, "10.0.0.01", false},
		{"ip: IPv6 upper case", kv.FormatIP, "FE80::1", false},
		{"ipprefix", kv.FormatIPPrefix, "10.0.0.0/8", true},
		{"ipprefix: host bits", kv.FormatIPPrefix, "10.0.0.1/8", false},
		{"ipprefix: IPv6", kv.FormatIPPrefix, "2001:db8::/32", true},
		{"ipiface", kv.FormatIPInterface, "10.0.0.1/8", true},
		{"ipiface: length with a leading zero", kv.FormatIPInterface, "10.0.0.1/08", false},
		{"mac", kv.FormatMAC, "02:ab:00:00:00:01", true},
		{"mac: EUI-64", kv.FormatMAC, "02:ab:00:00:00:01:02:03", false},
		{"mac: 20-octet InfiniBand", kv.FormatMAC, "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01", false},
		{"mac: upper case", kv.FormatMAC, "02:AB:00:00:00:01", false},
		{"mac: dashes", kv.FormatMAC, "02-ab-00-00-00-01", false},
		{"mac: dots", kv.FormatMAC, "02ab.0000.0001", false},
		{"mac: separator moved", kv.FormatMAC, "02a:b00:00:00:01", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parse[tt.format](tt.in); got != tt.want {
				t.Errorf("ParseKey (%v) of %q = %v, want %v", tt.format, tt.in, got, tt.want)
			}
			if tt.want {
				if back := kv.KeyValue(tt.format, mustDecode(t, tt.format, tt.in)); back != tt.in {
					t.Errorf("KeyValue(%v) of the parsed %q = %q", tt.format, tt.in, back)
				}
			}
		})
	}
}

func mustDecode(t *testing.T, f kv.Format, s string) string {
	t.Helper()
	if f != kv.FormatName {
		return s
	}
	u, err := kv.UnescapeSegment(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCheckFormatNames: a name with a control character is invalid, so
// that a value whose key field holds one is INVALID naming the field.
func TestCheckFormatNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":          "",
		"eth0":      "",
		"a/b%":      "",
		"eth\x000":  `"eth\x000" holds the control character 0x00 at offset 3; a name in a key cannot`,
		"\nx":       `"\nx" holds the control character 0x0a at offset 0; a name in a key cannot`,
		"x\x7f":     `"x\x7f" holds the control character 0x7f at offset 1; a name in a key cannot`,
		"ünï/çødé":  "",
		"tab\there": `"tab\there" holds the control character 0x09 at offset 3; a name in a key cannot`,
	} {
		if got := kv.CheckFormat(kv.FormatName, in); got != want {
			t.Errorf("CheckFormat(name, %q) = %q, want %q", in, got, want)
		}
	}
	if got := kv.CheckFormat(kv.FormatMAC, "02:ab:00:00:00:01:02:03"); got == "" {
		t.Errorf("CheckFormat accepts an EUI-64 as a MAC address")
	}
}
