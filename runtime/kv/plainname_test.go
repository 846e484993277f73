package kv

import (
	"strings"
	"testing"
)

func TestCheckPlainName(t *testing.T) {
	for _, s := range []string{"", "blue", "ns-1_a.b", "é", strings.Repeat("a", MaxPlainName)} {
		if r := CheckPlainName(s); r != "" {
			t.Errorf("CheckPlainName(%q) = %q, want valid", s, r)
		}
	}
	for s, want := range map[string]string{
		"../../proc/1/ns/net":               "'/' at offset 2",
		"a/b":                               "'/' at offset 1",
		"/var/run/netns/x":                  "'/' at offset 0",
		".":                                 "names a directory",
		"..":                                "names a directory",
		"a\x00b":                            "control character U+0000",
		"a b":                               "space U+0020",
		"a\tb":                              "control character U+0009",
		"a\u00a0b":                          "space U+00A0",
		"a\xffb":                            "not valid UTF-8",
		strings.Repeat("a", MaxPlainName+1): "256 bytes, more than 255",
	} {
		if r := CheckPlainName(s); !strings.Contains(r, want) {
			t.Errorf("CheckPlainName(%q) = %q, want it to say %q", s, r, want)
		}
	}
}

func TestCheckIfName(t *testing.T) {
	for _, s := range []string{"", "eth0", "veth-a.1", strings.Repeat("a", MaxIfName)} {
		if r := CheckIfName(s); r != "" {
			t.Errorf("CheckIfName(%q) = %q, want valid", s, r)
		}
	}
	for s, want := range map[string]string{
		"eth0:1":                         "':' at offset 4",
		"a/b":                            "not an interface name: it holds '/'",
		"..":                             "not an interface name",
		"a b":                            "space",
		strings.Repeat("a", MaxIfName+1): "16 bytes, more than 15",
	} {
		if r := CheckIfName(s); !strings.Contains(r, want) {
			t.Errorf("CheckIfName(%q) = %q, want it to say %q", s, r, want)
		}
	}
}

func TestCheckIPv4(t *testing.T) {
	for _, s := range []string{"", "10.0.0.1", "0.0.0.0", "255.255.255.255"} {
		if r := CheckIPv4(s); r != "" {
			t.Errorf("CheckIPv4(%q) = %q, want valid", s, r)
		}
	}
	for s, want := range map[string]string{
		"2001:db8::1":     `"2001:db8::1" is not an IPv4 address`,
		"::ffff:10.0.0.1": `"::ffff:10.0.0.1" is not an IPv4 address`,
		"10.0.0.1/24":     `"10.0.0.1/24" is not an IP address`,
		"10.0.0":          `"10.0.0" is not an IP address`,
	} {
		if r := CheckIPv4(s); r != want {
			t.Errorf("CheckIPv4(%q) = %q, want %q", s, r, want)
		}
	}
}
