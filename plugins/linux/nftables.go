//go:build linux

package linux

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	linuxnftables "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// NftMeta is the metadata of an nftables table or chain: where it is in
// the kernel. Chains find their table, and rules their chain, through it.
type NftMeta struct {
	// Namespace is the network namespace by name; "" is the plugin's.
	Namespace string
	// Family is the table's family.
	Family nftables.TableFamily
	// Table is the table's name.
	Table string
	// Chain is the chain's name (of a chain; empty for a table).
	Chain string
}

var nftFamilies = map[linuxnftables.Family]nftables.TableFamily{
	linuxnftables.Family_FAMILY_INET: nftables.TableFamilyINet,
	linuxnftables.Family_FAMILY_IP:   nftables.TableFamilyIPv4,
	linuxnftables.Family_FAMILY_IP6:  nftables.TableFamilyIPv6,
}

// nftConn is a connection to nftables in the namespace; every change is
// one batch, sent by Flush.
func (p *Plugin) nftConn(namespace string) (*nftables.Conn, error) {
	n, err := p.ns.get(namespace)
	if err != nil {
		return nil, err
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(n.ns)))
	if err != nil {
		return nil, fmt.Errorf("nftables in network namespace %q: %w", namespace, err)
	}
	return c, nil
}

// nftRetrieved holds what the last Retrieve of tables and chains found, by
// label, for the Retrieve of chains and rules that runs before the
// scheduler adopted their metadata (as retrieved does for interfaces).
type nftRetrieved struct {
	mu     sync.Mutex
	tables map[string]NftMeta
	chains map[string]NftMeta
	// ours are the tables (family and name, in any namespace) the plugin
	// created or was asked about; it only grows. The watcher has
	// nftables events of other tables ignored.
	ours map[nftTableID]bool
}

// nftTableID names a table in the kernel.
type nftTableID struct {
	family nftables.TableFamily
	name   string
}

// nftClaim counts the tables among the plugin's own.
func (p *Plugin) nftClaim(ids ...nftTableID) {
	p.nftFound.mu.Lock()
	defer p.nftFound.mu.Unlock()
	if p.nftFound.ours == nil {
		p.nftFound.ours = map[nftTableID]bool{}
	}
	for _, id := range ids {
		p.nftFound.ours[id] = true
	}
}

// nftPlace returns the metadata of a table or chain by label: from the
// descriptor's metadata map, else from the last Retrieve.
func (p *Plugin) nftPlace(m kv.MetadataMap[NftMeta], found func() map[string]NftMeta, what, label string) (NftMeta, error) {
	if meta, ok := m.Get(label); ok {
		return meta, nil
	}
	p.nftFound.mu.Lock()
	defer p.nftFound.mu.Unlock()
	if meta, ok := found()[label]; ok {
		return meta, nil
	}
	return NftMeta{}, fmt.Errorf("nftables %s %s: not created", what, label)
}

func (p *Plugin) nftTableOf(label string) (NftMeta, error) {
	return p.nftPlace(p.nftTable.Metadata(), func() map[string]NftMeta { return p.nftFound.tables }, "table", label)
}

func (p *Plugin) nftChainOf(label string) (NftMeta, error) {
	return p.nftPlace(p.nftChain.Metadata(), func() map[string]NftMeta { return p.nftFound.chains }, "chain", label)
}

func (m NftMeta) table() *nftables.Table { return &nftables.Table{Name: m.Table, Family: m.Family} }

func (m NftMeta) chain() *nftables.Chain { return &nftables.Chain{Name: m.Chain, Table: m.table()} }

// nftErr wraps the error of an nftables batch with the nft command, and
// marks a missing object as not found.
func nftErr(err error, format string, args ...any) error {
	return notFound(kernelErr(err, "nft "+format, args...))
}

// nftTables is the handler of linux.nftables.v1.Table.
type nftTables struct{ p *Plugin }

// Validate checks what the schema cannot: that the namespace is one the
// plugin may configure.
func (h *nftTables) Validate(_ linuxnftables.TableKey, v *linuxnftables.Table) error {
	return h.p.ns.validateName(v.GetNamespace(), nil).OrNil()
}

// Create adds the table.
func (h *nftTables) Create(_ context.Context, _ linuxnftables.TableKey, v *linuxnftables.Table) (NftMeta, error) {
	m := NftMeta{Namespace: v.GetNamespace(), Family: nftFamilies[v.EffectiveFamily()], Table: v.GetName()}
	h.p.nftClaim(nftTableID{m.Family, m.Table})
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return m, err
	}
	// nft add table FAMILY NAME
	c.AddTable(m.table())
	return m, kernelErr(c.Flush(), "nft add table %s", v.GetName())
}

// Delete removes the table (its chains and rules went first).
func (h *nftTables) Delete(_ context.Context, _ linuxnftables.TableKey, v *linuxnftables.Table, m NftMeta) error {
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return notFound(err)
	}
	// nft delete table FAMILY NAME
	c.DelTable(m.table())
	return nftErr(c.Flush(), "delete table %s", v.GetName())
}

// Retrieve reports the correlated tables that exist.
func (h *nftTables) Retrieve(_ context.Context, correlate []linuxnftables.TableItem[NftMeta]) ([]linuxnftables.TableItem[NftMeta], error) {
	found := map[string]NftMeta{}
	var out []linuxnftables.TableItem[NftMeta]
	for _, it := range correlate {
		v := it.Value
		m := NftMeta{Namespace: v.GetNamespace(), Family: nftFamilies[v.EffectiveFamily()], Table: v.GetName()}
		h.p.nftClaim(nftTableID{m.Family, m.Table})
		c, err := h.p.nftConn(m.Namespace)
		if err != nil {
			continue // no namespace: no table
		}
		// nft list table FAMILY NAME
		if _, err := c.ListTableOfFamily(m.Table, m.Family); err != nil {
			continue
		}
		found[v.GetName()] = m
		out = append(out, linuxnftables.TableItem[NftMeta]{Key: it.Key, Value: v, Metadata: m, Origin: kv.OriginNB})
	}
	h.p.nftFound.mu.Lock()
	h.p.nftFound.tables = found
	h.p.nftFound.mu.Unlock()
	return out, nil
}

// nftChains is the handler of linux.nftables.v1.Chain.
type nftChains struct{ p *Plugin }

var (
	nftHooks = map[linuxnftables.Chain_Hook]*nftables.ChainHook{
		linuxnftables.Chain_HOOK_PREROUTING:  nftables.ChainHookPrerouting,
		linuxnftables.Chain_HOOK_INPUT:       nftables.ChainHookInput,
		linuxnftables.Chain_HOOK_FORWARD:     nftables.ChainHookForward,
		linuxnftables.Chain_HOOK_OUTPUT:      nftables.ChainHookOutput,
		linuxnftables.Chain_HOOK_POSTROUTING: nftables.ChainHookPostrouting,
	}
	nftChainTypes = map[linuxnftables.Chain_Type]nftables.ChainType{
		linuxnftables.Chain_TYPE_FILTER: nftables.ChainTypeFilter,
		linuxnftables.Chain_TYPE_NAT:    nftables.ChainTypeNAT,
		linuxnftables.Chain_TYPE_ROUTE:  nftables.ChainTypeRoute,
	}
	nftPolicies = map[linuxnftables.Chain_Policy]nftables.ChainPolicy{
		linuxnftables.Chain_POLICY_ACCEPT: nftables.ChainPolicyAccept,
		linuxnftables.Chain_POLICY_DROP:   nftables.ChainPolicyDrop,
	}
)

// chain is the kernel's chain of v and where it is.
func (h *nftChains) chain(v *linuxnftables.Chain) (*nftables.Chain, NftMeta, error) {
	m, err := h.p.nftTableOf(v.GetTable())
	if err != nil {
		return nil, m, err
	}
	m.Chain = cmp.Or(v.GetChainName(), v.GetName())
	ch := m.chain()
	if hook := nftHooks[v.GetHook()]; hook != nil {
		prio, policy := nftables.ChainPriority(v.GetPriority()), nftPolicies[v.EffectivePolicy()]
		ch.Hooknum, ch.Priority, ch.Type, ch.Policy = hook, &prio, nftChainTypes[v.EffectiveType()], &policy
	}
	return ch, m, nil
}

// Create adds the chain.
func (h *nftChains) Create(_ context.Context, _ linuxnftables.ChainKey, v *linuxnftables.Chain) (NftMeta, error) {
	ch, m, err := h.chain(v)
	if err != nil {
		return m, err
	}
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return m, err
	}
	// nft add chain FAMILY TABLE NAME [{ type T hook H priority P; policy X; }]
	c.AddChain(ch)
	return m, kernelErr(c.Flush(), "nft add chain %s %s", m.Table, m.Chain)
}

// Update sets the policy in place (all else re-creates).
func (h *nftChains) Update(ctx context.Context, k linuxnftables.ChainKey, _, v *linuxnftables.Chain, _ NftMeta) (NftMeta, error) {
	return h.Create(ctx, k, v) // a NEWCHAIN without EXCL updates the chain
}

// Delete removes the chain (its rules, and the rules that jump to it, went
// first).
func (h *nftChains) Delete(_ context.Context, _ linuxnftables.ChainKey, _ *linuxnftables.Chain, m NftMeta) error {
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return notFound(err)
	}
	// nft delete chain FAMILY TABLE NAME
	c.DelChain(m.chain())
	return nftErr(c.Flush(), "delete chain %s %s", m.Table, m.Chain)
}

// Retrieve reports the correlated chains that exist, with the hook,
// priority, type and policy the kernel has.
func (h *nftChains) Retrieve(_ context.Context, correlate []linuxnftables.ChainItem[NftMeta]) ([]linuxnftables.ChainItem[NftMeta], error) {
	found := map[string]NftMeta{}
	var out []linuxnftables.ChainItem[NftMeta]
	for _, it := range correlate {
		_, m, err := h.chain(it.Value)
		if err != nil {
			continue // no table: no chain
		}
		c, err := h.p.nftConn(m.Namespace)
		if err != nil {
			continue
		}
		// nft list chain FAMILY TABLE NAME
		ch, err := c.ListChain(m.table(), m.Chain)
		if err != nil {
			continue
		}
		got := &linuxnftables.Chain{Name: it.Value.GetName(), ChainName: it.Value.GetChainName(), Table: it.Value.GetTable()}
		for hook, nh := range nftHooks {
			if ch.Hooknum != nil && *ch.Hooknum == *nh {
				got.Hook = hook
			}
		}
		if ch.Hooknum != nil {
			got.Priority = int32(*ch.Priority)
			for t, nt := range nftChainTypes {
				if nt == ch.Type {
					got.Type = t
				}
			}
			for pol, np := range nftPolicies {
				if ch.Policy != nil && *ch.Policy == np {
					got.Policy = pol
				}
			}
		}
		found[it.Value.GetName()] = m
		out = append(out, linuxnftables.ChainItem[NftMeta]{Key: it.Key, Value: got, Metadata: m, Origin: kv.OriginNB})
	}
	h.p.nftFound.mu.Lock()
	h.p.nftFound.chains = found
	h.p.nftFound.mu.Unlock()
	return out, nil
}

// nftRules is the handler of linux.nftables.v1.Rule.
type nftRules struct{ p *Plugin }

// nftComment is the comment that names a rule of ours: kvd:ORDER:LABEL.
func nftComment(v *linuxnftables.Rule) string {
	return fmt.Sprintf("kvd:%d:%s", v.GetOrder(), v.GetName())
}

// nftOrder reads a comment of ours (ok false for another's rule).
func nftOrder(r *nftables.Rule) (order uint64, label string, ok bool) {
	c := strings.TrimSuffix(string(userdata.Get(r.UserData, userdata.TypeComment)), "\x00")
	rest, ok := strings.CutPrefix(c, "kvd:")
	if !ok {
		return 0, "", false
	}
	o, label, ok := strings.Cut(rest, ":")
	order, err := strconv.ParseUint(o, 10, 32)
	return order, label, ok && err == nil
}

var nftProtocols = map[linuxnftables.Rule_Protocol]byte{
	linuxnftables.Rule_PROTOCOL_TCP:    unix.IPPROTO_TCP,
	linuxnftables.Rule_PROTOCOL_UDP:    unix.IPPROTO_UDP,
	linuxnftables.Rule_PROTOCOL_ICMP:   unix.IPPROTO_ICMP,
	linuxnftables.Rule_PROTOCOL_ICMPV6: unix.IPPROTO_ICMPV6,
}

// match appends "load key into register 1, compare it with data".
func match(exprs []expr.Any, load expr.Any, data []byte) []expr.Any {
	return append(exprs, load, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data})
}

// rule builds the kernel's rule of v (its comment included) in its chain.
func (h *nftRules) rule(v *linuxnftables.Rule) (*nftables.Rule, NftMeta, error) {
	m, err := h.p.nftChainOf(v.GetChain())
	if err != nil {
		return nil, m, err
	}
	var e []expr.Any
	for _, ifn := range []struct {
		name string
		key  expr.MetaKey
	}{{v.GetIif(), expr.MetaKeyIIFNAME}, {v.GetOif(), expr.MetaKeyOIFNAME}} {
		if ifn.name != "" {
			name := make([]byte, unix.IFNAMSIZ) // NUL-padded, as the kernel keeps it
			copy(name, ifn.name)
			e = match(e, &expr.Meta{Key: ifn.key, Register: 1}, name)
		}
	}
	for _, a := range []struct {
		field, prefix string
		off4, off6    uint32
	}{{"source", v.GetSource(), 12, 8}, {"destination", v.GetDestination(), 16, 24}} {
		p, err := netip.ParsePrefix(a.prefix)
		if err != nil {
			continue // empty: the schema checks the form
		}
		p = p.Masked()
		fam, off, proto := nftables.TableFamilyIPv4, a.off4, byte(unix.NFPROTO_IPV4)
		if p.Addr().Is6() {
			fam, off, proto = nftables.TableFamilyIPv6, a.off6, unix.NFPROTO_IPV6
		}
		switch m.Family {
		case nftables.TableFamilyINet:
			e = match(e, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, []byte{proto})
		case fam:
		default:
			return nil, m, kv.NonRetriable(fmt.Errorf("%s %s: not of the family of table %s", a.field, p, m.Table))
		}
		size := uint32(p.Addr().BitLen() / 8)
		e = append(e, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: size})
		if p.Bits() < p.Addr().BitLen() {
			e = append(e, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()), Xor: make([]byte, size)})
		}
		e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Addr().AsSlice()})
	}
	if proto, ok := nftProtocols[v.GetProtocol()]; ok {
		e = match(e, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, []byte{proto})
	}
	for _, port := range []struct{ port, off uint32 }{{v.GetSourcePort(), 0}, {v.GetDestinationPort(), 2}} {
		if port.port != 0 {
			e = match(e, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: port.off, Len: 2}, binaryutil.BigEndian.PutUint16(uint16(port.port)))
		}
	}
	switch v.GetVerdict() {
	case linuxnftables.Rule_VERDICT_ACCEPT:
		e = append(e, &expr.Verdict{Kind: expr.VerdictAccept})
	case linuxnftables.Rule_VERDICT_DROP:
		e = append(e, &expr.Verdict{Kind: expr.VerdictDrop})
	case linuxnftables.Rule_VERDICT_JUMP:
		to, err := h.p.nftChainOf(v.GetJumpChain())
		if err != nil {
			return nil, m, err
		}
		if to.Table != m.Table || to.Namespace != m.Namespace || to.Family != m.Family {
			return nil, m, kv.NonRetriable(fmt.Errorf("jump_chain %s is not of the table of chain %s", v.GetJumpChain(), v.GetChain()))
		}
		e = append(e, &expr.Verdict{Kind: expr.VerdictJump, Chain: to.Chain})
	}
	ud := userdata.Append(nil, userdata.TypeComment, []byte(nftComment(v)+"\x00"))
	return &nftables.Rule{Table: m.table(), Chain: m.chain(), Exprs: e, UserData: ud}, m, nil
}

// nftListRules lists the rules of the chain.
func (p *Plugin) nftListRules(c *nftables.Conn, m NftMeta) ([]*nftables.Rule, error) {
	// nft -a list chain FAMILY TABLE CHAIN
	rules, err := c.GetRules(m.table(), m.chain())
	if p.opts.nftList != nil {
		rules, err = p.opts.nftList(rules, err)
	}
	return rules, err
}

// find returns the rules of the chain and the handle of v's (0: none).
func (p *Plugin) find(c *nftables.Conn, m NftMeta, v *linuxnftables.Rule) ([]*nftables.Rule, uint64, error) {
	rules, mine, err := p.findAll(c, m, v)
	if err != nil || len(mine) == 0 {
		return rules, 0, err
	}
	return rules, mine[0], nil
}

// findAll returns the rules of the chain and the handles of those that
// carry v's comment, in the chain's order.
func (p *Plugin) findAll(c *nftables.Conn, m NftMeta, v *linuxnftables.Rule) ([]*nftables.Rule, []uint64, error) {
	rules, err := p.nftListRules(c, m)
	if err != nil {
		return nil, nil, nftErr(err, "list chain %s %s", m.Table, m.Chain)
	}
	ud := userdata.Append(nil, userdata.TypeComment, []byte(nftComment(v)+"\x00"))
	var mine []uint64
	for _, r := range rules {
		if bytes.Equal(r.UserData, ud) {
			mine = append(mine, r.Handle)
		}
	}
	return rules, mine, nil
}

// delRules adds to the batch the deletion of the chain's rules by handle.
func delRules(c *nftables.Conn, m NftMeta, handles []uint64) error {
	for _, handle := range handles {
		// nft delete rule FAMILY TABLE CHAIN handle HANDLE
		if err := c.DelRule(&nftables.Rule{Table: m.table(), Chain: m.chain(), Handle: handle}); err != nil {
			return err
		}
	}
	return nil
}

// Create inserts the rule before the first of ours that comes after it
// (by order, then label), or appends it. A rule of v's comment already
// in the chain (a listing that failed or was cut short, as a dump
// interrupted by a change elsewhere is, made it look gone) is replaced in
// place instead, and any second copy deleted: a create never leaves the
// rule twice in the chain. After an add, the chain is listed again and
// copies other than the one just added (the highest handle) are deleted,
// for the case where Create's own listing missed the rule.
func (h *nftRules) Create(_ context.Context, _ linuxnftables.RuleKey, v *linuxnftables.Rule) (struct{}, error) {
	r, m, err := h.rule(v)
	if err != nil {
		return struct{}{}, err
	}
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return struct{}{}, err
	}
	rules, mine, err := h.p.findAll(c, m, v)
	if err != nil {
		return struct{}{}, err
	}
	if len(mine) > 0 {
		r.Handle = mine[0]
		c.ReplaceRule(r) // nft replace rule FAMILY TABLE CHAIN handle HANDLE ...
		if err := delRules(c, m, mine[1:]); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, kernelErr(c.Flush(), "nft replace rule %s %s handle %d (%s)", m.Table, m.Chain, r.Handle, nftComment(v))
	}
	for _, other := range rules {
		if o, label, ok := nftOrder(other); ok && (o > uint64(v.GetOrder()) || o == uint64(v.GetOrder()) && label > v.GetName()) {
			r.Position = other.Handle
			break
		}
	}
	if r.Position != 0 {
		c.InsertRule(r) // nft insert rule ... position HANDLE
	} else {
		c.AddRule(r) // nft add rule FAMILY TABLE CHAIN ... comment "kvd:..."
	}
	if err := c.Flush(); err != nil {
		return struct{}{}, kernelErr(err, "nft add rule %s %s (%s)", m.Table, m.Chain, nftComment(v))
	}
	// Handles only grow: the highest of v's comment is the one just added.
	if _, mine, err = h.p.findAll(c, m, v); err != nil || len(mine) < 2 {
		return struct{}{}, err
	}
	newest := slices.Max(mine)
	if err := delRules(c, m, slices.DeleteFunc(mine, func(x uint64) bool { return x == newest })); err != nil {
		return struct{}{}, err
	}
	return struct{}{}, nftErr(c.Flush(), "delete second copies of rule %s %s (%s)", m.Table, m.Chain, nftComment(v))
}

// Update replaces the rule's expressions in place, keeping its handle and
// place.
func (h *nftRules) Update(_ context.Context, _ linuxnftables.RuleKey, _, v *linuxnftables.Rule, _ struct{}) (struct{}, error) {
	r, m, err := h.rule(v)
	if err != nil {
		return struct{}{}, err
	}
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return struct{}{}, err
	}
	if _, r.Handle, err = h.p.find(c, m, v); err != nil || r.Handle == 0 {
		return struct{}{}, cmp.Or(err, fmt.Errorf("nft replace rule %s %s (%s): %w", m.Table, m.Chain, nftComment(v), kv.ErrNotFound))
	}
	// nft replace rule FAMILY TABLE CHAIN handle HANDLE ...
	c.ReplaceRule(r)
	return struct{}{}, kernelErr(c.Flush(), "nft replace rule %s %s handle %d", m.Table, m.Chain, r.Handle)
}

// Delete removes the rule, every copy of it in the chain; one already
// gone counts as removed.
func (h *nftRules) Delete(_ context.Context, _ linuxnftables.RuleKey, v *linuxnftables.Rule, _ struct{}) error {
	m, err := h.p.nftChainOf(v.GetChain())
	if err != nil {
		return notFound(err)
	}
	c, err := h.p.nftConn(m.Namespace)
	if err != nil {
		return notFound(err)
	}
	_, mine, err := h.p.findAll(c, m, v)
	if err != nil || len(mine) == 0 {
		return cmp.Or(err, kv.ErrNotFound)
	}
	if err := delRules(c, m, mine); err != nil { // every copy
		return err
	}
	return nftErr(c.Flush(), "delete rule %s %s handle %d", m.Table, m.Chain, mine[0])
}

// Retrieve reports the correlated rules whose comment is in their chain.
// The expressions are not read back: a rule edited behind the plugin's
// back, comment kept, is not noticed. Each chain is listed once, however
// many of its rules are asked about: the watcher has every nftables event
// rechecked, and a listing per rule made that quadratic (18 s for a chain
// of 1,000 rules, BenchmarkNftRecheck).
func (h *nftRules) Retrieve(_ context.Context, correlate []linuxnftables.RuleItem[struct{}]) ([]linuxnftables.RuleItem[struct{}], error) {
	// comments holds, by chain, the comments (as userdata) of its rules;
	// nil for a chain that could not be listed (gone: no rule).
	comments := map[NftMeta]map[string]bool{}
	var out []linuxnftables.RuleItem[struct{}]
	for _, it := range correlate {
		m, err := h.p.nftChainOf(it.Value.GetChain())
		if err != nil {
			continue // no chain: no rule
		}
		have, listed := comments[m]
		if !listed {
			if c, err := h.p.nftConn(m.Namespace); err == nil {
				if rules, err := h.p.nftListRules(c, m); err == nil {
					have = make(map[string]bool, len(rules))
					for _, r := range rules {
						have[string(r.UserData)] = true
					}
				}
			}
			comments[m] = have
		}
		if have[string(userdata.Append(nil, userdata.TypeComment, []byte(nftComment(it.Value)+"\x00")))] {
			out = append(out, linuxnftables.RuleItem[struct{}]{Key: it.Key, Value: it.Value, Origin: kv.OriginNB})
		}
	}
	return out, nil
}
