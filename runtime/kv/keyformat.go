package kv

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// KeyValue returns the key form of a placeholder value of format f: names
// escaped, numbers without leading zeros, addresses and networks
// canonical, MAC addresses (six octets) lower-case.
// A value that does not parse in its format is returned escaped as it is:
// the key then does not match the template, and validation of the value
// names the field (the value is INVALID, never mistaken for another key).
func KeyValue(f Format, s string) string {
	var buf [64]byte
	if b := AppendKeyValue(buf[:0], f, s); string(b) != s {
		return string(b)
	}
	return s // already in key form: no copy
}

// AppendKeyValue appends the key form of s (see KeyValue) to b. Unlike
// KeyValue it allocates nothing for names, numbers, addresses and
// networks when b has room, so that generated validation can compare a
// value's key with the key it was given without building a string.
func AppendKeyValue(b []byte, f Format, s string) []byte {
	switch f {
	case FormatIP:
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			return a.AppendTo(b)
		}
	case FormatIPPrefix:
		if p, err := netip.ParsePrefix(s); err == nil {
			return p.Masked().AppendTo(b)
		}
	case FormatIPInterface:
		if p, err := netip.ParsePrefix(s); err == nil {
			return p.AppendTo(b)
		}
	case FormatMAC:
		if m, err := net.ParseMAC(s); err == nil && len(m) == 6 {
			return append(b, m.String()...)
		}
	case FormatUint:
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return strconv.AppendUint(b, n, 10)
		}
	}
	return appendEscapedSegment(b, s)
}

// CheckFormat reports why s is not a valid value of format f, or "" when it
// is. Empty values are left to "required" checks. A name is valid unless
// it holds a control character, which no key may hold.
func CheckFormat(f Format, s string) string {
	if s == "" {
		return ""
	}
	switch f {
	case FormatName:
		if i := indexControl(s); i >= 0 {
			return fmt.Sprintf("%q holds the control character 0x%02x at offset %d; a name in a key cannot", s, s[i], i)
		}
	case FormatIP:
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return fmt.Sprintf("%q is not an IP address", s)
		}
	case FormatIPPrefix:
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Sprintf("%q is not an IP network (address/length)", s)
		}
	case FormatIPInterface:
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Sprintf("%q is not an interface address (address/length)", s)
		}
	case FormatMAC:
		if m, err := net.ParseMAC(s); err != nil || len(m) != 6 {
			return fmt.Sprintf("%q is not a MAC address", s)
		}
	case FormatUint:
		if _, err := strconv.ParseUint(s, 10, 64); err != nil {
			return fmt.Sprintf("%q is not an unsigned integer", s)
		}
	}
	return ""
}

// ParseKeyName unescapes a placeholder value of format FormatName. It
// fails on an empty name, a '/', a control character and an escape that
// EscapeSegment does not write.
func ParseKeyName(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	escaped := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isControl(c), c == '/':
			return "", false
		case c == '%':
			escaped = true
		}
	}
	if !escaped {
		return s, true
	}
	v, err := UnescapeSegment(s)
	return v, err == nil
}

// ParseKeyIP parses a placeholder value of format FormatIP; it must be
// canonical, without a zone.
func ParseKeyIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return a, false
	}
	// An IPv4 address that parses is canonical: ParseAddr refuses leading
	// zeros and short forms.
	if a.Is4() {
		return a, true
	}
	var buf [64]byte
	return a, string(a.AppendTo(buf[:0])) == s
}

// ParseKeyIPPrefix parses a placeholder value of format FormatIPPrefix; it
// must be canonical (host bits cleared).
func ParseKeyIPPrefix(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Masked() != p {
		return p, false
	}
	return p, canonicalPrefix(p, s)
}

// ParseKeyIPInterface parses a placeholder value of format
// FormatIPInterface; it must be canonical.
func ParseKeyIPInterface(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, false
	}
	return p, canonicalPrefix(p, s)
}

// canonicalPrefix reports whether s, which parses as p, is p's text. An
// IPv4 network that parses is (ParsePrefix refuses leading zeros in the
// address and the length).
func canonicalPrefix(p netip.Prefix, s string) bool {
	if p.Addr().Is4() {
		return true
	}
	var buf [64]byte
	return string(p.AppendTo(buf[:0])) == s
}

// ParseKeyMAC parses a placeholder value of format FormatMAC: six octets,
// lower-case hex separated by ':'.
func ParseKeyMAC(s string) (net.HardwareAddr, bool) {
	if len(s) != macLen {
		return nil, false
	}
	m := make(net.HardwareAddr, 6)
	for i := range m {
		if i > 0 && s[3*i-1] != ':' {
			return nil, false
		}
		hi, ok1 := lowerHex(s[3*i])
		lo, ok2 := lowerHex(s[3*i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		m[i] = hi<<4 | lo
	}
	return m, true
}

// macLen is the length of a MAC address in key form.
const macLen = len("00:00:00:00:00:00")

func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// ParseKeyUint parses a placeholder value of format FormatUint into an
// unsigned integer of bitSize bits.
func ParseKeyUint(s string, bitSize int) (uint64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, bitSize)
	return v, err == nil
}

// checkKeyValue reports whether v, a value that matched the structure of
// its format in a key, is in the key form of the format (what KeyValue
// writes). The structure already limits the bytes (names hold no '/' and
// no control characters, numbers only digits, addresses only hex digits,
// '.' and ':', networks exactly one '/'); this checks what the structure
// cannot, without allocating, and IPv4 without the net/netip parser.
func checkKeyValue(f Format, v string) bool {
	switch f {
	case FormatName:
		i := strings.IndexByte(v, '%')
		return i < 0 || validEscapes(v[i:])
	case FormatUint:
		// No leading zero, at most 2^64-1.
		const maxUint64 = "18446744073709551615"
		switch {
		case len(v) > 1 && v[0] == '0', len(v) > len(maxUint64):
			return false
		case len(v) == len(maxUint64):
			return v <= maxUint64
		}
		return true
	case FormatIP:
		if strings.IndexByte(v, ':') < 0 {
			_, ok := parseIPv4(v)
			return ok
		}
		_, ok := ParseKeyIP(v)
		return ok
	case FormatIPPrefix, FormatIPInterface:
		slash := strings.IndexByte(v, '/')
		if slash < 0 {
			return false
		}
		if strings.IndexByte(v[:slash], ':') < 0 {
			a, ok := parseIPv4(v[:slash])
			bits, ok2 := parseBits(v[slash+1:], 32)
			// A network has its host bits cleared.
			return ok && ok2 && (f == FormatIPInterface || a<<bits == 0)
		}
		if f == FormatIPPrefix {
			_, ok := ParseKeyIPPrefix(v)
			return ok
		}
		_, ok := ParseKeyIPInterface(v)
		return ok
	case FormatMAC:
		// Six pairs of hex digits: the five ':' are where they belong.
		return len(v) == macLen && v[2] == ':' && v[5] == ':' && v[8] == ':' && v[11] == ':' && v[14] == ':' &&
			strings.Count(v, ":") == 5
	}
	return false
}

// parseIPv4 parses an IPv4 address in canonical form: four decimal
// octets, each at most 255 and without a leading zero.
func parseIPv4(s string) (uint32, bool) {
	var a uint32
	i := 0
	for n := range 4 {
		if n > 0 {
			if i == len(s) || s[i] != '.' {
				return 0, false
			}
			i++
		}
		start, v := i, uint32(0)
		for i < len(s) && i-start < 3 && s[i] >= '0' && s[i] <= '9' {
			v = v*10 + uint32(s[i]-'0')
			i++
		}
		if i == start || v > 255 || (i-start > 1 && s[start] == '0') {
			return 0, false
		}
		a = a<<8 | v
	}
	return a, i == len(s)
}

// parseBits parses a prefix length in canonical form, at most max.
func parseBits(s string, max int) (int, bool) {
	if s == "" || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n <= max
}

// validEscapes reports whether every '%' of s starts "%25" or "%2F", the
// only escapes EscapeSegment writes.
func validEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+2 >= len(s) || s[i+1] != '2' || (s[i+2] != '5' && s[i+2] != 'F') {
			return false
		}
		i += 2
	}
	return true
}

// indexControl returns the offset of the first control character of s,
// or -1.
func indexControl(s string) int {
	for i := 0; i < len(s); i++ {
		if isControl(s[i]) {
			return i
		}
	}
	return -1
}

// MaxPlainName is the longest plain name (see CheckPlainName), in bytes:
// the longest file name of Linux file systems (NAME_MAX).
const MaxPlainName = 255

// MaxIfName is the longest kernel interface name (see CheckIfName), in
// bytes: IFNAMSIZ less the terminating NUL.
const MaxIfName = 15

// CheckIPv4 reports why s is not an IPv4 address, or "" when it is (or
// is empty): the check of the format IPV4, an IP address (CheckFormat's
// FormatIP) of the IPv4 family. An IPv4-mapped IPv6 address
// (::ffff:10.0.0.1) is IPv6.
func CheckIPv4(s string) string {
	if r := CheckFormat(FormatIP, s); r != "" || s == "" {
		return r
	}
	if !netip.MustParseAddr(s).Is4() {
		return fmt.Sprintf("%q is not an IPv4 address", s)
	}
	return ""
}

// CheckPlainName reports why s is not a plain name, or "" when it is (or
// is empty: that is left to "required" checks). A plain name is what may
// be joined onto a directory and name a file in it and nothing else, as
// a network namespace name under /var/run/netns: at most MaxPlainName
// bytes of valid UTF-8, not "." or "..", without '/', whitespace or
// control characters (NUL among them).
func CheckPlainName(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > MaxPlainName {
		return fmt.Sprintf("%q is not a plain name: %d bytes, more than %d", s, len(s), MaxPlainName)
	}
	if s == "." || s == ".." {
		return fmt.Sprintf("%q is not a plain name: it names a directory, not a name in it", s)
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%q is not a plain name: it is not valid UTF-8", s)
	}
	for i, r := range s {
		switch {
		case r == '/':
			return fmt.Sprintf("%q is not a plain name: it holds '/' at offset %d", s, i)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return fmt.Sprintf("%q is not a plain name: it holds the control character %U at offset %d", s, r, i)
		case unicode.IsSpace(r):
			return fmt.Sprintf("%q is not a plain name: it holds the space %U at offset %d", s, r, i)
		}
	}
	return ""
}

// CheckIfName reports why s is not a kernel interface name, or "" when it
// is (or is empty, left to "required" checks): a plain name (see
// CheckPlainName) of at most MaxIfName bytes, without ':' (the kernel's
// rules for a link name).
func CheckIfName(s string) string {
	if s == "" {
		return ""
	}
	if r := CheckPlainName(s); r != "" {
		return strings.Replace(r, "not a plain name", "not an interface name", 1)
	}
	if len(s) > MaxIfName {
		return fmt.Sprintf("%q is not an interface name: %d bytes, more than %d", s, len(s), MaxIfName)
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return fmt.Sprintf("%q is not an interface name: it holds ':' at offset %d", s, i)
	}
	return ""
}
