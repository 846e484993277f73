package modelstest

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	linuxl3 "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// linuxRouteHandler is the documented handler pattern: CRUD bodies, with the
// compile-time assertions of the capabilities it means to have.
type linuxRouteHandler struct {
	nop[linuxl3.RouteKey, *linuxl3.Route]
	retrieved []linuxl3.RouteKey
}

var (
	_ linuxl3.RouteHandler[struct{}]   = (*linuxRouteHandler)(nil)
	_ linuxl3.RouteUpdater[struct{}]   = (*linuxRouteHandler)(nil)
	_ linuxl3.RouteRetriever[struct{}] = (*linuxRouteHandler)(nil)
	_ linuxl3.RouteValidator           = (*linuxRouteHandler)(nil)
)

func (h *linuxRouteHandler) Update(context.Context, linuxl3.RouteKey, *linuxl3.Route, *linuxl3.Route, struct{}) (struct{}, error) {
	return struct{}{}, nil
}

func (h *linuxRouteHandler) Retrieve(_ context.Context, correlate []linuxl3.RouteItem[struct{}]) ([]linuxl3.RouteItem[struct{}], error) {
	for _, c := range correlate {
		h.retrieved = append(h.retrieved, c.Key)
	}
	// Found in the southbound: a route that nothing asked for, keyed by
	// its typed key.
	found := linuxl3.RouteKey{OutgoingInterface: "eth/1", DstNetwork: netip.MustParsePrefix("10.9.0.0/16")}
	return append(correlate, linuxl3.RouteItem[struct{}]{Key: found, Value: &linuxl3.Route{OutgoingInterface: "eth/1", DstNetwork: "10.9.0.0/16"}, Origin: kv.OriginSB}), nil
}

func (h *linuxRouteHandler) Validate(linuxl3.RouteKey, *linuxl3.Route) error { return nil }

// TestRetrieveGetsTypedKeys: Retrieve, like every other handler call,
// receives parsed keys, and the keys of what it returns are written back
// as key texts (a name escaped, a network canonical).
func TestRetrieveGetsTypedKeys(t *testing.T) {
	t.Parallel()
	h := &linuxRouteHandler{}
	d, err := linuxl3.NewRouteDescriptor[struct{}](h)
	if err != nil {
		t.Fatal(err)
	}
	if !d.CanUpdate() || !d.CanRetrieve() {
		t.Fatalf("CanUpdate, CanRetrieve = %v, %v; want true, true", d.CanUpdate(), d.CanRetrieve())
	}
	key := linuxl3.RouteKeyFor(&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/24"})
	got, err := d.Retrieve(context.Background(), []kv.Item[string, proto.Message, any]{
		{Key: key, Value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/24"}, Origin: kv.OriginNB},
		{Key: "linux/route/eth0/not-a-network", Value: &linuxl3.Route{}, Origin: kv.OriginNB},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := linuxl3.RouteKey{OutgoingInterface: "eth0", DstNetwork: netip.MustParsePrefix("10.0.0.0/24")}
	if len(h.retrieved) != 1 || h.retrieved[0] != want {
		t.Errorf("Retrieve got keys %v; want only %v (a text that is not a key never reaches the handler)", h.retrieved, want)
	}
	var keys []string
	for _, it := range got {
		keys = append(keys, it.Key)
	}
	if w := []string{key, "linux/route/eth%2F1/10.9.0.0/16"}; strings.Join(keys, " ") != strings.Join(w, " ") {
		t.Errorf("Retrieve returned keys %q; want %q", keys, w)
	}
}

// mistypedUpdate has the Update a user writes when they forget the old
// metadata: it compiles, and without the constructor's check every change
// would silently become delete + create.
type mistypedUpdate struct {
	nop[linuxl3.RouteKey, *linuxl3.Route]
}

func (mistypedUpdate) Update(context.Context, linuxl3.RouteKey, *linuxl3.Route, *linuxl3.Route) (struct{}, error) {
	return struct{}{}, nil
}

// stringKeyedRetrieve has a Retrieve of string keys, the contract before
// typed keys.
type stringKeyedRetrieve struct {
	nop[linuxl3.RouteKey, *linuxl3.Route]
}

func (stringKeyedRetrieve) Retrieve(context.Context, []kv.Item[string, *linuxl3.Route, struct{}]) ([]kv.Item[string, *linuxl3.Route, struct{}], error) {
	return nil, nil
}

// valueOnlyValidate has a Validate without the key.
type valueOnlyValidate struct {
	nop[linuxl3.RouteKey, *linuxl3.Route]
}

func (valueOnlyValidate) Validate(*linuxl3.Route) error { return nil }

// TestMistypedCapabilityRefused: the generated constructor refuses a
// handler with a method named Update, Retrieve or Validate that is not the
// capability, naming the method, what it is and what it should be.
func TestMistypedCapabilityRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    linuxl3.RouteHandler[struct{}]
		want []string
	}{
		{"update without old metadata", mistypedUpdate{}, []string{"linux.l3.v1.Route", "method Update", "RouteKey", "struct {}) (struct {}, error)"}},
		{"retrieve of string keys", stringKeyedRetrieve{}, []string{"method Retrieve", "kv.Item[string,", "kv.Item[github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1.RouteKey,"}},
		{"validate without key", valueOnlyValidate{}, []string{"method Validate", "func(*linuxl3.Route) error", "func(linuxl3.RouteKey, *linuxl3.Route) error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := linuxl3.NewRouteDescriptor(tc.h)
			if err == nil {
				t.Fatalf("NewRouteDescriptor accepted %T (CanUpdate %v, CanRetrieve %v)", tc.h, d.CanUpdate(), d.CanRetrieve())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
