// Package vpp is the VPP plugin: the handlers of the models in models/vpp
// (interfaces of the types loopback, memif, af_packet, TAP, sub-interface
// (dot1q, QinQ), VXLAN, GRE and IP-in-IP tunnel, DPDK (hardware adopted, never created
// or deleted), bond, vmxnet3 and RDMA, with their addresses, a VRF table
// per family, unnumbered setting and receive mode, and as values of their
// own a bond's members, a DHCP client and IPv6 router advertisements with
// their prefixes; bridge domains and their members, L2 FIB entries, VRF tables, routes
// and ARP entries, L2 cross-connects, proxy ARP (its interfaces and
// ranges, derived values of one global value), L3 cross-connects, VRRP
// virtual routers, TEIB entries and the neighbour tables' settings;
// NAT44: the plugin enabled with its settings, inside and
// outside interfaces, address pools, and DNAT groups of static and
// identity mappings), written over govpp's
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
// runs: the agent uses it for a downstream resync. A reconnect waits
// until the dumps and calls begun on the lost connection have ended
// (they fail or time out once VPP is gone; at most a minute): govpp
// rewrites its table of message ids then, which their replies are read
// with.
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
// are not. Cross-connects, L3 cross-connects, virtual routers and TEIB
// entries carry no tag either: those on interfaces the plugin can name
// are reported, correlated ones as ours, the rest obtained; so are the
// neighbour tables' settings when not VPP's defaults.
//
// NAT44 is VPP's endpoint-dependent NAT (nat44_ed). VPP drops every
// NAT44 setting when the plugin is disabled, so the other NAT44 values
// depend on the global one (vpp/nat44/global) and go before it. A DNAT
// group has nothing in VPP but the tag of its mappings, each of which is
// a derived value: Retrieve reports every mapping VPP has under its tag
// (untagged ones under "untagged"), and the scheduler tells ours (applied
// or intended) from obtained ones. Not modelled: the output feature,
// load-balanced mappings, and mappings and pools that follow an
// interface's address.
// Link state: vpp.interfaces.v1.LinkUp is VPP's report that an
// interface's link is up (a value while it is, only ever obtained);
// WatchLinks reads VPP's interfaces at an interval and reports the links
// that come up or go down, as notifications (a resync alone keeps an
// obtained value it no longer finds).
//
// ACLs (models/vpp/acl): IP ACLs and MAC-IP ACLs carry VPP's acl_index as
// metadata (ACLMeta; the two kinds are numbered apart) and are tagged with
// their names. A change of rules replaces them in place (acl_add_replace
// with the ACL's index), so the interfaces keep it. Each interface an ACL
// lists derives a binding value, which waits for its interface and goes
// before it, or before the ACL (VPP refuses to delete an IP ACL in use).
// VPP keeps, per interface, one ordered list of input then output IP ACLs:
// a binding is one acl_interface_add_del, which appends the ACL to the
// list of its direction or takes it out, so bindings never read and
// rewrite a list (acl_interface_set_acl_list) and leave the entries of
// others alone. The order of several ACLs on one interface and direction
// is the order they were bound in (VPP's own when one is taken out: the
// last takes its place); write rules whose order matters into one ACL. An
// interface holds one MAC-IP ACL: binding a second replaces the first
// (whose binding then reads as missing), and unbinding one takes off only
// the ACL the interface has if it is that one (VPP would take off any).
//
// ABF policies (models/vpp/abf) forward what their IP ACL permits over
// their paths; they need their ACL (and go before it) and carry no
// metadata (the policy_id is their label). Each interface a policy lists
// derives an attachment value. A change of the ACL or the paths
// re-creates the policy; paths compare as a set. A policy waits for its
// paths' interfaces too (a ref on a field of the elements of its paths),
// and goes before them.
//
// Routes and ARP entries also apply batches (Batch): one request per value,
// all sent on one stream ahead of their replies (the binary API's
// pipelined path), rather than a round trip each.
package vpp
