package boltstore

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

var (
	metaBucket    = []byte("kvdescriptor")
	appliedBucket = []byte("applied")
	formatKey     = []byte("format")
	formatValue   = []byte("kvdescriptor applied values v1")
)

// DefaultLockTimeout is how long Open waits for the file's lock.
const DefaultLockTimeout = time.Second

// Option configures Open.
type Option func(*options)

type options struct{ lockTimeout time.Duration }

// WithLockTimeout sets how long Open waits for the lock of a file that
// another process holds (default DefaultLockTimeout).
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// Store is an nb.Store in a bbolt file.
type Store struct {
	db   *bolt.DB
	path string
}

var _ nb.Store = (*Store)(nil)

// ErrLocked is wrapped by Open's error when another process holds the file.
var ErrLocked = errors.New("locked by another process")

// ErrNotStore is wrapped by Open's error for a file that is not a store of
// applied values: corrupted, or another program's.
var ErrNotStore = errors.New("not a store of applied values")

// Open opens the store at path, creating it if needed.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.lockTimeout})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("boltstore: %s is %w (is another agent running on the same state directory?)", path, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return nil, fmt.Errorf("boltstore: %s is %w (corrupted, or not a bbolt file): %w", path, ErrNotStore, err)
	case err != nil:
		return nil, fmt.Errorf("boltstore: opening %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if meta == nil {
			// A new file has no bucket at all; anything else is
			// another program's database.
			foreign := false
			_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				foreign = true
				return nil
			})
			if foreign {
				return fmt.Errorf("%w (a bbolt database of another program)", ErrNotStore)
			}
			var err error
			if meta, err = tx.CreateBucket(metaBucket); err != nil {
				return err
			}
			if err := meta.Put(formatKey, formatValue); err != nil {
				return err
			}
			_, err = tx.CreateBucket(appliedBucket)
			return err
		}
		if f := meta.Get(formatKey); string(f) != string(formatValue) {
			return fmt.Errorf("%w (format %q, want %q)", ErrNotStore, f, formatValue)
		}
		if tx.Bucket(appliedBucket) == nil {
			return fmt.Errorf("%w (its bucket of values is missing)", ErrNotStore)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the file of the store.
func (s *Store) Path() string { return s.path }

// Close closes the file and releases its lock.
func (s *Store) Close() error { return s.db.Close() }

// A record is the source (field 1) and the value as a google.protobuf.Any
// (field 2), in protobuf wire form.
const (
	fieldSource = 1
	fieldValue  = 2
)

func encode(a nb.Applied) ([]byte, error) {
	var b []byte
	b = protowire.AppendTag(b, fieldSource, protowire.BytesType)
	b = protowire.AppendString(b, a.Source)
	if a.Value != nil {
		anyv, err := anypb.New(a.Value)
		if err != nil {
			return nil, err
		}
		v, err := proto.MarshalOptions{Deterministic: true}.Marshal(anyv)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, fieldValue, protowire.BytesType)
		b = protowire.AppendBytes(b, v)
	}
	return b, nil
}

func decode(key string, b []byte) (nb.Applied, error) {
	a := nb.Applied{Key: key}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return a, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return a, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return a, protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case fieldSource:
			a.Source = string(v)
		case fieldValue:
			anyv := &anypb.Any{}
			if err := proto.Unmarshal(v, anyv); err != nil {
				return a, err
			}
			// UnmarshalNew resolves the type in protoregistry.GlobalTypes.
			m, err := anyv.UnmarshalNew()
			if err != nil {
				return a, fmt.Errorf("value of type %s: %w", anyv.TypeUrl, err)
			}
			a.Value = m
		}
	}
	return a, nil
}

// Load returns every record, by key. A record that does not decode (its
// message type no longer linked in, say) is left out, and named in the
// error; the others are returned.
func (s *Store) Load() ([]nb.Applied, error) {
	var out []nb.Applied
	var errs []error
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(appliedBucket).ForEach(func(k, v []byte) error {
			a, err := decode(string(k), v)
			if err != nil {
				errs = append(errs, fmt.Errorf("boltstore: %s: key %q: %w", s.path, k, err))
				return nil
			}
			out = append(out, a)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return out, errors.Join(errs...)
}

// Record writes puts and removes deletes in one transaction, synced to
// disk before it returns.
func (s *Store) Record(puts []nb.Applied, deletes []string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(appliedBucket)
		for _, a := range puts {
			v, err := encode(a)
			if err != nil {
				return fmt.Errorf("key %q: %w", a.Key, err)
			}
			if err := b.Put([]byte(a.Key), v); err != nil {
				return fmt.Errorf("key %q: %w", a.Key, err)
			}
		}
		for _, k := range deletes {
			if err := b.Delete([]byte(k)); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	return nil
}
