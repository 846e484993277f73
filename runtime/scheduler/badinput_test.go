package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestDescriptorCallTimeoutNamesUnknownDescriptor: a per-descriptor call
// timeout must name a descriptor. New refuses an empty name; since
// descriptors are registered after New, a name that is not registered
// when a northbound transaction is committed fails the commit, naming it
// (a typo would otherwise leave the descriptor with the default timeout,
// silently).
func TestDescriptorCallTimeoutNamesUnknownDescriptor(t *testing.T) {
	t.Parallel()
	if _, err := scheduler.New(scheduler.WithLogger(quiet), scheduler.WithDescriptorCallTimeout("", time.Second)); err == nil {
		t.Error("New accepted a call timeout of a descriptor with an empty name")
	}
	s := newScheduler(t, scheduler.WithDescriptorCallTimeout("nosuch", time.Second))
	sb := kvtest.NewSB()
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})); err != nil {
		t.Fatal(err)
	}
	_, err := s.Txn().Set("iface/eth0", kvtest.Value("up")).Commit(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "WithDescriptorCallTimeout") {
		t.Fatalf("commit with a call timeout of an unregistered descriptor: err = %v, want one naming the option and the descriptor", err)
	}
	if got := s.Status("iface/eth0").State; got != scheduler.NONEXISTENT {
		t.Errorf("the refused commit left iface/eth0 %s", got)
	}
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "nosuch", KeyTemplate: "nosuch/{name}"})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn().Set("iface/eth0", kvtest.Value("up")).Commit(context.Background()); err != nil {
		t.Fatalf("commit once the descriptor is registered: %v", err)
	}
}

// TestNotifyOutsideKeySpaces: a notification of a key that no descriptor
// handles, or that lies under a descriptor's prefix without matching its
// template, is an error naming the key (and the template), and its value
// is not kept: no descriptor could compare, read back or delete it.
func TestNotifyOutsideKeySpaces(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	sb := kvtest.NewSB()
	if err := s.Register(harness(t, sb, kvtest.Config{Name: "route", KeyTemplate: "route/{vrf:uint}/{dst:ipprefix}"})); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"route/x/10.0.0.0/24": "route/{vrf:uint}/{dst:ipprefix}",
		"nosuch/a":            "no descriptor",
	} {
		_, err := s.Notify(context.Background(), scheduler.Notification{Key: key, Value: kvtest.Value("up")})
		var txnErr *scheduler.TxnError
		if !errors.As(err, &txnErr) || len(txnErr.Errors) != 1 || txnErr.Errors[0].Key != key || !strings.Contains(err.Error(), want) {
			t.Errorf("Notify(%s): err = %v, want an error of the key saying %q", key, err, want)
		}
		if st := s.Status(key); st.State != scheduler.NONEXISTENT {
			t.Errorf("Notify(%s) left the value %s", key, st.State)
		}
	}
}

// TestPendingOnKeyNoDescriptorHandles: a value waiting for a key that no
// registered descriptor handles (or an AnyOf dependency whose prefixes no
// descriptor's key space reaches) says so in its status, not only in
// WhyPending: nothing can create that key until such a descriptor is
// registered.
func TestPendingOnKeyNoDescriptorHandles(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	sb := kvtest.NewSB()
	if err := s.Register(
		harness(t, sb, kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"}),
		harness(t, sb, kvtest.Config{Name: "route", KeyTemplate: "route/{vrf:uint}/{dst:ipprefix}"}),
	); err != nil {
		t.Fatal(err)
	}
	_, err := s.Txn().
		Set("iface/a", kvtest.Value("dep:nosuch/x")).
		Set("iface/b", kvtest.Value("dep:route/x/1")).
		Set("iface/c", kvtest.Value("any:nosuch/")).
		Set("iface/d", kvtest.Value("dep:iface/z")).
		Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"iface/a": "no registered descriptor handles nosuch/x",
		"iface/b": "no registered descriptor handles route/x/1",
		"iface/c": "no registered descriptor handles keys under nosuch/",
	} {
		st := s.Status(key)
		if st.State != scheduler.PENDING || !strings.Contains(strings.Join(st.Details, "\n"), want) {
			t.Errorf("%s: %s, details %q; want PENDING with %q", key, st.State, st.Details, want)
		}
	}
	if st := s.Status("iface/d"); len(st.Details) != 0 {
		t.Errorf("iface/d waits for a key a descriptor handles, yet its details are %q", st.Details)
	}
}

// TestSpecOutputMalformed: a value whose spec returns a dependency with
// neither a key nor AnyOf prefixes, an AnyOf with no prefixes, or a
// derived value with an empty key or no value is INVALID, with an error
// naming the key and the dependency or derived value; nothing of it
// reaches the southbound.
func TestSpecOutputMalformed(t *testing.T) {
	t.Parallel()
	type sv = *wrapperspb.StringValue
	spec := kv.Spec[string, sv, struct{}]{
		Name:        "thing",
		KeyTemplate: "thing/{name}",
		Dependencies: func(key string, v sv) []kv.Dependency {
			switch v.GetValue() {
			case "emptydep":
				return []kv.Dependency{{Label: "parent"}}
			case "noprefix":
				return []kv.Dependency{{Label: "some address", AnyOf: kv.AnyOf{Describe: "any"}}}
			}
			return nil
		},
		Derived: func(key string, v sv) []kv.Derived {
			switch v.GetValue() {
			case "emptykey":
				return []kv.Derived{{Key: "", Value: wrapperspb.String("x")}}
			case "nilvalue":
				return []kv.Derived{{Key: "thing/" + "d", Value: nil}}
			}
			return nil
		},
	}
	h := &recordingHandler{}
	d, err := kv.NewDescriptor(spec, kv.Handler[string, sv, struct{}](h))
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t)
	if err := s.Register(d); err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		"emptydep": `dependency 1 ("parent")`,
		"noprefix": `dependency 1 ("some address")`,
		"emptykey": "derived value 1",
		"nilvalue": "derived value 1 (thing/d)",
	} {
		key := "thing/" + value
		_, err := s.Txn().Set(key, wrapperspb.String(value)).Commit(context.Background())
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: commit error %v, want one naming the key and %q", key, err, want)
		}
		if st := s.Status(key); st.State != scheduler.INVALID {
			t.Errorf("%s is %s, want INVALID", key, st.State)
		}
	}
	if h.calls.Load() != 0 {
		t.Errorf("%d calls reached the handler", h.calls.Load())
	}
}

// recordingHandler counts the calls it gets and succeeds.
type recordingHandler struct{ calls atomic.Int32 }

func (h *recordingHandler) Create(context.Context, string, *wrapperspb.StringValue) (struct{}, error) {
	h.calls.Add(1)
	return struct{}{}, nil
}

func (h *recordingHandler) Delete(context.Context, string, *wrapperspb.StringValue, struct{}) error {
	h.calls.Add(1)
	return nil
}
