// Package vpp is the VPP plugin: the handlers of the models in models/vpp
// (interfaces of the types loopback, memif, af_packet, TAP, sub-interface
// (dot1q, QinQ), VXLAN, GRE and IP-in-IP tunnel, and DPDK (hardware adopted, never created
// or deleted), with their addresses, unnumbered setting and receive mode;
// bridge domains and their members, L2 FIB entries, VRF tables, routes
// and ARP entries; wireguard interfaces (a type) and their peers, and
// IPsec security associations, whose keys are sensitive fields), written
// over govpp's
// generated binary API (go.fd.io/govpp v0.13.0, whose binapi packages are
// generated for VPP 25.10).
//
// Build it with New, which connects to VPP's API socket through govpp's
// core with reconnection; register Descriptors with a scheduler; Close it
// after the scheduler. When VPP comes back after the connection was lost
// (VPP restarted, and lost its state), the callback given WithReconnect
// runs: the agent uses it for a downstream resync.
//
//	p, err := vpp.New(vpp.WithSocket("/run/vpp/api.sock"), vpp.WithReconnect(func() {
//		s.Txn(scheduler.DownstreamResync()).CommitAsync(context.Background())
//	}))
//	...
//	defer p.Close()
//	err = s.Register(p.Descriptors()...)
//
// (WithAdapter runs it over another binary-API adapter, such as govpp's
// mock, which its tests use.)
//
// The handlers write only CRUD bodies: keys, dependencies, validation and
// comparison are generated from the models. Interfaces carry their
// sw_if_index as metadata (InterfaceMeta), bridge domains their bd_id
// (BridgeDomainMeta); the other handlers read them through the read-only
// maps Interfaces and BridgeDomains.
//
// Ownership in VPP: the plugin tags each interface it creates with its
// label (sw_interface_tag_add_del) and each bridge domain with its name
// (bd_tag), so Validate refuses a label longer than a tag holds (63
// bytes); Retrieve reports tagged ones as ours and everything else VPP
// has as obtained (OriginSB), which the scheduler never deletes, except
// hardware interfaces: those not adopted by a value of type DPDK are
// known by their VPP name (which such a value takes as its label) and not
// reported; an adopted one is tagged, and its delete takes its
// configuration off and leaves it there. Routes
// carry no tag: those whose FIB source is the API or the CLI are reported
// (correlated ones as ours, the rest obtained), VPP's own by their source
// are not.
//
// Routes and ARP entries also apply batches (Batch): one request per value,
// all sent on one stream ahead of their replies (the binary API's
// pipelined path), rather than a round trip each.
package vpp
