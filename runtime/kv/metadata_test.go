package kv_test

import (
	"context"
	"fmt"
	"github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// indexedDescriptor keeps *ifaceMeta with two secondary indexes: "tag"
// (every tag) and "index" (the SB index in decimal).
func indexedDescriptor(t *testing.T) *kv.TypedDescriptor[string, value, *ifaceMeta] {
	t.Helper()
	return newDescriptor(t, spec{
		WithMetadata: true,
		MetadataIndexes: map[string]func(*ifaceMeta) []string{
			"tag": func(m *ifaceMeta) []string { return m.Tags },
			"index": func(m *ifaceMeta) []string {
				if m == nil {
					return nil
				}
				return []string{strconv.FormatUint(uint64(m.Index), 10)}
			},
		},
	}, &baseHandler{})
}

// metadataView is everything the read-only view tells, for cmp.Diff.
type metadataView struct {
	Labels  []string
	Len     int
	Entries map[string]*ifaceMeta
	Lookups map[string][]string // "index=value" -> labels
}

func viewOf(m kv.MetadataMap[*ifaceMeta], lookups ...[2]string) metadataView {
	v := metadataView{Labels: m.Labels(), Len: m.Len(), Entries: map[string]*ifaceMeta{}, Lookups: map[string][]string{}}
	for _, l := range v.Labels {
		v.Entries[l], _ = m.Get(l)
	}
	for _, q := range lookups {
		v.Lookups[q[0]+"="+q[1]] = m.Lookup(q[0], q[1])
	}
	return v
}

func TestMetadataMap(t *testing.T) {
	t.Parallel()
	eth0 := &ifaceMeta{Index: 1, Tags: []string{"uplink", "vlan"}}
	eth1 := &ifaceMeta{Index: 2, Tags: []string{"vlan"}}
	lo := &ifaceMeta{Index: 3}
	eth0Replaced := &ifaceMeta{Index: 7, Tags: []string{"mgmt"}}

	lookups := [][2]string{
		{"tag", "uplink"}, {"tag", "vlan"}, {"tag", "mgmt"}, {"tag", "absent"},
		{"index", "1"}, {"index", "2"}, {"index", "3"}, {"index", "7"},
		{"no-such-index", "1"},
	}
	type step struct {
		name string
		do   func(d kv.Descriptor)
		want metadataView
	}
	steps := []step{
		{
			name: "empty",
			do:   func(kv.Descriptor) {},
			want: metadataView{
				Labels:  []string{},
				Entries: map[string]*ifaceMeta{},
				Lookups: map[string][]string{
					"tag=uplink": {}, "tag=vlan": {}, "tag=mgmt": {}, "tag=absent": {},
					"index=1": {}, "index=2": {}, "index=3": {}, "index=7": {},
					"no-such-index=1": {},
				},
			},
		},
		{
			name: "set three, labels sorted",
			do: func(d kv.Descriptor) {
				kvaccess.SetMetadata(d, "lo", lo)
				kvaccess.SetMetadata(d, "eth1", eth1)
				kvaccess.SetMetadata(d, "eth0", eth0)
			},
			want: metadataView{
				Labels:  []string{"eth0", "eth1", "lo"},
				Len:     3,
				Entries: map[string]*ifaceMeta{"eth0": eth0, "eth1": eth1, "lo": lo},
				Lookups: map[string][]string{
					"tag=uplink": {"eth0"}, "tag=vlan": {"eth0", "eth1"}, "tag=mgmt": {}, "tag=absent": {},
					"index=1": {"eth0"}, "index=2": {"eth1"}, "index=3": {"lo"}, "index=7": {},
					"no-such-index=1": {},
				},
			},
		},
		{
			name: "replacing an entry re-indexes it",
			do:   func(d kv.Descriptor) { kvaccess.SetMetadata(d, "eth0", eth0Replaced) },
			want: metadataView{
				Labels:  []string{"eth0", "eth1", "lo"},
				Len:     3,
				Entries: map[string]*ifaceMeta{"eth0": eth0Replaced, "eth1": eth1, "lo": lo},
				Lookups: map[string][]string{
					"tag=uplink": {}, "tag=vlan": {"eth1"}, "tag=mgmt": {"eth0"}, "tag=absent": {},
					"index=1": {}, "index=2": {"eth1"}, "index=3": {"lo"}, "index=7": {"eth0"},
					"no-such-index=1": {},
				},
			},
		},
		{
			name: "two labels share an index value",
			do: func(d kv.Descriptor) {
				kvaccess.SetMetadata(d, "lo", &ifaceMeta{Index: 2, Tags: []string{"vlan", "vlan"}})
			},
			want: metadataView{
				Labels: []string{"eth0", "eth1", "lo"},
				Len:    3,
				Entries: map[string]*ifaceMeta{
					"eth0": eth0Replaced, "eth1": eth1, "lo": {Index: 2, Tags: []string{"vlan", "vlan"}},
				},
				Lookups: map[string][]string{
					"tag=uplink": {}, "tag=vlan": {"eth1", "lo"}, "tag=mgmt": {"eth0"}, "tag=absent": {},
					"index=1": {}, "index=2": {"eth1", "lo"}, "index=3": {}, "index=7": {"eth0"},
					"no-such-index=1": {},
				},
			},
		},
		{
			name: "delete",
			do: func(d kv.Descriptor) {
				kvaccess.DeleteMetadata(d, "eth1")
				kvaccess.DeleteMetadata(d, "never-set")
			},
			want: metadataView{
				Labels:  []string{"eth0", "lo"},
				Len:     2,
				Entries: map[string]*ifaceMeta{"eth0": eth0Replaced, "lo": {Index: 2, Tags: []string{"vlan", "vlan"}}},
				Lookups: map[string][]string{
					"tag=uplink": {}, "tag=vlan": {"lo"}, "tag=mgmt": {"eth0"}, "tag=absent": {},
					"index=1": {}, "index=2": {"lo"}, "index=3": {}, "index=7": {"eth0"},
					"no-such-index=1": {},
				},
			},
		},
		{
			name: "metadata of another type removes the entry",
			do:   func(d kv.Descriptor) { kvaccess.SetMetadata(d, "lo", "not metadata") },
			want: metadataView{
				Labels:  []string{"eth0"},
				Len:     1,
				Entries: map[string]*ifaceMeta{"eth0": eth0Replaced},
				Lookups: map[string][]string{
					"tag=uplink": {}, "tag=vlan": {}, "tag=mgmt": {"eth0"}, "tag=absent": {},
					"index=1": {}, "index=2": {}, "index=3": {}, "index=7": {"eth0"},
					"no-such-index=1": {},
				},
			},
		},
		{
			name: "untyped nil removes the entry",
			do:   func(d kv.Descriptor) { kvaccess.SetMetadata(d, "eth0", nil) },
			want: metadataView{
				Labels:  []string{},
				Entries: map[string]*ifaceMeta{},
				Lookups: map[string][]string{
					"tag=uplink": {}, "tag=vlan": {}, "tag=mgmt": {}, "tag=absent": {},
					"index=1": {}, "index=2": {}, "index=3": {}, "index=7": {},
					"no-such-index=1": {},
				},
			},
		},
	}

	d := indexedDescriptor(t)
	for _, s := range steps {
		s.do(d)
		if diff := cmp.Diff(s.want, viewOf(d.Metadata(), lookups...)); diff != "" {
			t.Errorf("after %q: metadata mismatch (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestMetadataGetMissing(t *testing.T) {
	t.Parallel()
	d := indexedDescriptor(t)
	if m, ok := d.Metadata().Get("eth0"); ok || m != nil {
		t.Errorf("Get of a missing label = %v, %v; want nil, false", m, ok)
	}
}

func TestMetadataLabelsReturnsACopy(t *testing.T) {
	t.Parallel()
	d := indexedDescriptor(t)
	kvaccess.SetMetadata(d, "a", &ifaceMeta{Tags: []string{"t"}})
	kvaccess.SetMetadata(d, "b", &ifaceMeta{Tags: []string{"t"}})
	labels := d.Metadata().Labels()
	labels[0] = "mutated"
	found := d.Metadata().Lookup("tag", "t")
	found[0] = "mutated"
	if diff := cmp.Diff([]string{"a", "b"}, d.Metadata().Labels()); diff != "" {
		t.Errorf("Labels changed after mutating a returned slice (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, d.Metadata().Lookup("tag", "t")); diff != "" {
		t.Errorf("Lookup changed after mutating a returned slice (-want +got):\n%s", diff)
	}
}

func TestMetadataWithoutWithMetadata(t *testing.T) {
	t.Parallel()
	d := newDescriptor(t, spec{
		MetadataIndexes: map[string]func(*ifaceMeta) []string{"tag": func(m *ifaceMeta) []string { return m.Tags }},
	}, &baseHandler{})
	kvaccess.SetMetadata(d, "eth0", &ifaceMeta{Index: 1, Tags: []string{"x"}})
	if n := d.Metadata().Len(); n != 0 {
		t.Errorf("Len() = %d after SetMetadata on a descriptor without metadata", n)
	}
	if got := d.Metadata().Lookup("tag", "x"); len(got) != 0 {
		t.Errorf("Lookup = %q, want nothing", got)
	}
	kvaccess.DeleteMetadata(d, "eth0") // must not panic
}

func TestMetadataWithoutIndexes(t *testing.T) {
	t.Parallel()
	d, err := kv.NewDescriptor(kv.Spec[string, value, int]{Name: "ints", KeyPrefix: "ints/", WithMetadata: true}, intHandler{})
	if err != nil {
		t.Fatal(err)
	}
	kvaccess.SetMetadata(d, "a", 1)
	kvaccess.SetMetadata(d, "b", 0) // the zero value is metadata too
	kvaccess.SetMetadata(d, "c", int64(3))
	if diff := cmp.Diff([]string{"a", "b"}, d.Metadata().Labels()); diff != "" {
		t.Errorf("Labels mismatch (-want +got):\n%s", diff)
	}
	if got, ok := d.Metadata().Get("b"); !ok || got != 0 {
		t.Errorf("Get(b) = %v, %v; want 0, true", got, ok)
	}
	if got := d.Metadata().Lookup("any", "1"); len(got) != 0 {
		t.Errorf("Lookup without indexes = %q", got)
	}
}

type intHandler struct{}

func (intHandler) Create(_ context.Context, _ string, v value) (int, error) {
	return len(v.GetValue()), nil
}
func (intHandler) Delete(context.Context, string, value, int) error { return nil }

// TestMetadataConcurrentUse checks that the map may be read by anybody while
// the scheduler writes it (run with -race).
func TestMetadataConcurrentUse(t *testing.T) {
	t.Parallel()
	d := indexedDescriptor(t)
	view := d.Metadata()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				label := fmt.Sprintf("w%d-%d", w, i%10)
				kvaccess.SetMetadata(d, label, &ifaceMeta{Index: uint32(i), Tags: []string{fmt.Sprint(w)}})
				if i%3 == 0 {
					kvaccess.DeleteMetadata(d, label)
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				for _, l := range view.Labels() {
					view.Get(l)
				}
				view.Lookup("tag", "1")
				view.Len()
			}
		}()
	}
	wg.Wait()

	// Every label left must be indexed under its own tag and nowhere else.
	for _, l := range view.Labels() {
		m, ok := view.Get(l)
		if !ok {
			t.Fatalf("Get(%q) failed for a listed label", l)
		}
		for w := range 4 {
			found := false
			for _, got := range view.Lookup("tag", fmt.Sprint(w)) {
				found = found || got == l
			}
			if want := m.Tags[0] == fmt.Sprint(w); found != want {
				t.Errorf("label %q under tag %d: %v, want %v", l, w, found, want)
			}
		}
	}
}
