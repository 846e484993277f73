package kv_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// exampleRouteKey is a typed key, as generated code declares one per model.
type exampleRouteKey struct{ Dst netip.Prefix }

var exampleTemplate = kv.MustParseKeyTemplate("demo/route/{dst:ipprefix}")

func parseExampleRouteKey(key string) (exampleRouteKey, bool) {
	parts, ok := exampleTemplate.Split(key)
	if !ok {
		return exampleRouteKey{}, false
	}
	dst, ok := kv.ParseKeyIPPrefix(parts[0])
	return exampleRouteKey{Dst: dst}, ok
}

// exampleRoutes is a handler: the southbound calls only, with parsed keys. Its
// value is the name of the outgoing interface; its metadata (int) an
// index the southbound assigns.
type exampleRoutes struct{}

func (exampleRoutes) Create(_ context.Context, k exampleRouteKey, dev *wrapperspb.StringValue) (int, error) {
	fmt.Println("ip route add", k.Dst, "dev", dev.GetValue())
	return 7, nil
}

func (exampleRoutes) Delete(_ context.Context, k exampleRouteKey, _ *wrapperspb.StringValue, index int) error {
	fmt.Println("ip route del", k.Dst, "index", index)
	return nil
}

// exampleBadUpdate has an Update of the wrong signature (the old value is
// missing): NewDescriptor refuses it rather than leave it unused.
type exampleBadUpdate struct{ exampleRoutes }

func (exampleBadUpdate) Update(_ context.Context, _ exampleRouteKey, _ *wrapperspb.StringValue, _ int) (int, error) {
	return 0, nil
}

// A descriptor joins a Spec (generated from the schema for models) and a
// handler. The scheduler makes these calls; the example makes them by hand
// to show the contract: keys arrive parsed, dependencies come from the
// spec, and a key that is not in canonical form is nobody's key.
func ExampleNewDescriptor() {
	d, err := kv.NewDescriptor(kv.Spec[exampleRouteKey, *wrapperspb.StringValue, int]{
		Name:        "route",
		KeyTemplate: exampleTemplate.String(),
		ParseKey:    parseExampleRouteKey,
		KeyString:   func(k exampleRouteKey) string { return exampleTemplate.Build(k.Dst.String()) },
		Dependencies: func(_ string, dev *wrapperspb.StringValue) []kv.Dependency {
			return []kv.Dependency{{Label: "interface", Key: "demo/interface/" + kv.EscapeSegment(dev.GetValue())}}
		},
	}, exampleRoutes{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	key, dev := "demo/route/10.1.0.0/16", wrapperspb.String("eth0")

	fmt.Println(d.IsKey(key), d.IsKey("demo/route/10.1.0.7/16"), d.CanUpdate())
	fmt.Println(d.Dependencies(key, dev))
	meta, err := d.Create(ctx, key, dev)
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Delete(ctx, key, dev, meta); err != nil {
		log.Fatal(err)
	}

	_, err = kv.NewDescriptor(kv.Spec[exampleRouteKey, *wrapperspb.StringValue, int]{
		Name:        "route",
		KeyTemplate: exampleTemplate.String(),
		ParseKey:    parseExampleRouteKey,
		KeyString:   func(k exampleRouteKey) string { return exampleTemplate.Build(k.Dst.String()) },
	}, exampleBadUpdate{})
	fmt.Println(err)
	// Output:
	// true false false
	// [interface -> demo/interface/eth0]
	// ip route add 10.1.0.0/16 dev eth0
	// ip route del 10.1.0.0/16 index 7
	// kv.NewDescriptor route: the handler kv_test.exampleBadUpdate has a method Update that is not the optional Update of the model: it is func(context.Context, kv_test.exampleRouteKey, *wrapperspb.StringValue, int) (int, error), want func(context.Context, kv_test.exampleRouteKey, *wrapperspb.StringValue, *wrapperspb.StringValue, int) (int, error)
}

// A key template builds keys from placeholder values in key form, and
// splits keys back; names are escaped so that they never contain '/'.
func ExampleKeyTemplate() {
	t := kv.MustParseKeyTemplate("demo/interface/{name}/address/{address:ipiface}")
	key := t.Build(kv.EscapeSegment("eth0/1"), "10.0.0.1/24")
	fmt.Println(key)
	parts, ok := t.Split(key)
	name, _ := kv.UnescapeSegment(parts[0])
	fmt.Println(ok, name, parts[1])
	_, ok = t.Split("demo/interface/eth0")
	fmt.Println(ok)
	// Output:
	// demo/interface/eth0%2F1/address/10.0.0.1/24
	// true eth0/1 10.0.0.1/24
	// false
}
