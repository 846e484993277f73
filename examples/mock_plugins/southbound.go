package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// southbound is the mock southbound: a few maps standing for a data plane,
// which prints every call it is given. Objects get indexes the way VPP
// gives sw_if_index and bd_id values: the handlers keep them as metadata
// and resolve names to indexes through the descriptors' metadata maps.
type southbound struct {
	mu        sync.Mutex
	w         io.Writer
	nextIndex uint32
	ifaces    map[uint32]*sbInterface
	bds       map[uint32]*sbBridgeDomain
	// failing lists calls (their printed text) that fail once.
	failing map[string]error
}

type sbInterface struct {
	name, kind, mac string
	up              bool
}

type sbBridgeDomain struct {
	name    string
	members map[uint32]bool // interface index -> BVI
	fib     map[string]uint32
}

// errBusy is what the southbound answers while it is busy. Errors are
// retriable unless marked kv.NonRetriable.
var errBusy = errors.New("southbound busy, try again")

func newSouthbound(w io.Writer) *southbound {
	return &southbound{w: w, nextIndex: 1, ifaces: map[uint32]*sbInterface{}, bds: map[uint32]*sbBridgeDomain{}, failing: map[string]error{}}
}

// FailOnce makes the next call printed as call fail with err.
func (sb *southbound) FailOnce(call string, err error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.failing[call] = err
}

// call prints a call and returns its injected failure, if any. The caller
// holds sb.mu.
func (sb *southbound) call(format string, args ...any) error {
	text := fmt.Sprintf(format, args...)
	if err, ok := sb.failing[text]; ok {
		delete(sb.failing, text)
		fmt.Fprintf(sb.w, "sb: %s -> error: %v\n", text, err)
		return err
	}
	fmt.Fprintf(sb.w, "sb: %s\n", text)
	return nil
}

// checkMAC refuses what the schema cannot know: an interface's MAC
// address must not be a group (multicast) address.
// The caller holds sb.mu.
func (sb *southbound) checkMAC(mac string) error {
	if hw, err := net.ParseMAC(mac); err == nil && hw[0]&1 == 1 {
		err := kv.NonRetriable(fmt.Errorf("refused: %s is a multicast MAC address", mac))
		fmt.Fprintf(sb.w, "    error: %v\n", err)
		return err
	}
	return nil
}

func (sb *southbound) newIndex() uint32 {
	i := sb.nextIndex
	sb.nextIndex++
	return i
}

// AddInterface creates an interface and returns its index.
func (sb *southbound) AddInterface(name, kind, mac string, up bool) (uint32, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.call("create %s interface %s", kind, name); err != nil {
		return 0, err
	}
	if err := sb.checkMAC(mac); err != nil {
		return 0, err
	}
	i := sb.newIndex()
	sb.ifaces[i] = &sbInterface{name: name, kind: kind, mac: mac, up: up}
	fmt.Fprintf(sb.w, "    index %d, mac %q, up %t\n", i, mac, up)
	return i, nil
}

// SetInterface changes an interface's MAC address and state.
func (sb *southbound) SetInterface(index uint32, mac string, up bool) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	itf, ok := sb.ifaces[index]
	if !ok {
		return fmt.Errorf("interface index %d: %w", index, kv.ErrNotFound)
	}
	if err := sb.call("set interface %d (%s): mac %q, up %t", index, itf.name, mac, up); err != nil {
		return err
	}
	if err := sb.checkMAC(mac); err != nil {
		return err
	}
	itf.mac, itf.up = mac, up
	return nil
}

// DeleteInterface deletes an interface; it must be in no bridge domain.
func (sb *southbound) DeleteInterface(index uint32) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	itf, ok := sb.ifaces[index]
	if !ok {
		return fmt.Errorf("interface index %d: %w", index, kv.ErrNotFound)
	}
	if err := sb.call("delete interface %d (%s)", index, itf.name); err != nil {
		return err
	}
	for _, bd := range sb.bds {
		if _, in := bd.members[index]; in {
			return fmt.Errorf("interface %s is still in bridge domain %s", itf.name, bd.name)
		}
	}
	delete(sb.ifaces, index)
	return nil
}

// AddBridgeDomain creates an empty bridge domain and returns its index.
func (sb *southbound) AddBridgeDomain(name string) (uint32, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.call("create bridge domain %s", name); err != nil {
		return 0, err
	}
	i := sb.newIndex()
	sb.bds[i] = &sbBridgeDomain{name: name, members: map[uint32]bool{}, fib: map[string]uint32{}}
	fmt.Fprintf(sb.w, "    index %d\n", i)
	return i, nil
}

// DeleteBridgeDomain deletes a bridge domain; it must be empty.
func (sb *southbound) DeleteBridgeDomain(index uint32) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	bd, ok := sb.bds[index]
	if !ok {
		return fmt.Errorf("bridge domain index %d: %w", index, kv.ErrNotFound)
	}
	if err := sb.call("delete bridge domain %d (%s)", index, bd.name); err != nil {
		return err
	}
	if len(bd.members) > 0 || len(bd.fib) > 0 {
		return fmt.Errorf("bridge domain %s still has members or FIB entries", bd.name)
	}
	delete(sb.bds, index)
	return nil
}

// Bind puts an interface into a bridge domain.
func (sb *southbound) Bind(bdIndex, ifIndex uint32, bvi bool) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	bd, itf := sb.bds[bdIndex], sb.ifaces[ifIndex]
	if bd == nil || itf == nil {
		return fmt.Errorf("bind interface %d to bridge domain %d: no such object", ifIndex, bdIndex)
	}
	if err := sb.call("put interface %s into bridge domain %s (bvi %t)", itf.name, bd.name, bvi); err != nil {
		return err
	}
	bd.members[ifIndex] = bvi
	return nil
}

// Unbind takes an interface out of a bridge domain.
func (sb *southbound) Unbind(bdIndex, ifIndex uint32) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	bd, itf := sb.bds[bdIndex], sb.ifaces[ifIndex]
	if bd == nil || itf == nil {
		return fmt.Errorf("unbind interface %d from bridge domain %d: %w", ifIndex, bdIndex, kv.ErrNotFound)
	}
	if err := sb.call("take interface %s out of bridge domain %s", itf.name, bd.name); err != nil {
		return err
	}
	for mac, out := range bd.fib {
		if out == ifIndex {
			return fmt.Errorf("FIB entry %s still forwards to %s", mac, itf.name)
		}
	}
	delete(bd.members, ifIndex)
	return nil
}

// AddFIB adds a FIB entry: frames to mac go out of the interface, which
// must be in the bridge domain.
func (sb *southbound) AddFIB(bdIndex uint32, mac string, ifIndex uint32) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	bd, itf := sb.bds[bdIndex], sb.ifaces[ifIndex]
	if bd == nil || itf == nil {
		return fmt.Errorf("FIB entry %s: no bridge domain %d or interface %d", mac, bdIndex, ifIndex)
	}
	if err := sb.call("add FIB entry %s -> %s in bridge domain %s", mac, itf.name, bd.name); err != nil {
		return err
	}
	if _, in := bd.members[ifIndex]; !in {
		return fmt.Errorf("FIB entry %s: interface %s is not in bridge domain %s", mac, itf.name, bd.name)
	}
	bd.fib[mac] = ifIndex
	return nil
}

// DeleteFIB deletes a FIB entry.
func (sb *southbound) DeleteFIB(bdIndex uint32, mac string) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	bd := sb.bds[bdIndex]
	if bd == nil {
		return fmt.Errorf("bridge domain index %d: %w", bdIndex, kv.ErrNotFound)
	}
	if err := sb.call("delete FIB entry %s from bridge domain %s", mac, bd.name); err != nil {
		return err
	}
	delete(bd.fib, mac)
	return nil
}

// The dumps, in index order: what Retrieve reads.

type dumpedInterface struct {
	index uint32
	sbInterface
}

func (sb *southbound) DumpInterfaces() []dumpedInterface {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	_ = sb.call("dump interfaces")
	var out []dumpedInterface
	for _, i := range slices.Sorted(maps.Keys(sb.ifaces)) {
		out = append(out, dumpedInterface{i, *sb.ifaces[i]})
	}
	return out
}

// dumpedBridgeDomain is a bridge domain as dumped: its members (name to
// BVI) and FIB entries (MAC address to interface name) by name.
type dumpedBridgeDomain struct {
	index   uint32
	name    string
	members map[string]bool
	fib     map[string]string
}

func (sb *southbound) DumpBridgeDomains() []dumpedBridgeDomain {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	_ = sb.call("dump bridge domains")
	var out []dumpedBridgeDomain
	for _, i := range slices.Sorted(maps.Keys(sb.bds)) {
		bd := sb.bds[i]
		d := dumpedBridgeDomain{index: i, name: bd.name, members: map[string]bool{}, fib: map[string]string{}}
		for index, bvi := range bd.members {
			d.members[sb.ifaces[index].name] = bvi
		}
		for mac, index := range bd.fib {
			d.fib[mac] = sb.ifaces[index].name
		}
		out = append(out, d)
	}
	return out
}
