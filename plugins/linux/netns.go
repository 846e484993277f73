package linux

import (
	"errors"
	"runtime"

	"github.com/vishvananda/netns"
)

// NewNamespace creates a network namespace and returns its handle (the
// namespace lives while a handle or a process holds it). The caller stays
// in its own namespace: the creating thread is locked, switched, and
// switched back; if it cannot switch back, it is left locked and dies with
// its goroutine, so no other goroutine runs in the wrong namespace.
func NewNamespace() (netns.NsHandle, error) {
	return OnLockedThread(func() (netns.NsHandle, error) { return netns.New() })
}

// OnLockedThread runs f on a locked OS thread and switches that thread
// back to its network namespace afterwards, for the calls that move the
// calling thread (netns.New, netns.NewNamed).
func OnLockedThread(f func() (netns.NsHandle, error)) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	c := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			c <- result{netns.None(), err}
			return
		}
		defer orig.Close()
		ns, err := f()
		if serr := netns.Set(orig); serr != nil {
			c <- result{ns, errors.Join(err, serr)} // the thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		c <- result{ns, err}
	}()
	r := <-c
	return r.ns, r.err
}
