package kv_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// The test model: values are StringValues keyed "linux/interface/{name}",
// metadata is a pointer, as an SB index would be.
type (
	value = *wrapperspb.StringValue
	spec  = kv.Spec[string, value, *ifaceMeta]
)

type ifaceMeta struct {
	Index uint32
	Tags  []string
}

const ifaceTemplate = "linux/interface/{name}"

// call is one recorded handler call.
type call struct {
	Op       string
	Key      string
	Value    string
	OldValue string
	Meta     *ifaceMeta
}

// baseHandler implements only the mandatory Create and Delete.
type baseHandler struct {
	mu        sync.Mutex
	calls     []call
	next      uint32
	createErr error
	updateErr error
	deleteErr error
}

func (h *baseHandler) record(c call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

func (h *baseHandler) Calls() []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.calls...)
}

func (h *baseHandler) Create(_ context.Context, key string, v value) (*ifaceMeta, error) {
	h.mu.Lock()
	h.next++
	m := &ifaceMeta{Index: h.next, Tags: []string{v.GetValue()}}
	h.mu.Unlock()
	h.record(call{Op: "create", Key: key, Value: v.GetValue()})
	if h.createErr != nil {
		return m, h.createErr
	}
	return m, nil
}

func (h *baseHandler) Delete(_ context.Context, key string, v value, m *ifaceMeta) error {
	h.record(call{Op: "delete", Key: key, Value: v.GetValue(), Meta: m})
	return h.deleteErr
}

// updateHandler adds Update.
type updateHandler struct{ *baseHandler }

func (h updateHandler) Update(_ context.Context, key string, oldValue, newValue value, oldMeta *ifaceMeta) (*ifaceMeta, error) {
	h.record(call{Op: "update", Key: key, Value: newValue.GetValue(), OldValue: oldValue.GetValue(), Meta: oldMeta})
	if h.updateErr != nil {
		return oldMeta, h.updateErr
	}
	idx := uint32(0)
	if oldMeta != nil {
		idx = oldMeta.Index
	}
	return &ifaceMeta{Index: idx, Tags: []string{newValue.GetValue()}}, nil
}

// retrieveHandler adds Retrieve.
type retrieveHandler struct {
	*baseHandler
	found []kv.Item[string, value, *ifaceMeta]
	err   error
	got   *[]kv.Item[string, value, *ifaceMeta]
}

func (h retrieveHandler) Retrieve(_ context.Context, correlate []kv.Item[string, value, *ifaceMeta]) ([]kv.Item[string, value, *ifaceMeta], error) {
	if h.got != nil {
		*h.got = correlate
	}
	return h.found, h.err
}

// validateHandler adds Validate.
type validateHandler struct {
	*baseHandler
	validate func(key string, v value) error
}

func (h validateHandler) Validate(key string, v value) error { return h.validate(key, v) }

// fullHandler has every optional capability.
type fullHandler struct {
	updateHandler
	retrieveHandler
	validateHandler
}

func (h fullHandler) Create(ctx context.Context, key string, v value) (*ifaceMeta, error) {
	return h.updateHandler.Create(ctx, key, v)
}

func (h fullHandler) Delete(ctx context.Context, key string, v value, m *ifaceMeta) error {
	return h.updateHandler.Delete(ctx, key, v, m)
}

var (
	_ kv.Handler[string, value, *ifaceMeta]   = (*baseHandler)(nil)
	_ kv.Updater[string, value, *ifaceMeta]   = updateHandler{}
	_ kv.Retriever[string, value, *ifaceMeta] = retrieveHandler{}
	_ kv.Validator[string, value]             = validateHandler{}
	_ kv.Updater[string, value, *ifaceMeta]   = fullHandler{}
	_ kv.Retriever[string, value, *ifaceMeta] = fullHandler{}
	_ kv.Validator[string, value]             = fullHandler{}
)

func newDescriptor(t *testing.T, s spec, h kv.Handler[string, value, *ifaceMeta]) *kv.TypedDescriptor[string, value, *ifaceMeta] {
	t.Helper()
	if s.Name == "" {
		s.Name = "test-interface"
	}
	if s.KeyTemplate == "" && s.KeyPrefix == "" {
		s.KeyTemplate = ifaceTemplate
	}
	d, err := kv.NewDescriptor(s, h)
	if err != nil {
		t.Fatalf("NewDescriptor: %v", err)
	}
	return d
}

func str(s string) value { return wrapperspb.String(s) }

func TestNewDescriptorErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    spec
		handler kv.Handler[string, value, *ifaceMeta]
		wantErr string
	}{
		{
			name:    "empty name",
			spec:    spec{KeyTemplate: ifaceTemplate},
			handler: &baseHandler{},
			wantErr: "kv.NewDescriptor: Spec.Name is empty",
		},
		{
			name:    "nil handler",
			spec:    spec{Name: "iface", KeyTemplate: ifaceTemplate},
			wantErr: "kv.NewDescriptor iface: handler is nil",
		},
		{
			name:    "bad template",
			spec:    spec{Name: "iface", KeyTemplate: "linux/interface/{name"},
			handler: &baseHandler{},
			wantErr: `kv.NewDescriptor iface: key template "linux/interface/{name": unclosed '{'`,
		},
		{
			name:    "unknown format",
			spec:    spec{Name: "iface", KeyTemplate: "linux/interface/{name:str}"},
			handler: &baseHandler{},
			wantErr: `kv.NewDescriptor iface: key template "linux/interface/{name:str}": placeholder {name:str}: unknown format "str" (want name, uint, ip, ipprefix, ipiface or mac)`,
		},
		{
			name:    "no key space",
			spec:    spec{Name: "iface"},
			handler: &baseHandler{},
			wantErr: "kv.NewDescriptor iface: the key space has no literal prefix (set KeyTemplate or KeyPrefix)",
		},
		{
			name:    "template without a literal prefix",
			spec:    spec{Name: "iface", KeyTemplate: "{name}/x"},
			handler: &baseHandler{},
			wantErr: `kv.NewDescriptor iface: key template "{name}/x" has no literal prefix before its first placeholder: a descriptor's keys are mapped to it by their prefix`,
		},
		{
			name:    "template without a literal prefix, KeyPrefix ignored",
			spec:    spec{Name: "iface", KeyTemplate: "{name}", KeyPrefix: "linux/"},
			handler: &baseHandler{},
			wantErr: `kv.NewDescriptor iface: key template "{name}" has no literal prefix before its first placeholder: a descriptor's keys are mapped to it by their prefix`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := kv.NewDescriptor(tt.spec, tt.handler)
			if err == nil {
				t.Fatalf("NewDescriptor succeeded (%v), want error %q", d.Name(), tt.wantErr)
			}
			if d != nil {
				t.Error("NewDescriptor returned a descriptor along with the error")
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// anyHandler is a handler over the proto.Message interface itself.
type anyHandler struct{}

func (anyHandler) Create(context.Context, string, proto.Message) (any, error) { return nil, nil }
func (anyHandler) Delete(context.Context, string, proto.Message, any) error   { return nil }

func TestNewDescriptorNeedsAConcreteMessageType(t *testing.T) {
	t.Parallel()
	d, err := kv.NewDescriptor(kv.Spec[string, proto.Message, any]{Name: "any", KeyPrefix: "any/"}, anyHandler{})
	if err == nil {
		t.Fatalf("NewDescriptor[proto.Message] succeeded (%v), want an error", d.Name())
	}
	if want := "kv.NewDescriptor any: the value type protoreflect.ProtoMessage is not a concrete message type"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestDescriptorAccessors(t *testing.T) {
	t.Parallel()
	h := &baseHandler{}
	d := newDescriptor(t, spec{
		Name:                 "linux-interface",
		KeyTemplate:          ifaceTemplate,
		KeyPrefix:            "ignored/",
		RetrieveDependencies: []string{"linux-namespace", "linux-bridge"},
		WithMetadata:         true,
	}, h)
	var erased kv.Descriptor = d

	if got := erased.Name(); got != "linux-interface" {
		t.Errorf("Name() = %q", got)
	}
	if got := erased.KeyPrefix(); got != "linux/interface/" {
		t.Errorf("KeyPrefix() = %q, want the template's prefix", got)
	}
	if got := erased.KeyTemplate(); got == nil || got.String() != ifaceTemplate {
		t.Errorf("KeyTemplate() = %v, want %q", got, ifaceTemplate)
	}
	if got, want := erased.ValueType(), (&wrapperspb.StringValue{}).ProtoReflect().Type(); got != want {
		t.Errorf("ValueType() = %v, want %v", got.Descriptor().FullName(), want.Descriptor().FullName())
	}
	if got := erased.ValueType().Descriptor().FullName(); got != "google.protobuf.StringValue" {
		t.Errorf("ValueType() full name = %q", got)
	}
	if !erased.WithMetadata() {
		t.Error("WithMetadata() = false")
	}
	if got := d.Handler(); got != kv.Handler[string, value, *ifaceMeta](h) {
		t.Errorf("Handler() = %v, want the handler given", got)
	}

	deps := erased.RetrieveDependencies()
	if diff := cmp.Diff([]string{"linux-namespace", "linux-bridge"}, deps); diff != "" {
		t.Errorf("RetrieveDependencies mismatch (-want +got):\n%s", diff)
	}
	deps[0] = "mutated"
	if got := erased.RetrieveDependencies()[0]; got != "linux-namespace" {
		t.Errorf("RetrieveDependencies changed after mutating a returned slice: %q", got)
	}

	prefixOnly := newDescriptor(t, spec{Name: "p", KeyPrefix: "config/global/"}, h)
	if got := prefixOnly.KeyPrefix(); got != "config/global/" {
		t.Errorf("KeyPrefix() = %q", got)
	}
	if got := prefixOnly.KeyTemplate(); got != nil {
		t.Errorf("KeyTemplate() = %v, want nil", got)
	}
	if prefixOnly.WithMetadata() {
		t.Error("WithMetadata() = true by default")
	}
	if got := prefixOnly.RetrieveDependencies(); len(got) != 0 {
		t.Errorf("RetrieveDependencies() = %q, want none", got)
	}

	otherValueType, err := kv.NewDescriptor(kv.Spec[string, *structpb.Struct, struct{}]{Name: "s", KeyPrefix: "s/"}, structHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if got := otherValueType.ValueType().Descriptor().FullName(); got != "google.protobuf.Struct" {
		t.Errorf("ValueType() full name = %q", got)
	}
}

type structHandler struct{}

func (structHandler) Create(context.Context, string, *structpb.Struct) (struct{}, error) {
	return struct{}{}, nil
}
func (structHandler) Delete(context.Context, string, *structpb.Struct, struct{}) error { return nil }

func TestCapabilities(t *testing.T) {
	t.Parallel()
	rejectAll := func(string, value) error { return kv.Invalid("value", "rejected by the handler") }
	tests := []struct {
		name         string
		handler      kv.Handler[string, value, *ifaceMeta]
		wantUpdate   bool
		wantRetrieve bool
		wantValidate bool
	}{
		{name: "create and delete only", handler: &baseHandler{}},
		{name: "update", handler: updateHandler{&baseHandler{}}, wantUpdate: true},
		{name: "retrieve", handler: retrieveHandler{baseHandler: &baseHandler{}}, wantRetrieve: true},
		{name: "validate", handler: validateHandler{&baseHandler{}, rejectAll}, wantValidate: true},
		{
			name: "all",
			handler: fullHandler{
				updateHandler{&baseHandler{}},
				retrieveHandler{baseHandler: &baseHandler{}},
				validateHandler{&baseHandler{}, rejectAll},
			},
			wantUpdate: true, wantRetrieve: true, wantValidate: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDescriptor(t, spec{}, tt.handler)
			if got := d.CanUpdate(); got != tt.wantUpdate {
				t.Errorf("CanUpdate() = %v, want %v", got, tt.wantUpdate)
			}
			if got := d.CanRetrieve(); got != tt.wantRetrieve {
				t.Errorf("CanRetrieve() = %v, want %v", got, tt.wantRetrieve)
			}
			err := d.Validate("linux/interface/eth0", str("x"))
			if got := err != nil; got != tt.wantValidate {
				t.Errorf("Validate() = %v; want the handler's Validate used: %v", err, tt.wantValidate)
			}

			ctx := context.Background()
			_, err = d.Update(ctx, "linux/interface/eth0", str("a"), str("b"), &ifaceMeta{})
			if got := err == nil; got != tt.wantUpdate {
				t.Errorf("Update() = %v; want success %v", err, tt.wantUpdate)
			}
			_, err = d.Retrieve(ctx, nil)
			if got := err == nil; got != tt.wantRetrieve {
				t.Errorf("Retrieve() = %v; want success %v", err, tt.wantRetrieve)
			}
		})
	}
}

func TestMissingCapabilityErrors(t *testing.T) {
	t.Parallel()
	h := &baseHandler{}
	d := newDescriptor(t, spec{Name: "iface"}, h)
	ctx := context.Background()

	_, err := d.Update(ctx, "linux/interface/eth0", str("a"), str("b"), nil)
	if want := "linux/interface/eth0: descriptor iface has no Update"; err == nil || err.Error() != want {
		t.Errorf("Update without Updater = %v, want %q", err, want)
	}
	items, err := d.Retrieve(ctx, []kv.Item[string, proto.Message, any]{{Key: "linux/interface/eth0", Value: str("a")}})
	if want := "descriptor iface has no Retrieve"; err == nil || err.Error() != want {
		t.Errorf("Retrieve without Retriever = %v, %v; want error %q", items, err, want)
	}
	if len(h.Calls()) != 0 {
		t.Errorf("handler called: %+v", h.Calls())
	}
}

func TestIsKey(t *testing.T) {
	t.Parallel()
	routeSpec := spec{Name: "route", KeyTemplate: routeTemplate}
	prefixSpec := spec{Name: "global", KeyPrefix: "config/global/"}
	customSpec := spec{
		Name:        "custom",
		KeyTemplate: ifaceTemplate,
		ParseKey:    func(key string) (string, bool) { return key, !strings.HasSuffix(key, "-tmp") },
	}
	acceptAll := spec{Name: "all", KeyPrefix: "vpp/", ParseKey: func(k string) (string, bool) { return k, true }}
	tests := []struct {
		name string
		spec spec
		key  string
		want bool
	}{
		{name: "template: IPv4 route", spec: routeSpec, key: "vpp/route/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1", want: true},
		{name: "template: IPv6 route", spec: routeSpec, key: "vpp/route/vrf/2/dst/fd00::/8/gw/fd00::1", want: true},
		{name: "template: prefix only", spec: routeSpec, key: "vpp/route/vrf/", want: false},
		{name: "template: trailing garbage", spec: routeSpec, key: "vpp/route/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1/x", want: false},
		{name: "template: other model", spec: routeSpec, key: "vpp/arp/loop0/10.0.0.1", want: false},
		{name: "prefix: key under it", spec: prefixSpec, key: "config/global/x", want: true},
		{name: "prefix: deeper key", spec: prefixSpec, key: "config/global/x/y", want: true},
		{name: "prefix: the prefix itself", spec: prefixSpec, key: "config/global/", want: false},
		{name: "prefix: other", spec: prefixSpec, key: "config/local/x", want: false},
		{name: "prefix: empty key", spec: prefixSpec, key: "", want: false},
		{name: "custom: accepted", spec: customSpec, key: "linux/interface/eth0", want: true},
		{name: "custom: refined away", spec: customSpec, key: "linux/interface/eth0-tmp", want: false},
		{name: "custom replaces the template match", spec: customSpec, key: "linux/interface/a/b", want: true},
		{name: "custom: still needs the prefix", spec: acceptAll, key: "linux/interface/eth0", want: false},
		{name: "custom: under the prefix", spec: acceptAll, key: "vpp/x", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDescriptor(t, tt.spec, &baseHandler{})
			if got := d.IsKey(tt.key); got != tt.want {
				t.Errorf("IsKey(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func TestLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec spec
		key  string
		want string
	}{
		{name: "default: key minus template prefix", spec: spec{KeyTemplate: ifaceTemplate}, key: "linux/interface/eth0", want: "eth0"},
		{name: "default: escaped name stays escaped", spec: spec{KeyTemplate: ifaceTemplate}, key: "linux/interface/a%2Fb", want: "a%2Fb"},
		{
			name: "default: every variable part",
			spec: spec{KeyTemplate: routeTemplate},
			key:  "vpp/route/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1",
			want: "0/dst/10.0.0.0/8/gw/10.0.0.1",
		},
		{name: "default: key minus KeyPrefix", spec: spec{KeyPrefix: "config/"}, key: "config/a/b", want: "a/b"},
		{
			name: "custom",
			spec: spec{
				KeyTemplate: "vpp/bd/{name}/interface/{interfaces.name}",
				Label: func(key string) string {
					values, _ := kv.MustParseKeyTemplate("vpp/bd/{name}/interface/{interfaces.name}").Split(key)
					return strings.Join(values, "@")
				},
			},
			key:  "vpp/bd/bd1/interface/memif0",
			want: "bd1@memif0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDescriptor(t, tt.spec, &baseHandler{})
			if got := d.Label(tt.key); got != tt.want {
				t.Errorf("Label(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	requireSet := func(_ string, v value) error {
		if v.GetValue() == "" {
			return kv.Invalid("value", "must be set")
		}
		return nil
	}
	errBackend := errors.New("backend check failed")
	tests := []struct {
		name string
		spec spec
		// handlerValidate, when set, makes the handler a Validator.
		handlerValidate func(string, value) error
		value           proto.Message
		want            *kv.InvalidValueError // nil: valid
	}{
		{
			name:  "no checks",
			value: str(""),
		},
		{
			name:  "spec accepts",
			spec:  spec{Validate: requireSet},
			value: str("x"),
		},
		{
			name:  "spec rejects",
			spec:  spec{Validate: requireSet},
			value: str(""),
			want:  &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "value", Reason: "must be set"}}},
		},
		{
			name:            "handler rejects",
			handlerValidate: func(string, value) error { return kv.Invalid("value", "too long") },
			value:           str("x"),
			want:            &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "value", Reason: "too long"}}},
		},
		{
			name: "fields of both merged, spec first",
			spec: spec{Validate: func(string, value) error {
				return kv.Invalid("name", "must be set").Add("mtu", "must be at most %d", 9000)
			}},
			handlerValidate: func(string, value) error { return kv.Invalid("ip_addresses[0]", "not unique") },
			value:           str("x"),
			want: &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{
				{Field: "name", Reason: "must be set"},
				{Field: "mtu", Reason: "must be at most 9000"},
				{Field: "ip_addresses[0]", Reason: "not unique"},
			}},
		},
		{
			name: "key set even when the check set another",
			spec: spec{Validate: func(string, value) error {
				e := kv.Invalid("a", "b")
				e.Key = "some/other/key"
				return e
			}},
			value: str("x"),
			want:  &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "a", Reason: "b"}}},
		},
		{
			name:  "wrapped InvalidValueError is unwrapped",
			spec:  spec{Validate: func(string, value) error { return fmt.Errorf("schema: %w", kv.Invalid("a", "b")) }},
			value: str("x"),
			want:  &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "a", Reason: "b"}}},
		},
		{
			name:  "plain error becomes a value error",
			spec:  spec{Validate: func(string, value) error { return errBackend }},
			value: str("x"),
			want:  &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "(value)", Reason: "backend check failed"}}, Err: errBackend},
		},
		{
			name:            "plain error from the handler",
			handlerValidate: func(string, value) error { return errBackend },
			value:           str("x"),
			want:            &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{{Field: "(value)", Reason: "backend check failed"}}, Err: errBackend},
		},
		{
			name:            "plain error kept next to field errors",
			spec:            spec{Validate: func(string, value) error { return kv.Invalid("name", "must be set") }},
			handlerValidate: func(string, value) error { return errBackend },
			value:           str("x"),
			want: &kv.InvalidValueError{Key: key, Fields: []kv.FieldError{
				{Field: "name", Reason: "must be set"},
				{Field: "(value)", Reason: "backend check failed"},
			}, Err: errBackend},
		},
		{
			name: "typed nil *InvalidValueError means valid",
			spec: spec{Validate: func(string, value) error {
				var errs *kv.InvalidValueError // forgot errs.OrNil()
				return errs
			}},
			handlerValidate: func(string, value) error { return (*kv.InvalidValueError)(nil) },
			value:           str("x"),
		},
		{
			name:  "empty *InvalidValueError means valid",
			spec:  spec{Validate: func(string, value) error { return &kv.InvalidValueError{} }},
			value: str("x"),
		},
		{
			name:  "OrNil of nothing collected",
			spec:  spec{Validate: func(string, value) error { return (*kv.InvalidValueError)(nil).OrNil() }},
			value: str("x"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var h kv.Handler[string, value, *ifaceMeta] = &baseHandler{}
			if tt.handlerValidate != nil {
				h = validateHandler{&baseHandler{}, tt.handlerValidate}
			}
			d := newDescriptor(t, tt.spec, h)
			err := d.Validate(key, tt.value)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %v", tt.want)
			}
			if !errors.Is(err, kv.ErrInvalidValue) {
				t.Errorf("errors.Is(%v, ErrInvalidValue) = false", err)
			}
			if errors.Is(err, kv.ErrWrongType) {
				t.Errorf("errors.Is(%v, ErrWrongType) = true", err)
			}
			var inv *kv.InvalidValueError
			if !errors.As(err, &inv) {
				t.Fatalf("Validate() returned %T, want *kv.InvalidValueError", err)
			}
			if diff := cmp.Diff(tt.want, inv, cmpopts.IgnoreFields(kv.InvalidValueError{}, "Err")); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
			if tt.want.Err != nil && !errors.Is(err, tt.want.Err) {
				t.Errorf("errors.Is(%v, %v) = false: the cause must be wrapped", err, tt.want.Err)
			}
			if diff := cmp.Diff(tt.want.FieldNames(), inv.FieldNames()); diff != "" {
				t.Errorf("FieldNames mismatch (-want +got):\n%s", diff)
			}
			if kv.IsRetriable(err) {
				t.Errorf("IsRetriable(%v) = true", err)
			}
		})
	}
}

func TestValidateMessage(t *testing.T) {
	t.Parallel()
	d := newDescriptor(t, spec{Validate: func(string, value) error {
		return kv.Invalid("name", "must be set").Add("mtu", "must be at most 9000")
	}}, validateHandler{&baseHandler{}, func(string, value) error { return kv.Invalid("type", "unknown") }})
	err := d.Validate("linux/interface/eth0", str(""))
	want := "invalid value for linux/interface/eth0: name: must be set; mtu: must be at most 9000; type: unknown"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}

func TestValidateWrongType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   proto.Message
		wantErr string
	}{
		{
			name:    "other wrapper",
			value:   wrapperspb.Int32(7),
			wantErr: "invalid value for linux/interface/eth0: (message type): got google.protobuf.Int32Value, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name:    "empty",
			value:   &emptypb.Empty{},
			wantErr: "invalid value for linux/interface/eth0: (message type): got google.protobuf.Empty, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name:    "struct",
			value:   &structpb.Struct{},
			wantErr: "invalid value for linux/interface/eth0: (message type): got google.protobuf.Struct, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name:    "nil",
			value:   nil,
			wantErr: "invalid value for linux/interface/eth0: (message type): got nil, descriptor iface takes google.protobuf.StringValue",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			called := false
			d := newDescriptor(t, spec{
				Name:     "iface",
				Validate: func(string, value) error { called = true; return nil },
			}, validateHandler{&baseHandler{}, func(string, value) error { called = true; return nil }})
			err := d.Validate("linux/interface/eth0", tt.value)
			if !errors.Is(err, kv.ErrWrongType) {
				t.Fatalf("Validate() = %v, want ErrWrongType", err)
			}
			// A value of the wrong type is an invalid value: INVALID, never
			// sent to the southbound.
			if !errors.Is(err, kv.ErrInvalidValue) {
				t.Errorf("errors.Is(%v, ErrInvalidValue) = false", err)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if called {
				t.Error("a check ran on a value of the wrong type")
			}
			if kv.IsRetriable(err) {
				t.Errorf("IsRetriable(%v) = true", err)
			}
		})
	}
}

func TestOperationsWithWrongTypes(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	ctx := context.Background()
	tests := []struct {
		name    string
		op      func(d kv.Descriptor) error
		wantErr string
	}{
		{
			name: "create",
			op: func(d kv.Descriptor) error {
				m, err := d.Create(ctx, key, wrapperspb.Int64(1))
				if m != nil {
					return fmt.Errorf("Create returned metadata %v", m)
				}
				return err
			},
			wantErr: key + ": value of a wrong message type: got google.protobuf.Int64Value, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name: "create nil",
			op: func(d kv.Descriptor) error {
				_, err := d.Create(ctx, key, nil)
				return err
			},
			wantErr: key + ": value of a wrong message type: got nil, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name: "update: new value wrong",
			op: func(d kv.Descriptor) error {
				_, err := d.Update(ctx, key, str("a"), &emptypb.Empty{}, &ifaceMeta{})
				return err
			},
			wantErr: key + ": value of a wrong message type: got google.protobuf.Empty, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name: "update: old value wrong",
			op: func(d kv.Descriptor) error {
				_, err := d.Update(ctx, key, &emptypb.Empty{}, str("b"), &ifaceMeta{})
				return err
			},
			wantErr: key + ": value of a wrong message type: got google.protobuf.Empty, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name: "update: old value nil",
			op: func(d kv.Descriptor) error {
				_, err := d.Update(ctx, key, nil, str("b"), nil)
				return err
			},
			wantErr: key + ": value of a wrong message type: got nil, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name: "delete",
			op: func(d kv.Descriptor) error {
				return d.Delete(ctx, key, structpb.NewNullValue(), &ifaceMeta{})
			},
			wantErr: key + ": value of a wrong message type: got google.protobuf.Value, descriptor iface takes google.protobuf.StringValue",
		},
		{
			name: "delete nil",
			op: func(d kv.Descriptor) error {
				return d.Delete(ctx, key, nil, nil)
			},
			wantErr: key + ": value of a wrong message type: got nil, descriptor iface takes google.protobuf.StringValue",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &baseHandler{}
			d := newDescriptor(t, spec{Name: "iface"}, updateHandler{h})
			err := tt.op(d)
			if !errors.Is(err, kv.ErrWrongType) {
				t.Fatalf("got %v, want ErrWrongType", err)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if calls := h.Calls(); len(calls) != 0 {
				t.Errorf("handler called with a wrong type: %+v", calls)
			}
		})
	}
}

func TestQueriesWithWrongTypes(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	called := false
	d := newDescriptor(t, spec{
		Dependencies:  func(string, value) []kv.Dependency { called = true; return []kv.Dependency{{Key: "x"}} },
		Derived:       func(string, value) []kv.Derived { called = true; return []kv.Derived{{Key: "x"}} },
		Equivalent:    func(string, value, value) bool { called = true; return true },
		NeedsRecreate: func(string, value, value) bool { called = true; return false },
	}, &baseHandler{})
	wrong := wrapperspb.Bool(true)
	if got := d.Dependencies(key, wrong); got != nil {
		t.Errorf("Dependencies of a wrong type = %v, want nil", got)
	}
	if got := d.Dependencies(key, nil); got != nil {
		t.Errorf("Dependencies of nil = %v, want nil", got)
	}
	if got := d.Derived(key, wrong); got != nil {
		t.Errorf("Derived of a wrong type = %v, want nil", got)
	}
	if d.Equivalent(key, str("a"), wrong) || d.Equivalent(key, wrong, str("a")) || d.Equivalent(key, nil, nil) {
		t.Error("Equivalent with a wrong type = true")
	}
	if !d.NeedsRecreate(key, str("a"), wrong) || !d.NeedsRecreate(key, wrong, str("a")) {
		t.Error("NeedsRecreate with a wrong type = false, want true")
	}
	if called {
		t.Error("a spec function was called with a wrong type")
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	errBusy := errors.New("device busy")
	tests := []struct {
		name      string
		deleteErr error
		wantErr   error
	}{
		{name: "success", deleteErr: nil, wantErr: nil},
		{name: "not found", deleteErr: kv.ErrNotFound, wantErr: nil},
		{name: "wrapped not found", deleteErr: fmt.Errorf("ip link del eth0: %w", kv.ErrNotFound), wantErr: nil},
		{name: "joined not found", deleteErr: errors.Join(errors.New("x"), kv.ErrNotFound), wantErr: nil},
		{name: "terminal not found", deleteErr: kv.NonRetriable(kv.ErrNotFound), wantErr: nil},
		{name: "other error", deleteErr: errBusy, wantErr: errBusy},
		{name: "wrapped other error", deleteErr: fmt.Errorf("ip link del eth0: %w", errBusy), wantErr: errBusy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &baseHandler{deleteErr: tt.deleteErr}
			d := newDescriptor(t, spec{}, h)
			meta := &ifaceMeta{Index: 3}
			err := d.Delete(context.Background(), "linux/interface/eth0", str("eth0"), meta)
			if tt.wantErr == nil && err != nil {
				t.Errorf("Delete() = %v, want nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Delete() = %v, want %v", err, tt.wantErr)
			}
			want := []call{{Op: "delete", Key: "linux/interface/eth0", Value: "eth0", Meta: meta}}
			if diff := cmp.Diff(want, h.Calls()); diff != "" {
				t.Errorf("calls mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateError(t *testing.T) {
	t.Parallel()
	errExists := errors.New("file exists")
	h := &baseHandler{createErr: kv.NonRetriable(errExists)}
	d := newDescriptor(t, spec{}, h)
	m, err := d.Create(context.Background(), "linux/interface/eth0", str("eth0"))
	if !errors.Is(err, errExists) {
		t.Fatalf("Create() = %v, want %v", err, errExists)
	}
	if m != nil {
		t.Errorf("Create() returned metadata %v along with an error", m)
	}
	if d.IsRetriable(err) {
		t.Errorf("IsRetriable(%v) = true", err)
	}
}

func TestUpdateError(t *testing.T) {
	t.Parallel()
	errMTU := errors.New("invalid MTU for this device")
	h := &baseHandler{updateErr: errMTU}
	d := newDescriptor(t, spec{}, updateHandler{h})
	m, err := d.Update(context.Background(), "linux/interface/eth0", str("a"), str("b"), &ifaceMeta{Index: 1})
	if !errors.Is(err, errMTU) {
		t.Fatalf("Update() = %v, want %v", err, errMTU)
	}
	if m != nil {
		t.Errorf("Update() returned metadata %v along with an error", m)
	}
}

// TestMetadataTypedEndToEnd follows one value through Create, Update and
// Delete: the handler sees its own metadata type at every step.
func TestMetadataTypedEndToEnd(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	h := &baseHandler{}
	d := newDescriptor(t, spec{WithMetadata: true}, updateHandler{h})
	var erased kv.Descriptor = d
	ctx := context.Background()
	label := erased.Label(key)

	created, err := erased.Create(ctx, key, str("v1"))
	if err != nil {
		t.Fatal(err)
	}
	createdMeta, ok := created.(*ifaceMeta)
	if !ok {
		t.Fatalf("Create returned %T, want *ifaceMeta", created)
	}
	if diff := cmp.Diff(&ifaceMeta{Index: 1, Tags: []string{"v1"}}, createdMeta); diff != "" {
		t.Errorf("created metadata mismatch (-want +got):\n%s", diff)
	}
	kvaccess.SetMetadata(erased, label, created)
	if got, ok := d.Metadata().Get(label); !ok || got != createdMeta {
		t.Errorf("Metadata().Get(%q) = %v, %v; want the created metadata", label, got, ok)
	}

	updated, err := erased.Update(ctx, key, str("v1"), str("v2"), created)
	if err != nil {
		t.Fatal(err)
	}
	updatedMeta, ok := updated.(*ifaceMeta)
	if !ok {
		t.Fatalf("Update returned %T, want *ifaceMeta", updated)
	}
	if diff := cmp.Diff(&ifaceMeta{Index: 1, Tags: []string{"v2"}}, updatedMeta); diff != "" {
		t.Errorf("updated metadata mismatch (-want +got):\n%s", diff)
	}
	kvaccess.SetMetadata(erased, label, updated)

	if err := erased.Delete(ctx, key, str("v2"), updated); err != nil {
		t.Fatal(err)
	}
	kvaccess.DeleteMetadata(erased, label)
	if _, ok := d.Metadata().Get(label); ok {
		t.Errorf("Metadata().Get(%q) found an entry after DeleteMetadata", label)
	}

	want := []call{
		{Op: "create", Key: key, Value: "v1"},
		{Op: "update", Key: key, Value: "v2", OldValue: "v1", Meta: createdMeta},
		{Op: "delete", Key: key, Value: "v2", Meta: updatedMeta},
	}
	if diff := cmp.Diff(want, h.Calls()); diff != "" {
		t.Errorf("calls mismatch (-want +got):\n%s", diff)
	}
	// The handler got the very pointers it returned, not copies.
	calls := h.Calls()
	if calls[1].Meta != createdMeta || calls[2].Meta != updatedMeta {
		t.Error("handler got other metadata than it returned")
	}
}

func TestMetadataOfAnotherType(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	h := &baseHandler{}
	d := newDescriptor(t, spec{}, updateHandler{h})
	ctx := context.Background()
	if _, err := d.Update(ctx, key, str("a"), str("b"), "not metadata"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, key, str("b"), 42); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(ctx, key, str("b"), str("c"), nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.Calls() {
		if c.Meta != nil {
			t.Errorf("%s got metadata %v, want the zero value", c.Op, c.Meta)
		}
	}
}

func TestRetrieve(t *testing.T) {
	t.Parallel()
	meta := &ifaceMeta{Index: 9}
	var got []kv.Item[string, value, *ifaceMeta]
	h := retrieveHandler{
		baseHandler: &baseHandler{},
		found: []kv.Item[string, value, *ifaceMeta]{
			{Key: "linux/interface/eth0", Value: str("eth0"), Metadata: meta, Origin: kv.OriginNB},
			{Key: "linux/interface/lo", Value: str("lo"), Origin: kv.OriginSB},
		},
		got: &got,
	}
	d := newDescriptor(t, spec{}, h)
	correlate := []kv.Item[string, proto.Message, any]{
		{Key: "linux/interface/eth0", Value: str("eth0"), Metadata: meta, Origin: kv.OriginNB},
		{Key: "linux/interface/bad", Value: wrapperspb.Int32(1), Origin: kv.OriginNB}, // wrong type: dropped
		{Key: "linux/interface/eth1", Value: str("eth1"), Metadata: "not metadata"},
	}
	items, err := d.Retrieve(context.Background(), correlate)
	if err != nil {
		t.Fatal(err)
	}

	wantCorrelate := []kv.Item[string, value, *ifaceMeta]{
		{Key: "linux/interface/eth0", Value: str("eth0"), Metadata: meta, Origin: kv.OriginNB},
		{Key: "linux/interface/eth1", Value: str("eth1")},
	}
	if diff := cmp.Diff(wantCorrelate, got, protocmp.Transform()); diff != "" {
		t.Errorf("correlate given to the handler mismatch (-want +got):\n%s", diff)
	}
	wantItems := []kv.Item[string, proto.Message, any]{
		{Key: "linux/interface/eth0", Value: str("eth0"), Metadata: meta, Origin: kv.OriginNB},
		{Key: "linux/interface/lo", Value: str("lo"), Metadata: (*ifaceMeta)(nil), Origin: kv.OriginSB},
	}
	if diff := cmp.Diff(wantItems, items, protocmp.Transform()); diff != "" {
		t.Errorf("retrieved items mismatch (-want +got):\n%s", diff)
	}
	if items[0].Metadata.(*ifaceMeta) != meta {
		t.Error("retrieved metadata is not the handler's pointer")
	}

	errSB := errors.New("netlink: dump interrupted")
	failing := newDescriptor(t, spec{}, retrieveHandler{baseHandler: &baseHandler{}, err: errSB})
	if items, err := failing.Retrieve(context.Background(), nil); !errors.Is(err, errSB) || items != nil {
		t.Errorf("Retrieve() = %v, %v; want nil, %v", items, err, errSB)
	}
}

func TestOriginString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		origin kv.Origin
		want   string
	}{
		{name: "unknown", origin: kv.OriginUnknown, want: "UNKNOWN"},
		{name: "nb", origin: kv.OriginNB, want: "FROM_NB"},
		{name: "sb", origin: kv.OriginSB, want: "FROM_SB"},
		{name: "out of range", origin: kv.Origin(17), want: "UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.origin.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEquivalent(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	caseInsensitive := spec{Equivalent: func(k string, a, b value) bool {
		if k != key {
			panic("Equivalent got another key: " + k)
		}
		return strings.EqualFold(a.GetValue(), b.GetValue())
	}}
	tests := []struct {
		name string
		spec spec
		a, b proto.Message
		want bool
	}{
		{name: "default: equal", a: str("eth0"), b: str("eth0"), want: true},
		{name: "default: different", a: str("eth0"), b: str("ETH0"), want: false},
		{name: "default: empty vs unset", a: str(""), b: &wrapperspb.StringValue{}, want: true},
		{name: "custom: equal", spec: caseInsensitive, a: str("eth0"), b: str("ETH0"), want: true},
		{name: "custom: different", spec: caseInsensitive, a: str("eth0"), b: str("eth1"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDescriptor(t, tt.spec, &baseHandler{})
			if got := d.Equivalent(key, tt.a, tt.b); got != tt.want {
				t.Errorf("Equivalent(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestNeedsRecreate(t *testing.T) {
	t.Parallel()
	const key = "linux/interface/eth0"
	prefixChange := spec{NeedsRecreate: func(_ string, o, n value) bool {
		return !strings.HasPrefix(n.GetValue(), o.GetValue())
	}}
	tests := []struct {
		name     string
		spec     spec
		old, new proto.Message
		want     bool
	}{
		{name: "default: never", old: str("a"), new: str("b"), want: false},
		{name: "custom: update", spec: prefixChange, old: str("veth"), new: str("veth1"), want: false},
		{name: "custom: recreate", spec: prefixChange, old: str("veth"), new: str("tap1"), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDescriptor(t, tt.spec, &baseHandler{})
			if got := d.NeedsRecreate(key, tt.old, tt.new); got != tt.want {
				t.Errorf("NeedsRecreate(%v, %v) = %v, want %v", tt.old, tt.new, got, tt.want)
			}
		})
	}
}

func TestDependenciesAndDerived(t *testing.T) {
	t.Parallel()
	binding := kv.MustParseKeyTemplate("vpp/bd/{name}/interface/{interfaces.name}")
	d := newDescriptor(t, spec{
		Name:        "vpp-bd",
		KeyTemplate: "vpp/bd/{name}",
		Dependencies: func(key string, v value) []kv.Dependency {
			return []kv.Dependency{{Label: "vrf", Key: "vpp/vrf/" + v.GetValue()}}
		},
		Derived: func(key string, v value) []kv.Derived {
			name := strings.TrimPrefix(key, "vpp/bd/")
			return []kv.Derived{{Key: binding.Build(name, kv.EscapeSegment(v.GetValue())), Value: wrapperspb.String(v.GetValue())}}
		},
	}, &baseHandler{})

	deps := d.Dependencies("vpp/bd/bd1", str("memif0/1"))
	if diff := cmp.Diff([]kv.Dependency{{Label: "vrf", Key: "vpp/vrf/memif0/1"}}, deps); diff != "" {
		t.Errorf("Dependencies mismatch (-want +got):\n%s", diff)
	}
	derived := d.Derived("vpp/bd/bd1", str("memif0/1"))
	wantDerived := []kv.Derived{{Key: "vpp/bd/bd1/interface/memif0%2F1", Value: wrapperspb.String("memif0/1")}}
	if diff := cmp.Diff(wantDerived, derived, protocmp.Transform()); diff != "" {
		t.Errorf("Derived mismatch (-want +got):\n%s", diff)
	}
	if !binding.Match(derived[0].Key) {
		t.Errorf("derived key %q is not a binding key", derived[0].Key)
	}

	none := newDescriptor(t, spec{}, &baseHandler{})
	if got := none.Dependencies("linux/interface/eth0", str("x")); got != nil {
		t.Errorf("Dependencies without Spec.Dependencies = %v", got)
	}
	if got := none.Derived("linux/interface/eth0", str("x")); got != nil {
		t.Errorf("Derived without Spec.Derived = %v", got)
	}
}

func TestDescriptorIsRetriable(t *testing.T) {
	t.Parallel()
	errBusy := errors.New("EBUSY")
	errPerm := errors.New("EPERM")
	custom := newDescriptor(t, spec{IsRetriable: func(err error) bool { return errors.Is(err, errBusy) }}, &baseHandler{})
	def := newDescriptor(t, spec{}, &baseHandler{})
	tests := []struct {
		name string
		d    kv.Descriptor
		err  error
		want bool
	}{
		{name: "default: plain", d: def, err: errPerm, want: true},
		{name: "default: terminal", d: def, err: kv.NonRetriable(errBusy), want: false},
		{name: "default: nil", d: def, err: nil, want: false},
		{name: "custom: busy", d: custom, err: errBusy, want: true},
		{name: "custom: perm", d: custom, err: errPerm, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.d.IsRetriable(tt.err); got != tt.want {
				t.Errorf("IsRetriable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

type structRetriever struct{ structHandler }

func (structRetriever) Retrieve(context.Context, []kv.Item[string, *structpb.Struct, struct{}]) ([]kv.Item[string, *structpb.Struct, struct{}], error) {
	return []kv.Item[string, *structpb.Struct, struct{}]{{Key: "s/a", Value: &structpb.Struct{}}}, nil
}

// TestRetrieveMetadataOfNoData: a descriptor whose metadata holds no data
// (struct{}) reports nil metadata from Retrieve, as from Create, so that a
// resync finds what it created unchanged.
func TestRetrieveMetadataOfNoData(t *testing.T) {
	t.Parallel()
	d, err := kv.NewDescriptor(kv.Spec[string, *structpb.Struct, struct{}]{Name: "s", KeyPrefix: "s/"}, structRetriever{})
	if err != nil {
		t.Fatal(err)
	}
	created, err := d.Create(context.Background(), "s/a", &structpb.Struct{})
	if err != nil || created != nil {
		t.Fatalf("Create = %v, %v; want nil metadata", created, err)
	}
	got, err := d.Retrieve(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "s/a" || got[0].Metadata != nil {
		t.Errorf("Retrieve = %+v, want s/a with nil metadata", got)
	}
}
