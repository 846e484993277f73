package kv

import (
	"slices"
	"sync"
)

// MetadataMap is the read-only view of a descriptor's metadata: the run-time
// state that Create and Update returned for each value (an SB index, a
// handle), keyed by the value's label. The scheduler keeps it in sync: an
// entry appears when the value is created, changes when it is updated and
// disappears when it is deleted. It is safe for concurrent use, including
// from handlers of other descriptors while a transaction runs.
type MetadataMap[M any] interface {
	// Get returns the metadata of the value with the given label.
	Get(label string) (M, bool)
	// Labels returns the labels that have metadata, sorted.
	Labels() []string
	// Lookup returns the labels, sorted, whose metadata the named secondary
	// index maps to value (see Spec.MetadataIndexes).
	Lookup(index, value string) []string
	// Len returns the number of entries.
	Len() int
}

// metadataStore implements MetadataMap with optional secondary indexes.
type metadataStore[M any] struct {
	mu       sync.RWMutex
	byLabel  map[string]M
	indexers map[string]func(M) []string
	indexes  map[string]map[string]map[string]struct{} // index -> value -> labels
}

func newMetadataStore[M any](indexers map[string]func(M) []string) *metadataStore[M] {
	s := &metadataStore[M]{byLabel: map[string]M{}, indexers: indexers}
	if len(indexers) > 0 {
		s.indexes = make(map[string]map[string]map[string]struct{}, len(indexers))
		for name := range indexers {
			s.indexes[name] = map[string]map[string]struct{}{}
		}
	}
	return s
}

func (s *metadataStore[M]) Get(label string) (M, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.byLabel[label]
	return m, ok
}

func (s *metadataStore[M]) Labels() []string {
	s.mu.RLock()
	labels := make([]string, 0, len(s.byLabel))
	for l := range s.byLabel {
		labels = append(labels, l)
	}
	s.mu.RUnlock()
	slices.Sort(labels)
	return labels
}

func (s *metadataStore[M]) Lookup(index, value string) []string {
	s.mu.RLock()
	set := s.indexes[index][value]
	labels := make([]string, 0, len(set))
	for l := range set {
		labels = append(labels, l)
	}
	s.mu.RUnlock()
	slices.Sort(labels)
	return labels
}

func (s *metadataStore[M]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byLabel)
}

func (s *metadataStore[M]) put(label string, m M) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byLabel[label]; ok {
		s.unindex(label, old)
	}
	s.byLabel[label] = m
	for name, f := range s.indexers {
		idx := s.indexes[name]
		for _, v := range f(m) {
			set := idx[v]
			if set == nil {
				set = map[string]struct{}{}
				idx[v] = set
			}
			set[label] = struct{}{}
		}
	}
}

func (s *metadataStore[M]) remove(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byLabel[label]; ok {
		s.unindex(label, old)
		delete(s.byLabel, label)
	}
}

func (s *metadataStore[M]) unindex(label string, m M) {
	for name, f := range s.indexers {
		idx := s.indexes[name]
		for _, v := range f(m) {
			if set := idx[v]; set != nil {
				delete(set, label)
				if len(set) == 0 {
					delete(idx, v)
				}
			}
		}
	}
}
