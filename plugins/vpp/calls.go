package vpp

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// errSPDAssigned is ipsec_interface_add_del_spd's "spd already assigned":
// another SPD holds the interface, which no retry resolves.
const errSPDAssigned = api.SYSCALL_ERROR_2

// vppErr names the binary API call that failed. A return value that says
// the object is not there wraps kv.ErrNotFound (a Delete of it succeeds);
// one that says the request is wrong is not retried. Every other one is
// retried, unless the call lists it in permanent: what a return value
// means depends on the call (VPP's SYSCALL_ERROR_n are each call's own),
// so the call that knows a value refuses its request for good says so
// (ipsec_interface_add_del_spd's "spd already assigned").
func vppErr(call string, err error, permanent ...api.VPPApiError) error {
	if err == nil {
		return nil
	}
	var e api.VPPApiError
	if errors.As(err, &e) {
		if slices.Contains(permanent, e) {
			return kv.NonRetriable(fmt.Errorf("%s: %w", call, err))
		}
		switch e {
		case api.NO_SUCH_ENTRY, api.INVALID_SW_IF_INDEX, api.NO_SUCH_FIB, api.ADDRESS_NOT_FOUND_FOR_INTERFACE, api.NO_SUCH_TABLE, api.NAME_SERVER_NOT_FOUND:
			return fmt.Errorf("%s: %w (%w)", call, err, kv.ErrNotFound)
		case api.INVALID_VALUE, api.INVALID_VALUE_2, api.UNIMPLEMENTED, api.INVALID_VLAN_TAG_COUNT, api.SAME_SRC_DST, api.INVALID_INTERFACE:
			return kv.NonRetriable(fmt.Errorf("%s: %w", call, err))
		}
	}
	return fmt.Errorf("%s: %w", call, err)
}

// maxTag is the most bytes of a tag (sw_interface_tag_add_del's tag, a
// bridge domain's bd_tag) that VPP keeps: the API's field has 64, and VPP
// writes its terminating NUL over the last one.
const maxTag = 63

// checkTag checks that a label fits in a tag; a longer one would come
// back truncated, and the value would never be found again.
func checkTag(name string) error {
	if len(name) > maxTag {
		return kv.Invalid("name", "%d bytes: VPP keeps at most %d bytes of the tag that holds it", len(name), maxTag)
	}
	return nil
}

// dumpStream is the stream of a dump's details that govpp's generated
// RPC clients return.
type dumpStream[D any] interface {
	Recv() (D, error)
	Close() error
}

// dump returns a function that reads a dump's stream to its end (where
// the stream closes itself), or closes it at an error.
func dump[D any](call string) func(s dumpStream[D], err error) ([]D, error) {
	return func(s dumpStream[D], err error) ([]D, error) {
		if err != nil {
			return nil, vppErr(call, err)
		}
		var out []D
		for {
			d, err := s.Recv()
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				_ = s.Close()
				return nil, vppErr(call, err)
			}
			out = append(out, d)
		}
	}
}

// origin is the origin of a value found in VPP: OriginNB when it is
// ours, OriginSB otherwise.
func origin(ours bool) kv.Origin {
	if ours {
		return kv.OriginNB
	}
	return kv.OriginSB
}

// address converts an address of the models to the binary API's.
func address(a netip.Addr) ip_types.Address {
	return ip_types.NewAddress(a.AsSlice())
}

// addrOf converts an address of the binary API to netip.
func addrOf(a ip_types.Address) netip.Addr {
	if a.Af == ip_types.ADDRESS_IP6 {
		return netip.AddrFrom16(a.Un.GetIP6())
	}
	return netip.AddrFrom4(a.Un.GetIP4())
}

// prefix converts a prefix of the models to the binary API's.
func prefix(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: address(p.Addr()), Len: uint8(p.Bits())}
}

// prefixOf converts a prefix of the binary API to netip.
func prefixOf(p ip_types.Prefix) netip.Prefix {
	return netip.PrefixFrom(addrOf(p.Address), int(p.Len))
}
