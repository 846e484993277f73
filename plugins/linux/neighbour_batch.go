//go:build linux

package linux

import (
	"context"
	"fmt"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

var _ linuxl3.NeighbourBatcher[struct{}] = (*neighbours)(nil)

// Batch sets (create, update) or deletes neighbour entries, many per
// netlink write: the entries of each namespace go in one batch through the
// namespace's batch socket. Each operation's outcome, and its error, is
// the one its own Create, Update or Delete would have had.
func (h *neighbours) Batch(ctx context.Context, kind kv.BatchKind, ops []linuxl3.NeighbourBatchOp[struct{}]) {
	var op neighOp
	switch kind {
	case kv.BatchCreate, kv.BatchUpdate:
		op = neighReplace
	case kv.BatchDelete:
		op = neighDel
	default:
		err := kv.NonRetriable(fmt.Errorf("neighbour batch of unknown kind %v", kind))
		for i := range ops {
			ops[i].Err = err
		}
		return
	}
	type entry struct {
		req *nl.NetlinkRequest
		cmd string
	}
	groups := groupByNamespace(len(ops), nil, func(i int) (*namespace, entry, error) {
		n, e, cmd, err := h.neigh(ops[i].Key, ops[i].Value)
		if err != nil {
			return nil, entry{}, err
		}
		return n, entry{neighRequest(op, e), cmd}, nil
	}, func(i int, err error) {
		if op == neighDel {
			err = notFound(err)
		}
		ops[i].Err = err
	})
	for _, g := range groups {
		// A request sent again after an overrun is harmless: a replace
		// sets the same entry twice, and a delete that then finds its
		// entry gone is reported as not found, which counts as done.
		reqs := make([]*nl.NetlinkRequest, len(g.items))
		for k, it := range g.items {
			reqs[k] = it.req
		}
		var errs []error
		if s, err := g.n.batchSocket(); err != nil {
			errs = slices.Repeat([]error{err}, len(reqs))
		} else {
			errs = s.do(ctx, reqs)
		}
		for k, err := range errs {
			ops[g.at[k]].Err = neighErr(err, op, g.items[k].cmd)
		}
	}
}

// neighRequest builds the netlink request of op on e, as netlink.Handle's
// NeighSet (ip neigh replace: create or replace) and NeighDel would send
// it, for the fields that the plugin's entries set: family, interface,
// state, IP address and link-layer address. The ACK flag and the sequence
// number are the batch socket's to set.
func neighRequest(op neighOp, e *netlink.Neigh) *nl.NetlinkRequest {
	var req *nl.NetlinkRequest
	if op == neighDel {
		req = nl.NewNetlinkRequest(unix.RTM_DELNEIGH, 0)
	} else {
		req = nl.NewNetlinkRequest(unix.RTM_NEWNEIGH, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	}
	family := e.Family
	if family == 0 {
		family = nl.GetIPFamily(e.IP)
	}
	req.AddData(&netlink.Ndmsg{
		Family: uint8(family),
		Index:  uint32(e.LinkIndex),
		State:  uint16(e.State),
		Flags:  uint8(e.Flags),
		Type:   uint8(e.Type),
	})
	ip := e.IP.To4()
	if ip == nil {
		ip = e.IP.To16()
	}
	req.AddData(nl.NewRtAttr(unix.NDA_DST, ip))
	if e.HardwareAddr != nil {
		req.AddData(nl.NewRtAttr(unix.NDA_LLADDR, []byte(e.HardwareAddr)))
	}
	return req
}
