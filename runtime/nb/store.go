package nb

import "google.golang.org/protobuf/proto"

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
