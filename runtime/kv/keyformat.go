package kv

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// KeyValue returns the key form of a placeholder value of format f: names
// escaped, addresses and networks canonical, MAC addresses lower-case.
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
		if m, err := net.ParseMAC(s); err == nil {
			return append(b, m.String()...)
		}
	case FormatUint:
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			return append(b, s...)
		}
	}
	return appendEscapedSegment(b, s)
}

// KeyUint returns the key form of an unsigned integer.
func KeyUint[T ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint](v T) string {
	return strconv.FormatUint(uint64(v), 10)
}

// CheckFormat reports why s is not a valid value of format f, or "" when it
// is. Empty values are left to "required" checks.
func CheckFormat(f Format, s string) string {
	if s == "" {
		return ""
	}
	switch f {
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

// ParseKeyName unescapes a placeholder value of format FormatName.
func ParseKeyName(s string) (string, bool) {
	v, err := UnescapeSegment(s)
	return v, err == nil && v != ""
}

// ParseKeyIP parses a placeholder value of format FormatIP.
func ParseKeyIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return a, false
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
	var buf [64]byte
	return p, string(p.AppendTo(buf[:0])) == s
}

// ParseKeyIPInterface parses a placeholder value of format
// FormatIPInterface.
func ParseKeyIPInterface(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, false
	}
	var buf [64]byte
	return p, string(p.AppendTo(buf[:0])) == s
}

// ParseKeyMAC parses a placeholder value of format FormatMAC.
func ParseKeyMAC(s string) (net.HardwareAddr, bool) {
	m, err := net.ParseMAC(s)
	return m, err == nil && m.String() == s
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
