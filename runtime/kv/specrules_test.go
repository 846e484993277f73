package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestValidateChecksSpecOutput: a value the schema and the handler accept
// is still invalid when its spec computes a dependency with neither a key
// nor AnyOf prefixes, or a derived value with an empty key or no value;
// the error names the key and which dependency or derived value.
func TestValidateChecksSpecOutput(t *testing.T) {
	t.Parallel()
	d := newDescriptor(t, spec{
		Dependencies: func(_ string, v value) []kv.Dependency {
			switch v.GetValue() {
			case "emptydep":
				return []kv.Dependency{{Label: "ok", Key: "linux/interface/x"}, {Label: "parent"}}
			case "noprefix":
				return []kv.Dependency{{Label: "address", AnyOf: kv.AnyOf{Describe: "any"}}}
			}
			return nil
		},
		Derived: func(_ string, v value) []kv.Derived {
			switch v.GetValue() {
			case "emptykey":
				return []kv.Derived{{Value: wrapperspb.String("x")}}
			case "nilvalue":
				return []kv.Derived{{Key: "d/1", Value: (*wrapperspb.StringValue)(nil)}}
			case "nilmessage":
				return []kv.Derived{{Key: "d/2"}}
			}
			return nil
		},
	}, &baseHandler{})
	key := "linux/interface/eth0"
	for v, want := range map[string]string{
		"emptydep":   `(dependencies): dependency 2 ("parent") has neither a key nor AnyOf prefixes`,
		"noprefix":   `(dependencies): dependency 1 ("address") has neither a key nor AnyOf prefixes`,
		"emptykey":   "(derived): derived value 1 has an empty key",
		"nilvalue":   "(derived): derived value 1 (d/1) has no value",
		"nilmessage": "(derived): derived value 1 (d/2) has no value",
	} {
		err := d.Validate(key, wrapperspb.String(v))
		var inv *kv.InvalidValueError
		if !errors.As(err, &inv) || inv.Key != key || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%s): %v, want an *InvalidValueError of %s saying %q", v, err, key, want)
		}
	}
	if err := d.Validate(key, wrapperspb.String("fine")); err != nil {
		t.Errorf("Validate(fine): %v", err)
	}
}

// TestStringKeysWithoutParserMatchTheTemplate: a descriptor with string
// keys and no Spec.ParseKey recognises its keys by the template's Match
// (Spec.ParseKey's documented default) in every type-erased call, not
// only in IsKey: a text outside the key space never reaches the handler.
func TestStringKeysWithoutParserMatchTheTemplate(t *testing.T) {
	t.Parallel()
	h := &baseHandler{}
	d := newDescriptor(t, spec{}, updateHandler{h})
	ctx := context.Background()
	v := wrapperspb.String("up")
	for _, key := range []string{"linux/interface/a/b", "linux/interface/", "linux/other/x", "other"} {
		if _, err := d.Create(ctx, key, v); err == nil || kv.IsRetriable(err) {
			t.Errorf("Create(%q): %v, want a non-retriable error", key, err)
		}
		if _, err := d.Update(ctx, key, v, v, nil); err == nil {
			t.Errorf("Update(%q) succeeded", key)
		}
		if err := d.Delete(ctx, key, v, nil); err == nil {
			t.Errorf("Delete(%q) succeeded", key)
		}
	}
	if calls := h.Calls(); len(calls) != 0 {
		t.Errorf("the handler got %v", calls)
	}
	if _, err := d.Create(ctx, "linux/interface/eth0", v); err != nil {
		t.Errorf("Create of a key of the template: %v", err)
	}
	p := newDescriptor(t, spec{Name: "by-prefix", KeyPrefix: "p/"}, h)
	if _, err := p.Create(ctx, "p/", v); err == nil {
		t.Error("Create of the bare prefix of a prefix-keyed descriptor succeeded")
	}
	if _, err := p.Create(ctx, "p/x/y", v); err != nil {
		t.Errorf("Create of a key under the prefix: %v", err)
	}
}

// TestSpecOutputChecksAllocateNothing: the checks of what a spec computes
// run on every value the scheduler evaluates; well-formed output costs no
// allocation.
func TestSpecOutputChecksAllocateNothing(t *testing.T) {
	deps := []kv.Dependency{{Label: "a", Key: "x/1"}, {Label: "b", AnyOf: kv.AnyOf{Prefixes: []string{"y/"}}}}
	ds := []kv.Derived{{Key: "d/1", Value: wrapperspb.String("v")}}
	if n := testing.AllocsPerRun(100, func() {
		if kv.CheckDependencies("k", deps) != nil || kv.CheckDerived("k", ds) != nil {
			t.Fatal("well-formed output refused")
		}
	}); n != 0 {
		t.Errorf("%v allocations a check", n)
	}
	if err := kv.CheckDerived("k", []kv.Derived{{Key: "d/1"}}); err == nil || !strings.Contains(err.Error(), "derived value 1 (d/1) has no value") {
		t.Errorf("CheckDerived of a value-less derived value: %v", err)
	}
}
