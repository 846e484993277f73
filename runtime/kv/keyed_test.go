package kv_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// small is a typed key: a number below 100.
type small uint64

func parseSmall(key string) (small, bool) {
	n, err := strconv.ParseUint(key[len("t/"):], 10, 64)
	return small(n), err == nil && n < 100
}

type smallHandler struct{ created []small }

func (h *smallHandler) Create(_ context.Context, k small, _ *wrapperspb.StringValue) (struct{}, error) {
	h.created = append(h.created, k)
	return struct{}{}, nil
}

func (h *smallHandler) Delete(context.Context, small, *wrapperspb.StringValue, struct{}) error {
	return nil
}

// TestKeyedDescriptorKeySpace: without an IsKey of its own, a keyed
// descriptor's keys are those its parser accepts (the template matches
// "t/500" but the parser does not), so validation need not parse again;
// with one, a key it accepts that does not parse is invalid, naming the
// key. Either way the handler gets the parsed key.
func TestKeyedDescriptorKeySpace(t *testing.T) {
	t.Parallel()
	spec := kv.Spec[*wrapperspb.StringValue, struct{}]{Name: "small", KeyTemplate: "t/{n:uint}"}

	h := &smallHandler{}
	byParser, err := kv.NewKeyedDescriptor[small](spec, parseSmall, h)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"t/7": true, "t/99": true, "t/500": false, "t/x": false, "u/7": false} {
		if got := byParser.IsKey(key); got != want {
			t.Errorf("IsKey(%q) = %v, want %v", key, got, want)
		}
	}
	if err := byParser.Validate("t/7", wrapperspb.String("x")); err != nil {
		t.Errorf("Validate(t/7): %v", err)
	}
	if _, err := byParser.Create(context.Background(), "t/42", wrapperspb.String("x")); err != nil {
		t.Fatal(err)
	}

	spec.IsKey = func(string) bool { return true } // coarser than the parser
	own, err := kv.NewKeyedDescriptor[small](spec, parseSmall, h)
	if err != nil {
		t.Fatal(err)
	}
	if !own.IsKey("t/500") {
		t.Errorf("IsKey(t/500) = false with an IsKey that accepts it")
	}
	err = own.Validate("t/500", wrapperspb.String("x"))
	if got := fieldNames(err); !slices.Equal(got, []string{"(key)"}) {
		t.Errorf("Validate(t/500) = %v, invalid fields %q, want (key)", err, got)
	}
	if _, err := own.Create(context.Background(), "t/500", wrapperspb.String("x")); err == nil || kv.IsRetriable(err) {
		t.Errorf("Create(t/500) = %v, want a non-retriable error", err)
	}
	if !slices.Equal(h.created, []small{42}) {
		t.Errorf("the handler created %v, want [42]", h.created)
	}
}

func fieldNames(err error) []string {
	f, ok := err.(interface{ FieldNames() []string })
	if !ok {
		return nil
	}
	return f.FieldNames()
}

// TestEmptyMetadataIsNil: a descriptor whose metadata type carries no data
// (struct{}) reports nil metadata, so that no boxed empty value is kept
// with each of its values; a metadata type with data is reported as is.
func TestEmptyMetadataIsNil(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec := kv.Spec[*wrapperspb.StringValue, struct{}]{Name: "small", KeyTemplate: "t/{n:uint}"}
	d, err := kv.NewKeyedDescriptor[small](spec, parseSmall, &smallHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := d.Create(ctx, "t/1", wrapperspb.String("x")); err != nil || m != nil {
		t.Errorf("Create = %v, %v; want nil metadata", m, err)
	}
	withMeta, err := kv.NewDescriptor(kv.Spec[*wrapperspb.StringValue, int]{Name: "m", KeyPrefix: "m/"}, sevenHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := withMeta.Create(ctx, "m/1", wrapperspb.String("x")); err != nil || m != 7 {
		t.Errorf("Create = %v, %v; want metadata 7", m, err)
	}
}

type sevenHandler struct{}

func (sevenHandler) Create(context.Context, string, *wrapperspb.StringValue) (int, error) {
	return 7, nil
}

func (sevenHandler) Delete(context.Context, string, *wrapperspb.StringValue, int) error { return nil }
