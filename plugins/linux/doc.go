// Package linux is the Linux southbound plugin: the handlers of the
// generated Linux models (interfaces with their addresses and bridge
// memberships, routes, neighbours, policy routing rules; nftables tables,
// chains and rules) over netlink.
//
// Build it with New, register its Descriptors with a scheduler, and Close
// it after the scheduler; Watch, optional, reports the interfaces others
// create:
//
//	p, err := linux.New(linux.WithRouteProtocol(212))
//	...
//	defer p.Close()
//	err = s.Register(p.Descriptors()...)
//	go p.Watch(ctx, func(ctx context.Context, cs []linux.Change) error {
//		var ns []scheduler.Notification
//		var recheck []string // the plugin's own values: a drift check
//		for _, c := range cs {
//			if c.Key == "" {
//				recheck = append(recheck, c.Recheck...)
//				continue
//			}
//			ns = append(ns, scheduler.Notification{Key: c.Key, Value: c.Value, Metadata: c.Metadata})
//		}
//		if len(ns) > 0 {
//			if _, err := s.Notify(ctx, ns...); err != nil {
//				return err
//			}
//		}
//		if len(recheck) > 0 {
//			_, err := s.CheckDrift(ctx, scheduler.DriftCheck{Descriptors: recheck})
//			return err
//		}
//		return nil
//	})
//
// Then commit values of the generated models (generated/linux/...) to the
// scheduler; examples/linuxdemo is a complete program. A program that
// starts over a namespace configured by an earlier run starts Watch after
// its startup resync (nb.Mux.Started): before it, the interfaces of the
// earlier run are not known as the plugin's, and would be reported as
// another program's.
//
// What it promises:
//
//   - Every netlink call goes through a handle bound to the network
//     namespace of the value (netlink.NewHandleAt); the plugin never
//     switches the namespace of a thread it does not lock, and restores it
//     before unlocking (only TAP creation, an ioctl, needs a switch).
//   - Values with an empty namespace live in the plugin's namespace
//     (WithNamespace, default the caller's); others in the named namespace
//     (/var/run/netns/NAME, as `ip netns` names them). A name is a plain
//     name (the schema's PLAIN_NAME): a path such as ../../proc/1/ns/net
//     is INVALID, and the plugin never opens a namespace outside
//     NetnsDir, validated or not. WithAllowedNamespaces limits the names
//     to a list: a value naming another is INVALID, naming namespace.
//     An interface may name its namespace by a process's PID
//     (/proc/PID/ns/net; refused with WithAllowedNamespaces, naming
//     namespace_pid) or by a path, which must be absolute and clean and
//     lie under a directory given to WithNamespaceDirs, its symbolic
//     links resolved (none by default: every path is INVALID, naming
//     namespace_path). InterfaceMeta.Namespace is then that path.
//   - A route whose gateway is not of its destination's family (an IPv4
//     network via an IPv6 gateway) is INVALID, naming gw_addr: the kernel
//     takes a gateway only in the route's own family.
//   - Retrieve reports as the plugin's only what it owns: interfaces that
//     match an intended one (by host name, namespace and type), routes
//     that carry the plugin's protocol number and that the scheduler asks
//     about (applied, intended, or remembered from an agent's record),
//     neighbours of intended keys. A route with the number that nothing
//     asks about is reported as another program's (OBTAINED), unless
//     WithClaimedRouteProtocol. A resync therefore never deletes the
//     host's own interfaces or routes, nor another agent's.
//   - Policy routing rules carry the plugin's route protocol number
//     (`ip rule ... proto N`); Retrieve reports those the scheduler asks
//     about that the kernel has with every selector as intended, and no
//     other, so a resync leaves the host's rules alone.
//   - nftables tables, chains and rules go through google/nftables, a
//     connection per change bound to the namespace (WithNetNSFd). A rule
//     is a typed subset (protocol, ports, source and destination
//     networks, interface names; accept, drop or jump) and carries its
//     label and order in its comment, kvd:ORDER:LABEL, by which the
//     plugin places it among its chain's rules, replaces it in place and
//     finds it again; Retrieve does not read a rule's expressions back.
//     Rules without such a comment are another program's, never touched.
//     A create finds a rule of its comment already there (a listing that
//     failed, or that a dump interrupted by another change cut short,
//     made it look gone: the nftables library does not report the
//     kernel's NLM_F_DUMP_INTR) and replaces it in place; after an add
//     it lists the chain again and deletes older copies, so a repair
//     never leaves a rule twice.
//   - Deleting something already gone succeeds (kv.ErrNotFound); every
//     other kernel error reaches the value's status as the `ip` command
//     that failed and the netlink error.
//   - Interfaces of the types LOOPBACK (the namespace's lo), EXISTING
//     (a link something else creates) and TAP_TO_VPP (the Linux end of a
//     VPP TAP, which VPP creates) are adopted, never created or deleted:
//     Create configures the link of their kernel name (retried while it
//     is missing; a TAP-to-VPP end is first moved from the plugin's
//     namespace to its own), Retrieve reports it whatever else it is
//     (any kind for EXISTING), and Delete leaves it with the state, MTU
//     and MAC address it had then (the plugin puts back nothing it did
//     not create; the addresses, values of their own, go), moving a
//     TAP-to-VPP end back to the plugin's namespace for VPP to delete.
//     Changing the host_if_name of one is refused: it names another link.
//   - The two ends of a veth pair are two values created as a unit: the
//     first end's Create makes the pair, with the other end under a
//     temporary name; the second end's Create moves and renames it. The
//     pair is never created twice.
//
// Watch pushes the interfaces of the plugin's namespace that the plugin
// did not create (OBTAINED values) to the scheduler, so that intended
// values may depend on them. It also reports (Change.Recheck) which of the
// plugin's descriptors the kernel's events in that namespace touched, for
// a drift check: links, addresses, routes, neighbours, policy routing
// rules (RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE) and nftables (the
// NFNLGRP_NFTABLES group of `nft monitor`: an event of a table of the
// plugin's has the tables, chains and rules checked; events of other
// programs' tables are ignored). A kernel whose nftables events cannot be
// subscribed to costs a warning, not the watch.
//
// The plugin needs Linux and CAP_NET_ADMIN; its tests run as root, each in
// network namespaces of its own.
package linux
