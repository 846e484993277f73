package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	mockv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/mock/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// The handlers below are the hand-written part of the example: the CRUD
// bodies over the mock southbound. Keys, dependencies (a binding waits for
// its interface, a FIB entry for the binding of its interface), derived
// bindings, comparison, re-create on a type change and validation (a MAC
// address, at most one BVI per bridge domain) come from the annotations
// in models/examples/mock/v1/mock.proto.

// descriptors builds the descriptors of the mock models over sb.
// Interfaces and bridge domains carry their southbound index as metadata;
// bindings and FIB entries read those indexes from the metadata maps.
func descriptors(sb *southbound) ([]kv.Descriptor, error) {
	ifaces, err := mockv1.NewInterfaceDescriptor[uint32](interfaceHandler{sb})
	if err != nil {
		return nil, err
	}
	bds, err := mockv1.NewBridgeDomainDescriptor[uint32](bridgeDomainHandler{sb})
	if err != nil {
		return nil, err
	}
	bindings, err := mockv1.NewBridgeDomainInterfacesDescriptor[struct{}](bindingHandler{sb, bds.Metadata(), ifaces.Metadata()})
	if err != nil {
		return nil, err
	}
	fibs, err := mockv1.NewFIBEntryDescriptor[struct{}](fibHandler{sb, bds.Metadata(), ifaces.Metadata()})
	if err != nil {
		return nil, err
	}
	return []kv.Descriptor{ifaces, bds, bindings, fibs}, nil
}

var (
	_ mockv1.InterfaceHandler[uint32]                  = interfaceHandler{}
	_ mockv1.InterfaceUpdater[uint32]                  = interfaceHandler{}
	_ mockv1.InterfaceRetriever[uint32]                = interfaceHandler{}
	_ mockv1.BridgeDomainHandler[uint32]               = bridgeDomainHandler{}
	_ mockv1.BridgeDomainRetriever[uint32]             = bridgeDomainHandler{}
	_ mockv1.BridgeDomainInterfacesHandler[struct{}]   = bindingHandler{}
	_ mockv1.BridgeDomainInterfacesRetriever[struct{}] = bindingHandler{}
	_ mockv1.FIBEntryHandler[struct{}]                 = fibHandler{}
	_ mockv1.FIBEntryRetriever[struct{}]               = fibHandler{}
)

// interfaceHandler handles examples.mock.v1.Interface; its metadata is the
// interface's index.
type interfaceHandler struct{ sb *southbound }

// interfaceKind is the southbound's name of an interface type.
func interfaceKind(t mockv1.Interface_Type) string {
	return strings.ToLower(strings.TrimPrefix(t.String(), "TYPE_"))
}

// Create creates the interface: `create <type> interface <name>`.
func (h interfaceHandler) Create(_ context.Context, k mockv1.InterfaceKey, v *mockv1.Interface) (uint32, error) {
	return h.sb.AddInterface(k.Name, interfaceKind(v.GetType()), strings.ToLower(v.GetPhysAddress()), v.GetEnabled())
}

// Update sets the MAC address and the state. A type change never gets
// here: the model says it re-creates.
func (h interfaceHandler) Update(_ context.Context, _ mockv1.InterfaceKey, _, v *mockv1.Interface, index uint32) (uint32, error) {
	return index, h.sb.SetInterface(index, strings.ToLower(v.GetPhysAddress()), v.GetEnabled())
}

// Delete deletes the interface.
func (h interfaceHandler) Delete(_ context.Context, _ mockv1.InterfaceKey, _ *mockv1.Interface, index uint32) error {
	return h.sb.DeleteInterface(index)
}

// Retrieve dumps the interfaces: those the scheduler expects are ours, the
// others were made by somebody else.
func (h interfaceHandler) Retrieve(_ context.Context, correlate []mockv1.InterfaceItem[uint32]) ([]mockv1.InterfaceItem[uint32], error) {
	ours := map[string]bool{}
	for _, it := range correlate {
		ours[it.Key.Name] = true
	}
	var out []mockv1.InterfaceItem[uint32]
	for _, d := range h.sb.DumpInterfaces() {
		t := mockv1.Interface_Type(mockv1.Interface_Type_value["TYPE_"+strings.ToUpper(d.kind)])
		out = append(out, mockv1.InterfaceItem[uint32]{
			Key:      mockv1.InterfaceKey{Name: d.name},
			Value:    &mockv1.Interface{Name: d.name, Type: t, Enabled: d.up, PhysAddress: d.mac},
			Metadata: d.index,
			Origin:   origin(ours[d.name]),
		})
	}
	return out, nil
}

// bridgeDomainHandler handles examples.mock.v1.BridgeDomain; its metadata
// is the bridge domain's index. Its members are derived values (see
// bindingHandler): changing them never updates the bridge domain itself,
// which therefore needs no Update.
type bridgeDomainHandler struct{ sb *southbound }

// Create creates the bridge domain, empty.
func (h bridgeDomainHandler) Create(_ context.Context, k mockv1.BridgeDomainKey, _ *mockv1.BridgeDomain) (uint32, error) {
	return h.sb.AddBridgeDomain(k.Name)
}

// Delete deletes the bridge domain, emptied before by the scheduler.
func (h bridgeDomainHandler) Delete(_ context.Context, _ mockv1.BridgeDomainKey, _ *mockv1.BridgeDomain, index uint32) error {
	return h.sb.DeleteBridgeDomain(index)
}

// Retrieve dumps the bridge domains.
func (h bridgeDomainHandler) Retrieve(_ context.Context, correlate []mockv1.BridgeDomainItem[uint32]) ([]mockv1.BridgeDomainItem[uint32], error) {
	ours := map[string]bool{}
	for _, it := range correlate {
		ours[it.Key.Name] = true
	}
	var out []mockv1.BridgeDomainItem[uint32]
	for _, d := range h.sb.DumpBridgeDomains() {
		v := &mockv1.BridgeDomain{Name: d.name}
		for _, name := range slices.Sorted(maps.Keys(d.members)) {
			v.Interfaces = append(v.Interfaces, &mockv1.BridgeDomain_Interface{Name: name, Bvi: d.members[name]})
		}
		out = append(out, mockv1.BridgeDomainItem[uint32]{Key: mockv1.BridgeDomainKey{Name: d.name}, Value: v, Metadata: d.index, Origin: origin(ours[d.name])})
	}
	return out, nil
}

// bindingHandler handles the derived values of a bridge domain's members:
// each puts one interface into the bridge domain. It finds both indexes
// in the metadata maps.
type bindingHandler struct {
	sb     *southbound
	bds    kv.MetadataMap[uint32]
	ifaces kv.MetadataMap[uint32]
}

// Create puts the interface into the bridge domain.
func (h bindingHandler) Create(_ context.Context, k mockv1.BridgeDomainInterfacesKey, v *mockv1.BridgeDomain_Interface) (struct{}, error) {
	bd, _ := h.bds.Get(k.Name)
	itf, _ := h.ifaces.Get(k.InterfacesName)
	return struct{}{}, h.sb.Bind(bd, itf, v.GetBvi())
}

// Delete takes the interface out of the bridge domain.
func (h bindingHandler) Delete(_ context.Context, k mockv1.BridgeDomainInterfacesKey, _ *mockv1.BridgeDomain_Interface, _ struct{}) error {
	bd, _ := h.bds.Get(k.Name)
	itf, _ := h.ifaces.Get(k.InterfacesName)
	return h.sb.Unbind(bd, itf)
}

// Retrieve lists the members of every bridge domain.
func (h bindingHandler) Retrieve(_ context.Context, _ []mockv1.BridgeDomainInterfacesItem[struct{}]) ([]mockv1.BridgeDomainInterfacesItem[struct{}], error) {
	var out []mockv1.BridgeDomainInterfacesItem[struct{}]
	for _, d := range h.sb.DumpBridgeDomains() {
		for _, name := range slices.Sorted(maps.Keys(d.members)) {
			out = append(out, mockv1.BridgeDomainInterfacesItem[struct{}]{
				Key:    mockv1.BridgeDomainInterfacesKey{Name: d.name, InterfacesName: name},
				Value:  &mockv1.BridgeDomain_Interface{Name: name, Bvi: d.members[name]},
				Origin: kv.OriginNB,
			})
		}
	}
	return out, nil
}

// fibHandler handles examples.mock.v1.FIBEntry. Without an Update, a
// changed entry is deleted and added again.
type fibHandler struct {
	sb     *southbound
	bds    kv.MetadataMap[uint32]
	ifaces kv.MetadataMap[uint32]
}

// Create adds the FIB entry.
func (h fibHandler) Create(_ context.Context, k mockv1.FIBEntryKey, v *mockv1.FIBEntry) (struct{}, error) {
	bd, _ := h.bds.Get(k.BridgeDomain)
	itf, _ := h.ifaces.Get(v.GetOutgoingInterface())
	return struct{}{}, h.sb.AddFIB(bd, k.PhysAddress.String(), itf)
}

// Delete deletes the FIB entry.
func (h fibHandler) Delete(_ context.Context, k mockv1.FIBEntryKey, _ *mockv1.FIBEntry, _ struct{}) error {
	bd, _ := h.bds.Get(k.BridgeDomain)
	return h.sb.DeleteFIB(bd, k.PhysAddress.String())
}

// Retrieve lists the FIB entries of every bridge domain.
func (h fibHandler) Retrieve(_ context.Context, correlate []mockv1.FIBEntryItem[struct{}]) ([]mockv1.FIBEntryItem[struct{}], error) {
	ours := map[string]bool{}
	for _, it := range correlate {
		ours[it.Key.String()] = true
	}
	var out []mockv1.FIBEntryItem[struct{}]
	for _, d := range h.sb.DumpBridgeDomains() {
		for _, mac := range slices.Sorted(maps.Keys(d.fib)) {
			v := &mockv1.FIBEntry{BridgeDomain: d.name, PhysAddress: mac, OutgoingInterface: d.fib[mac]}
			k, ok := mockv1.ParseFIBEntryKey(mockv1.FIBEntryKeyFor(v))
			if !ok {
				return nil, fmt.Errorf("FIB entry %s of bridge domain %s has no key", mac, d.name)
			}
			out = append(out, mockv1.FIBEntryItem[struct{}]{Key: k, Value: v, Origin: origin(ours[k.String()])})
		}
	}
	return out, nil
}

func origin(ours bool) kv.Origin {
	if ours {
		return kv.OriginNB
	}
	return kv.OriginSB
}
