package vpp

import (
	"context"
	"fmt"
	"slices"
	"time"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
)

// A LinkChange is a link that came up (Value set) or went down (Value
// nil), as a value of vpp.interfaces.v1.LinkUp.
type LinkChange struct {
	Key   string
	Value *vppinterfaces.LinkUp
}

// WatchLinks reports the links that come up or go down until ctx is done
// (or notify fails, with its error): it reads VPP's interfaces every
// interval and calls notify with what changed since the last read, the
// first read reporting every link, up (a value) or down (none). A read
// that fails (VPP away) is tried again at the next tick.
func (p *Plugin) WatchLinks(ctx context.Context, interval time.Duration, notify func(context.Context, []LinkChange) error) error {
	if interval <= 0 {
		return fmt.Errorf("vpp plugin: link watch interval %s: must be positive", interval)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last []string
	first := true
	for {
		if up, down, err := p.linksUp(ctx); err == nil {
			if first {
				last, first = down, false // each reported gone, below
			}
			var cs []LinkChange
			for _, name := range up {
				if !slices.Contains(last, name) {
					cs = append(cs, LinkChange{Key: vppinterfaces.LinkUpKey{Interface: name}.String(), Value: &vppinterfaces.LinkUp{Interface: name}})
				}
			}
			for _, name := range last {
				if !slices.Contains(up, name) {
					cs = append(cs, LinkChange{Key: vppinterfaces.LinkUpKey{Interface: name}.String()})
				}
			}
			if len(cs) > 0 {
				if err := notify(ctx, cs); err != nil {
					return err
				}
			}
			last = up
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
