package vpp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/punt"
	"google.golang.org/protobuf/proto"

	vppdns "github.com/kvdescriptor/kvdescriptor/generated/vpp/dns/v1"
	vppipfix "github.com/kvdescriptor/kvdescriptor/generated/vpp/ipfix/v1"
	vpppunt "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// puntKey is the key of a punt, DNS, IPFIX or flowprobe value, and of the others through
// l2l3Key.
func puntKey(v proto.Message) string {
	switch v := v.(type) {
	case *vpppunt.ToHost:
		return vpppunt.ToHostKeyFor(v)
	case *vpppunt.Exception:
		return vpppunt.ExceptionKeyFor(v)
	case *vppdns.DNSCache:
		return vppdns.DNSCacheKeyFor(v)
	case *vppipfix.IPFIX:
		return vppipfix.IPFIXKeyFor(v)
	case *vppipfix.FlowProbeParams:
		return vppipfix.FlowProbeParamsKeyFor(v)
	case *vppipfix.FlowProbeFeature:
		return vppipfix.FlowProbeFeatureKeyFor(v)
	}
	return l2l3Key(v)
}

// putPunt commits the values, keyed by puntKey.
func (e *env) putPunt(values ...proto.Message) {
	e.t.Helper()
	txn := e.s.Txn()
	for _, v := range values {
		txn.Set(puntKey(v), v)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Logf("commit: %v", err)
	}
}

func registerUDP(af ip_types.AddressFamily, port uint32, path string) *punt.PuntSocketRegister {
	return &punt.PuntSocketRegister{HeaderVersion: 1, Punt: udpPunt(af, port), Pathname: path}
}

func deregisterUDP(af ip_types.AddressFamily, port uint32) *punt.PuntSocketDeregister {
	return &punt.PuntSocketDeregister{Punt: udpPunt(af, port)}
}

// TestPuntToHost: a UDP port is punted to a socket per family (both for
// ALL), re-created for another family, read back unchanged by a resync
// (one made by hand obtained), deregistered on delete; VPP without punt
// sockets enabled refuses it.
func TestPuntToHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, WithPuntSocketDirs(dir))
	sock := filepath.Join(dir, "dns.sock")
	const key = "vpp/punt/tohost/udp/53"
	e.putPunt(&vpppunt.ToHost{Port: 53, L3Protocol: vpppunt.L3Protocol_ALL, SocketPath: sock})
	e.expect(scheduler.CONFIGURED, key)
	expectOnly(t, e.f, registerUDP(ip_types.ADDRESS_IP4, 53, sock), registerUDP(ip_types.ADDRESS_IP6, 53, sock))
	e.noWrites("both families to one socket")

	// IPv6 only: re-created.
	e.putPunt(&vpppunt.ToHost{Port: 53, L3Protocol: vpppunt.L3Protocol_IPV6, SocketPath: sock})
	e.expect(scheduler.CONFIGURED, key)
	if diff := fmt.Sprint(writes(e.f)); diff != "[punt_socket_deregister punt_socket_deregister punt_socket_register]" {
		t.Errorf("another family sent %s", diff)
	}
	e.steer(func(x *fakeSteer) { x.punt[udpPunt(ip_types.ADDRESS_IP4, 5000)] = "/run/other.sock" })
	e.noWrites("one family")
	e.expect(scheduler.OBTAINED, "vpp/punt/tohost/udp/5000")
	e.expect(scheduler.CONFIGURED, key)

	e.del(key)
	expectOnly(t, e.f, deregisterUDP(ip_types.ADDRESS_IP6, 53))
	e.steer(func(x *fakeSteer) {
		if len(x.punt) != 1 {
			t.Errorf("VPP's punt sockets %v, want only the one made by hand", x.punt)
		}
		x.puntSocket = "" // VPP started without punt { socket ... }
	})
	h := &puntToHosts{p: e.p}
	if _, err := h.Create(e.ctx, vpppunt.ToHostKey{Port: 53}, &vpppunt.ToHost{Port: 53, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: sock}); !errors.Is(err, api.UNSPECIFIED) {
		t.Errorf("punt sockets not enabled: %v, want VPP's error", err)
	}
}

// TestPuntException: a reason's packets are punted to a socket by the
// reason's id, re-created for another socket, read back unchanged by a
// resync (one made by hand obtained), deregistered on delete; a reason
// VPP does not know fails without a registration.
func TestPuntException(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, WithPuntSocketDirs(dir))
	a, b := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	const key = "vpp/punt/exception/ipsec6-spi-0"
	e.putPunt(&vpppunt.Exception{Reason: "ipsec6-spi-0", SocketPath: a})
	e.expect(scheduler.CONFIGURED, key)
	expectOnly(t, e.f, &punt.PuntSocketRegister{HeaderVersion: 1, Punt: exceptionPunt(1), Pathname: a})

	e.putPunt(&vpppunt.Exception{Reason: "ipsec6-spi-0", SocketPath: b})
	e.expect(scheduler.CONFIGURED, key)
	if diff := fmt.Sprint(writes(e.f)); diff != "[punt_socket_deregister punt_socket_register]" {
		t.Errorf("another socket sent %s", diff)
	}
	e.steer(func(x *fakeSteer) {
		if got := x.punt[exceptionPunt(1)]; got != b {
			t.Errorf("VPP punts the reason to %q, want %q", got, b)
		}
	})
	e.steer(func(x *fakeSteer) { x.punt[exceptionPunt(3)] = "/run/other.sock" })
	e.noWrites("exceptions in order")
	e.expect(scheduler.OBTAINED, "vpp/punt/exception/ipsec4-no-such-tunnel")
	e.expect(scheduler.CONFIGURED, key)

	e.putPunt(&vpppunt.Exception{Reason: "no-such-reason", SocketPath: a})
	if st := e.s.Status("vpp/punt/exception/no-such-reason"); st.State != scheduler.FAILED || !strings.Contains(fmt.Sprint(st.LastErr), `"no-such-reason"`) {
		t.Errorf("an unknown reason: %s (%v), want FAILED naming it", st.State, st.LastErr)
	}
	if w := only[*punt.PuntSocketRegister](e.f); len(w) != 0 {
		t.Errorf("an unknown reason registered %v", w)
	}
	e.del(key)
	expectOnly(t, e.f, &punt.PuntSocketDeregister{Punt: exceptionPunt(1)})
}

// TestPuntSocketPath: the schema and the plugin refuse values VPP would
// take (a port of 0, no family) and socket paths outside the allowed
// directory, however written (relative, with "..", too long for VPP,
// through a symbolic link of the socket or of its directory); nothing
// reaches VPP, and the error names the field. Without allowed
// directories every path is refused.
func TestPuntSocketPath(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/log", filepath.Join(dir, "log.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, WithPuntSocketDirs(dir))
	for i, c := range []struct {
		v     proto.Message
		field string
	}{
		{&vpppunt.ToHost{Port: 1, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: "/etc/evil.sock"}, "socket_path"},
		{&vpppunt.ToHost{Port: 2, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: "rel.sock"}, "socket_path"},
		{&vpppunt.ToHost{Port: 3, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/sub/../../x.sock"}, "socket_path"},
		{&vpppunt.ToHost{Port: 4, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/" + strings.Repeat("s", 108)}, "socket_path"},
		{&vpppunt.ToHost{Port: 5, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/away/x.sock"}, "socket_path"},
		{&vpppunt.ToHost{Port: 6, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/log.sock"}, "socket_path"},
		{&vpppunt.ToHost{Port: 7, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir}, "socket_path"},
		{&vpppunt.ToHost{Port: 8, L3Protocol: vpppunt.L3Protocol_IPV4}, "socket_path"},
		{&vpppunt.ToHost{Port: 0, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/ok.sock"}, "port"},
		{&vpppunt.ToHost{Port: 9, SocketPath: dir + "/ok.sock"}, "l3_protocol"},
		{&vpppunt.Exception{Reason: "ipsec4-spi-0", SocketPath: dir + "/away/x.sock"}, "socket_path"},
	} {
		e.putPunt(c.v)
		st := e.s.Status(puntKey(c.v))
		if st.State != scheduler.INVALID || !strings.Contains(fmt.Sprint(st.LastErr), c.field) {
			t.Errorf("%d: %v: %s (%v), want INVALID naming %s", i, c.v, st.State, st.LastErr, c.field)
		}
	}
	if w := writes(e.f); len(w) != 0 {
		t.Errorf("refused values sent %v", w)
	}
	// Allowed: a socket that does not exist yet, in the directory or in
	// one below it that does not exist yet either.
	e.putPunt(&vpppunt.ToHost{Port: 10, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/sub/ok.sock"},
		&vpppunt.ToHost{Port: 11, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/later/ok.sock"})
	e.expect(scheduler.CONFIGURED, "vpp/punt/tohost/udp/10", "vpp/punt/tohost/udp/11")

	none := newEnv(t)
	v := &vpppunt.ToHost{Port: 12, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: dir + "/ok.sock"}
	none.putPunt(v)
	if st := none.s.Status(puntKey(v)); st.State != scheduler.INVALID || !strings.Contains(fmt.Sprint(st.LastErr), "WithPuntSocketDirs") {
		t.Errorf("no directory allowed: %s (%v), want INVALID", st.State, st.LastErr)
	}
}
