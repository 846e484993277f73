//go:build linux

package linux

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	linuxinterfaces "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
)

// lockedBuffer is a bytes.Buffer that a logger and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestWatchWithoutNftables: on a kernel whose nftables events cannot be
// subscribed to, Watch says so in a warning and watches the rest: the
// interfaces of other programs are still reported, and Watch ends with
// nil when its context does.
func TestWatchWithoutNftables(t *testing.T) {
	ns := testNetns(t)
	var logs lockedBuffer
	noNft := func(o *options) {
		o.nftSubscribe = func(netns.NsHandle, func(syscall.NetlinkMessage) bool, <-chan struct{}, func(error)) (<-chan struct{}, error) {
			return nil, unix.EPROTONOSUPPORT
		}
	}
	p, err := New(WithNamespace(ns), WithDebounce(20*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), noNft)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lo := linuxinterfaces.InterfaceKey{Name: "lo"}.String()
	sawLo := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		ended <- p.Watch(ctx, func(_ context.Context, cs []Change) error {
			for _, c := range cs {
				if c.Key == lo && c.Value != nil {
					once.Do(func() { close(sawLo) })
				}
			}
			return nil
		})
	}()
	select {
	case <-sawLo:
	case err := <-ended:
		t.Fatalf("Watch ended without nftables: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the namespace's lo was not reported after 15s")
	}
	if got := logs.String(); !strings.Contains(got, "nft monitor") || !strings.Contains(got, "protocol not supported") || !strings.Contains(got, "level=WARN") {
		t.Errorf("logs:\n%s\nwant a warning naming nft monitor and the error", got)
	}
	cancel()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Watch ended with %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Watch did not end after 15s")
	}
}

// TestWatchEndsOnNftablesError: an nftables subscription that fails after
// it opened ends Watch with its error, which names it.
func TestWatchEndsOnNftablesError(t *testing.T) {
	ns := testNetns(t)
	fail := make(chan struct{})
	failing := func(o *options) {
		o.nftSubscribe = func(_ netns.NsHandle, _ func(syscall.NetlinkMessage) bool, done <-chan struct{}, onErr func(error)) (<-chan struct{}, error) {
			ch := make(chan struct{})
			go func() {
				defer close(ch)
				select {
				case <-fail:
					onErr(unix.EIO)
				case <-done:
				}
			}()
			return ch, nil
		}
	}
	p, err := New(WithNamespace(ns), WithDebounce(20*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), failing)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reported := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		ended <- p.Watch(ctx, func(context.Context, []Change) error {
			once.Do(func() { close(reported) })
			return nil
		})
	}()
	select {
	case <-reported:
	case err := <-ended:
		t.Fatalf("Watch ended before its first report: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no report after 15s")
	}
	close(fail)
	select {
	case err := <-ended:
		if err == nil || err.Error() != "nft monitor: input/output error" {
			t.Errorf("Watch ended with %v, want nft monitor: input/output error", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Watch did not end after 15s")
	}
}

// testNetns returns a new network namespace, closed when the test ends.
func testNetns(t *testing.T) netns.NsHandle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root to create a network namespace (euid is %d)", os.Geteuid())
	}
	ns, err := OnLockedThread(func() (netns.NsHandle, error) { return netns.New() })
	if err != nil {
		t.Fatalf("creating a network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}
