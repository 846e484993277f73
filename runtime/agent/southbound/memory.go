package southbound

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	// The Linux models, whose schemas the in-memory southbound serves.
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/interfaces/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/l3/v1"
	_ "github.com/kvdescriptor/kvdescriptor/generated/linux/nftables/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// memory is an in-memory southbound for the Linux models, for a machine
// where the agent cannot be root: every value it is given is "applied" by
// keeping it, and Retrieve reports what it keeps. It lets the demo and a
// person exploring the API run the whole agent without a kernel. It
// serves every Linux model the program links (kv.DynamicDescriptors), the
// same set the Linux plugin registers.
type memory struct {
	mu     sync.Mutex
	values map[string]proto.Message
}

var _ kv.DynamicHandler = (*memory)(nil)

func newMemory() *memory { return &memory{values: map[string]proto.Message{}} }

// descriptors returns the descriptors of the Linux models over m.
func (m *memory) descriptors() ([]kv.Descriptor, error) {
	return kv.DynamicDescriptors(m, "linux.")
}

func (m *memory) Create(_ context.Context, key string, v proto.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values[key] = v
	return nil
}

func (m *memory) Update(ctx context.Context, key string, _, v proto.Message) error {
	return m.Create(ctx, key, v)
}

func (m *memory) Delete(_ context.Context, key string, _ proto.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.values, key)
	return nil
}

// Retrieve reports the correlated values that m keeps, as they are kept.
func (m *memory) Retrieve(_ context.Context, _ string, correlate []kv.DynamicItem) ([]kv.DynamicItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []kv.DynamicItem
	for _, c := range correlate {
		if v, ok := m.values[c.Key]; ok {
			out = append(out, kv.DynamicItem{Key: c.Key, Value: v, Origin: kv.OriginNB})
		}
	}
	return out, nil
}
