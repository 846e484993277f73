package modelstest

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	vppl2 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l2/v1"
	vppl3 "github.com/kvdescriptor/kvdescriptor/generated/vpp/l3/v1"
)

// The fuzz targets check the generated key code from both ends:
//
//   - any text: Parse never panics; when it succeeds, String of the parsed
//     key and Build of its fields give the text back (a key has exactly
//     one spelling), and Is agrees with Parse;
//   - any fields: Build never panics; its key parses exactly when the
//     fields are valid in their formats, and then back to the canonical
//     fields.

// checkParsed checks a parse result against the text it came from.
func checkParsed[K interface{ String() string }](t *testing.T, key string, k K, ok, is bool, rebuild func(K) string) {
	t.Helper()
	if ok != is {
		t.Fatalf("Parse(%q) ok = %v but Is = %v", key, ok, is)
	}
	if !ok {
		return
	}
	if s := k.String(); s != key {
		t.Fatalf("Parse(%q).String() = %q", key, s)
	}
	if s := rebuild(k); s != key {
		t.Fatalf("Build(fields of Parse(%q)) = %q", key, s)
	}
}

// validName reports whether a name can be a key field: not empty, no
// control characters (a key never holds one).
func validName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// nameSeeds are names that need escaping or are otherwise awkward.
func nameSeeds() []string {
	var out []string
	for _, n := range awkwardNames {
		out = append(out, n.name, n.inKey)
	}
	return append(out, "", "%", "%2", "%2f", "%zz", "a%", "\x00", "\xff\xfe", "eth0\n", "a\x7f")
}

var ipSeeds = []string{
	"10.0.0.1", "2001:DB8::1", "2001:db8::1", "::", "::ffff:10.0.0.1", "fe80::1%eth0",
	"10.0.0.01", "010.0.0.1", "1.2.3", "", "10.1.1.7/24", "2001:db8:0:0:0:0:0:1",
}

var prefixSeeds = []string{
	"10.1.1.7/24", "10.1.1.0/24", "0.0.0.0/0", "::/0", "2001:DB8::1/64", "10.0.0.0/08",
	"10.0.0.0/33", "10.0.0.1", "::ffff:10.0.0.1/104", "fe80::1%eth0/64", "", "/24",
}

var macSeeds = []string{
	"02:00:00:00:00:0a", "02:AB:CD:EF:00:01", "02-ab-cd-ef-00-01", "02ab.cdef.0001",
	"02:ab:cd", "00:00:00:00:fe:80:00:00", "", "zz:zz:zz:zz:zz:zz",
}

func FuzzInterfaceKey(f *testing.F) {
	for _, n := range nameSeeds() {
		f.Add("vpp/interface/"+n, n)
		f.Add("linux/interface/"+n, n)
		f.Add("vpp/bd/"+n, n)
	}
	f.Add("linux/interface/eth0/address/10.0.0.1/24", "eth0/address/10.0.0.1/24")
	f.Fuzz(func(t *testing.T, key, name string) {
		{
			k, ok := vppinterfaces.ParseInterfaceKey(key)
			checkParsed(t, key, k, ok, isKey(vppinterfaces.ParseInterfaceKey)(key), func(k vppinterfaces.InterfaceKey) string {
				return vppinterfaces.InterfaceKeyFor(&vppinterfaces.Interface{Name: k.Name})
			})
			built := vppinterfaces.InterfaceKeyFor(&vppinterfaces.Interface{Name: name})
			k, ok = vppinterfaces.ParseInterfaceKey(built)
			if ok != validName(name) || ok && k.Name != name {
				t.Fatalf("vpp interface: Parse(Build(%q) = %q) = %+v, %v", name, built, k, ok)
			}
		}
		{
			k, ok := linuxinterfaces.ParseInterfaceKey(key)
			checkParsed(t, key, k, ok, isKey(linuxinterfaces.ParseInterfaceKey)(key), func(k linuxinterfaces.InterfaceKey) string {
				return linuxinterfaces.InterfaceKeyFor(&linuxinterfaces.Interface{Name: k.Name})
			})
			built := linuxinterfaces.InterfaceKeyFor(&linuxinterfaces.Interface{Name: name})
			k, ok = linuxinterfaces.ParseInterfaceKey(built)
			if ok != validName(name) || ok && k.Name != name {
				t.Fatalf("linux interface: Parse(Build(%q) = %q) = %+v, %v", name, built, k, ok)
			}
			if ok && isKey(linuxinterfaces.ParseInterfaceIpAddressesKey)(built) {
				t.Fatalf("linux interface key %q is also an address key", built)
			}
		}
		{
			k, ok := vppl2.ParseBridgeDomainKey(key)
			checkParsed(t, key, k, ok, isKey(vppl2.ParseBridgeDomainKey)(key), func(k vppl2.BridgeDomainKey) string {
				return vppl2.BridgeDomainKeyFor(&vppl2.BridgeDomain{Name: k.Name})
			})
			built := vppl2.BridgeDomainKeyFor(&vppl2.BridgeDomain{Name: name})
			k, ok = vppl2.ParseBridgeDomainKey(built)
			if ok != validName(name) || ok && k.Name != name {
				t.Fatalf("bridge domain: Parse(Build(%q) = %q) = %+v, %v", name, built, k, ok)
			}
			if ok && isKey(vppl2.ParseBridgeDomainInterfacesKey)(built) {
				t.Fatalf("bridge domain key %q is also a binding key", built)
			}
		}
	})
}

func FuzzBridgeDomainInterfacesKey(f *testing.F) {
	for _, n := range nameSeeds() {
		f.Add("vpp/bd/"+n+"/interface/"+n, n, n)
	}
	f.Add("vpp/bd/a/interface/b/interface/c", "a/interface/b", "c")
	f.Fuzz(func(t *testing.T, key, bd, iface string) {
		k, ok := vppl2.ParseBridgeDomainInterfacesKey(key)
		checkParsed(t, key, k, ok, isKey(vppl2.ParseBridgeDomainInterfacesKey)(key), func(k vppl2.BridgeDomainInterfacesKey) string {
			return bdBindingKey(k.Name, k.InterfacesName)
		})
		built := bdBindingKey(bd, iface)
		k, ok = vppl2.ParseBridgeDomainInterfacesKey(built)
		want := vppl2.BridgeDomainInterfacesKey{Name: bd, InterfacesName: iface}
		if ok != (validName(bd) && validName(iface)) || ok && k != want {
			t.Fatalf("Parse(Build(%q, %q) = %q) = %+v, %v", bd, iface, built, k, ok)
		}
	})
}

func FuzzARPEntryKey(f *testing.F) {
	for i, n := range nameSeeds() {
		ip := ipSeeds[i%len(ipSeeds)]
		f.Add("vpp/arp/"+n+"/"+ip, n, ip)
	}
	f.Fuzz(func(t *testing.T, key, iface, ip string) {
		k, ok := vppl3.ParseARPEntryKey(key)
		checkParsed(t, key, k, ok, isKey(vppl3.ParseARPEntryKey)(key), func(k vppl3.ARPEntryKey) string {
			return vppl3.ARPEntryKeyFor(&vppl3.ARPEntry{Interface: k.Interface, IpAddress: k.IpAddress.String()})
		})
		built := vppl3.ARPEntryKeyFor(&vppl3.ARPEntry{Interface: iface, IpAddress: ip})
		k, ok = vppl3.ParseARPEntryKey(built)
		addr, err := netip.ParseAddr(ip)
		valid := validName(iface) && err == nil && addr.Zone() == ""
		if ok != valid {
			t.Fatalf("Parse(Build(%q, %q) = %q) ok = %v, want %v", iface, ip, built, ok, valid)
		}
		if ok {
			if diff := cmp.Diff(vppl3.ARPEntryKey{Interface: iface, IpAddress: addr}, k, keyCmp); diff != "" {
				t.Fatalf("Parse(Build(%q, %q)) (-want +got):\n%s", iface, ip, diff)
			}
		}
	})
}

func FuzzFIBEntryKey(f *testing.F) {
	for i, n := range nameSeeds() {
		m := macSeeds[i%len(macSeeds)]
		f.Add("vpp/l2fib/"+n+"/"+m, n, m)
	}
	f.Fuzz(func(t *testing.T, key, bd, m string) {
		k, ok := vppl2.ParseFIBEntryKey(key)
		checkParsed(t, key, k, ok, isKey(vppl2.ParseFIBEntryKey)(key), func(k vppl2.FIBEntryKey) string {
			return vppl2.FIBEntryKeyFor(&vppl2.FIBEntry{BridgeDomain: k.BridgeDomain, PhysAddress: k.PhysAddress.String()})
		})
		built := vppl2.FIBEntryKeyFor(&vppl2.FIBEntry{BridgeDomain: bd, PhysAddress: m})
		k, ok = vppl2.ParseFIBEntryKey(built)
		hw, err := net.ParseMAC(m)
		valid := validName(bd) && err == nil && len(hw) == 6 // EUI-64 is not a MAC address of a key
		if ok != valid {
			t.Fatalf("Parse(Build(%q, %q) = %q) ok = %v, want %v", bd, m, built, ok, valid)
		}
		if ok {
			if diff := cmp.Diff(vppl2.FIBEntryKey{BridgeDomain: bd, PhysAddress: hw}, k); diff != "" {
				t.Fatalf("Parse(Build(%q, %q)) (-want +got):\n%s", bd, m, diff)
			}
		}
	})
}

func FuzzRouteKey(f *testing.F) {
	for i, dst := range prefixSeeds {
		gw := ipSeeds[i%len(ipSeeds)]
		f.Add("vpp/route/vrf/"+itoa(uint32(i))+"/dst/"+dst+"/gw/"+gw, uint32(i), dst, gw)
	}
	f.Add("vpp/route/vrf/0/dst/10.1.1.0/24/gw/10.0.0.1", uint32(4294967295), "10.1.1.7/24", "10.0.0.1")
	f.Add("vpp/route/vrf/01/dst/10.1.1.0/24/gw/10.0.0.1", uint32(0), "10.1.1.0/24/gw/10.0.0.1", "10.0.0.1")
	f.Fuzz(func(t *testing.T, key string, vrf uint32, dst, gw string) {
		k, ok := vppl3.ParseRouteKey(key)
		checkParsed(t, key, k, ok, isKey(vppl3.ParseRouteKey)(key), func(k vppl3.RouteKey) string {
			return vppl3.RouteKeyFor(&vppl3.Route{VrfId: k.VrfId, DstNetwork: k.DstNetwork.String(), NextHopAddr: k.NextHopAddr.String()})
		})
		built := vppl3.RouteKeyFor(&vppl3.Route{VrfId: vrf, DstNetwork: dst, NextHopAddr: gw})
		k, ok = vppl3.ParseRouteKey(built)
		p, errP := netip.ParsePrefix(dst)
		a, errA := netip.ParseAddr(gw)
		valid := errP == nil && errA == nil && a.Zone() == ""
		if ok != valid {
			t.Fatalf("Parse(Build(%d, %q, %q) = %q) ok = %v, want %v", vrf, dst, gw, built, ok, valid)
		}
		if ok {
			want := vppl3.RouteKey{VrfId: vrf, DstNetwork: p.Masked(), NextHopAddr: a}
			if diff := cmp.Diff(want, k, keyCmp); diff != "" {
				t.Fatalf("Parse(Build(%d, %q, %q)) (-want +got):\n%s", vrf, dst, gw, diff)
			}
		}
	})
}

func FuzzLinuxRouteKey(f *testing.F) {
	for i, n := range nameSeeds() {
		dst := prefixSeeds[i%len(prefixSeeds)]
		f.Add("linux/route/"+n+"/"+dst, n, dst)
	}
	f.Fuzz(func(t *testing.T, key, oif, dst string) {
		k, ok := linuxl3.ParseRouteKey(key)
		checkParsed(t, key, k, ok, isKey(linuxl3.ParseRouteKey)(key), func(k linuxl3.RouteKey) string {
			return linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: k.OutgoingInterface, DstNetwork: k.DstNetwork.String()})
		})
		built := linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: oif, DstNetwork: dst})
		k, ok = linuxl3.ParseRouteKey(built)
		p, err := netip.ParsePrefix(dst)
		valid := validName(oif) && err == nil
		if ok != valid {
			t.Fatalf("Parse(Build(%q, %q) = %q) ok = %v, want %v", oif, dst, built, ok, valid)
		}
		if ok {
			want := linuxl3.RouteKey{OutgoingInterface: oif, DstNetwork: p.Masked()}
			if diff := cmp.Diff(want, k, keyCmp); diff != "" {
				t.Fatalf("Parse(Build(%q, %q)) (-want +got):\n%s", oif, dst, diff)
			}
		}
	})
}

func FuzzInterfaceIpAddressesKey(f *testing.F) {
	for i, n := range nameSeeds() {
		ip := prefixSeeds[i%len(prefixSeeds)]
		f.Add("linux/interface/"+n+"/address/"+ip, n, ip)
	}
	f.Fuzz(func(t *testing.T, key, name, ip string) {
		k, ok := linuxinterfaces.ParseInterfaceIpAddressesKey(key)
		checkParsed(t, key, k, ok, isKey(linuxinterfaces.ParseInterfaceIpAddressesKey)(key), func(k linuxinterfaces.InterfaceIpAddressesKey) string {
			return linuxAddressKey(k.Name, k.IpAddresses.String())
		})
		if ok && isKey(linuxinterfaces.ParseInterfaceKey)(key) {
			t.Fatalf("address key %q is also an interface key", key)
		}
		built := linuxAddressKey(name, ip)
		k, ok = linuxinterfaces.ParseInterfaceIpAddressesKey(built)
		p, err := netip.ParsePrefix(ip)
		valid := validName(name) && err == nil
		if ok != valid {
			t.Fatalf("Parse(Build(%q, %q) = %q) ok = %v, want %v", name, ip, built, ok, valid)
		}
		if ok {
			want := linuxinterfaces.InterfaceIpAddressesKey{Name: name, IpAddresses: p}
			if diff := cmp.Diff(want, k, keyCmp); diff != "" {
				t.Fatalf("Parse(Build(%q, %q)) (-want +got):\n%s", name, ip, diff)
			}
		}
	})
}
