package modelstest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	vppinterfaces "github.com/kvdescriptor/kvdescriptor/generated/vpp/interfaces/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// TestRedactInterface: the generated Redacted of a model with a sensitive
// field nested in it hides the secret in a copy, keeps the value itself
// and compares as the model does (a new key is a change); Unredact gives
// a value sent back redacted its current secret again.
func TestRedactInterface(t *testing.T) {
	t.Parallel()
	const secret = "c2VjcmV0LWtleS1vZi0zMi1ieXRlcy1leGFjdGx5IQ=="
	v := &vppinterfaces.Interface{Name: "wg0", Type: vppinterfaces.Interface_TYPE_WIREGUARD,
		Wireguard: &vppinterfaces.Interface_Wireguard{PrivateKey: secret, Port: 51820, SrcAddress: "10.0.0.1"}}
	shown := kv.Redact(v)
	b, _ := protojson.Marshal(shown)
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), kv.RedactedText) {
		t.Errorf("redacted: %s", b)
	}
	if v.GetWireguard().GetPrivateKey() != secret {
		t.Errorf("Redact modified the value")
	}
	if loop := (&vppinterfaces.Interface{Name: "l"}); kv.Redact(loop) != proto.Message(loop) {
		t.Errorf("a value without a secret set was copied")
	}
	if !proto.Equal(kv.Redact(v), kv.Redact(proto.Clone(v))) {
		t.Errorf("two redactions of one value differ")
	}

	d := vppinterfaces.InterfaceSpec[struct{}]()
	other := proto.Clone(v).(*vppinterfaces.Interface)
	other.Wireguard.PrivateKey = "b3RoZXIta2V5LW9mLTMyLWJ5dGVzLWV4YWN0bHkhIQ=="
	if d.Equivalent("", v, other) || !d.NeedsRecreate("", v, other) {
		t.Errorf("a new private key is no change (equivalent %v, re-create %v)", d.Equivalent("", v, other), d.NeedsRecreate("", v, other))
	}

	back := kv.Unredact(shown, v)
	if diff := cmp.Diff(v, back, protocmp.Transform()); diff != "" {
		t.Errorf("Unredact (-want +got):\n%s", diff)
	}
	if shown.(*vppinterfaces.Interface).GetWireguard().GetPrivateKey() != kv.RedactedText {
		t.Errorf("Unredact modified its input")
	}
	if got := kv.Unredact(shown, &vppinterfaces.Interface{Name: "wg0"}); got.(*vppinterfaces.Interface).GetWireguard().GetPrivateKey() != kv.RedactedText {
		t.Errorf("Unredact without a current secret: %v", got)
	}
	if got := kv.Unredact(other, v); !proto.Equal(got, other) {
		t.Errorf("Unredact changed a value that holds its own key")
	}
}
