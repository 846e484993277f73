package nb

import (
	"errors"

	"google.golang.org/protobuf/proto"
)

// Applied is one value the agent applied: its key, the source that owned
// it and the value.
type Applied struct {
	Key    string
	Source string
	Value  proto.Message
}

// Store keeps what the agent applied across restarts, so that a full
// resync at startup tells a stale value of ours (removed) from a foreign
// one (left alone), and keeps the values of a source that has not loaded
// yet. The Mux writes the values of a transaction before committing it
// (write-ahead: a crash in the middle of the transaction does not forget a
// value it may have created) and removes the deleted keys after it.
// runtime/nb/boltstore implements it in a file.
type Store interface {
	// Load returns every recorded value. With an error it may still
	// return the records it could read.
	Load() ([]Applied, error)
	// Record writes puts (replacing the records of their keys) and
	// removes deletes, all at once.
	Record(puts []Applied, deletes []string) error
	// Close releases the store.
	Close() error
}

// SourceStore is a Store that also keeps, by source, the state a source
// has beyond its values: the remote API's source (Remote) keeps there
// what its clients intend and a commit awaiting confirmation, so that
// they outlive a restart in the same file as the applied values.
// runtime/nb/boltstore implements it. Without one, a Remote keeps its
// state in memory.
type SourceStore interface {
	// LoadSource returns what SaveSource recorded for the source (nil
	// when nothing).
	LoadSource(source string) ([]byte, error)
	// SaveSource records data for the source (nil removes the record),
	// on disk before it returns.
	SaveSource(source string, data []byte) error
}

// SourceEntry is one change of a source's entries (SourceEntryStore):
// Value is written under Key (nil Value: the entry is deleted), or, with
// Prefix, every entry whose key starts with Key is deleted.
type SourceEntry struct {
	Key    []byte
	Value  []byte
	Prefix bool
}

// SourceEntryStore is a SourceStore that also keeps, by source, an ordered
// map of entries written a few at a time, so that a source's state is
// recorded in proportion to what changed rather than as a whole: a Remote
// over one keeps a value per entry. runtime/nb/boltstore implements it.
type SourceEntryStore interface {
	SourceStore
	// ReadSourceEntries calls fn with each entry of the source, in the
	// order of their keys; key and value are valid only during the call.
	// An error of fn stops the reading and is returned.
	ReadSourceEntries(source string, fn func(key, value []byte) error) error
	// WriteSourceEntries makes the changes, in their order, and removes
	// the source's SaveSource record, all at once, on disk before it
	// returns.
	WriteSourceEntries(source string, changes []SourceEntry) error
}

// HasSourceState reports whether store holds a state of the source: a
// SaveSource record, or entries.
func HasSourceState(store SourceStore, source string) (bool, error) {
	if es, ok := store.(SourceEntryStore); ok {
		found := false
		err := es.ReadSourceEntries(source, func(_, _ []byte) error {
			found = true
			return errStopReading
		})
		if err != nil && !errors.Is(err, errStopReading) {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	b, err := store.LoadSource(source)
	return b != nil, err
}

var errStopReading = errors.New("stop reading")
