//go:build linux

package linux

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
)

// TestFailedCreateNotReportedForeign: a create that fails after adding its
// link (the kernel refuses the MTU) deletes the link again; a scan of the
// watcher that listed the links while the link was there, and judges them
// after the create gave up, must not report it as another program's
// interface (OBTAINED, then gone a moment later).
func TestFailedCreateNotReportedForeign(t *testing.T) {
	ns := testNetns(t)
	added, listed, created := make(chan struct{}), make(chan struct{}), make(chan struct{})
	seams := func(o *options) {
		o.linkAdded = func(string) {
			close(added)
			<-listed // the scan lists the links now
		}
		o.scanListed = func() {
			close(listed)
			<-created // and judges them once the create gave up
		}
	}
	p, err := New(WithNamespace(ns), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), seams)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n, err := p.ns.get("")
	if err != nil {
		t.Fatal(err)
	}
	w := &watch{p: p, n: n, last: map[string]*linuxinterfaces.Interface{}}
	type result struct {
		changes []Change
		err     error
	}
	scanned := make(chan result, 1)
	go func() {
		select {
		case <-added:
		case <-time.After(30 * time.Second):
			scanned <- result{err: context.DeadlineExceeded}
			return
		}
		c, err := w.scan()
		scanned <- result{c, err}
	}()
	// A TAP device's MTU is at most 65535 less its Ethernet header.
	v := &linuxinterfaces.Interface{Name: "bigrace0", Type: linuxinterfaces.Interface_TYPE_TAP, Mtu: 65535}
	_, err = (&interfaces{p: p}).Create(context.Background(), linuxinterfaces.InterfaceKey{Name: v.Name}, v)
	close(created)
	if err == nil {
		t.Fatal("an MTU of 65535 on a TAP device was accepted")
	}
	r := <-scanned
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, c := range r.changes {
		if c.Metadata.HostName == v.Name || c.Key == linuxinterfaces.InterfaceKeyFor(v) {
			t.Errorf("the scan reported the link of a failed create as another program's: %+v", c)
		}
	}
	if _, err := n.h.LinkByName(v.Name); err == nil {
		t.Errorf("the failed create left its link behind")
	}
}
