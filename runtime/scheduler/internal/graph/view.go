package graph

import (
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/guard"
)

// KeyRec is a key and its version, as a read sees it.
type KeyRec struct {
	Key string
	Rec *ViewRec
}

// ViewRec is one version of a value: the node's fields readers need,
// saved while the node changes, or copied out for a reader. It is kept
// small: the intended and the applied value are held once when they are
// the same message (a configured value), and what most values lack sits
// apart in more.
type ViewRec struct {
	// Desc is the value's descriptor (every registered one is a guard; a
	// pointer, so that a version is 64 bytes), nil when none handles it.
	Desc *guard.Guard
	// Val is the intended value, or the applied one when nothing is
	// intended (see flags).
	Val  proto.Message
	more *viewMore
	// Seq is the value's last change, pub the transaction that published
	// this version; prev is the version before (read and written under
	// the shard's lock).
	Seq, Pub uint64
	prev     *ViewRec
	State    State
	Origin   kv.Origin
	LastOp   OpKind
	Flags    recFlags
}

// recFlags say which values a version holds, and where.
type recFlags uint8

const (
	RecIntent  recFlags = 1 << iota // val is the intended value
	recApplied                      // something is applied: val, or more.applied
	recSplit                        // the applied value differs from the intended one: more.applied
	recGone                         // the value was removed in transaction pub
)

// viewMore is what a version holds that most values lack; versions share
// it while it does not change.
type viewMore struct {
	Base    string
	Derived []string
	LastErr error
	// applied is the applied value when it differs from the intended one.
	applied  proto.Message
	Metadata any
}

func (r *ViewRec) Intent() proto.Message {
	if r.Flags&RecIntent == 0 {
		return nil
	}
	return r.Val
}

func (r *ViewRec) Applied() proto.Message {
	switch {
	case r.Flags&recApplied == 0:
		return nil
	case r.Flags&recSplit != 0:
		return r.more.applied
	}
	return r.Val
}

func (r *ViewRec) gone() bool { return r.Flags&recGone != 0 }

// Deps returns the dependencies of the intended value of key while it
// does not exist or is PENDING (what readers look at: what is unmet,
// cycles), else nil. They are computed again from the value, as the
// graph did (the descriptor's Dependencies is a function of the key and
// the value), rather than kept with every version.
func (r *ViewRec) Deps(key string) []kv.Dependency {
	if r.Desc == nil || r.Flags&RecIntent == 0 || r.State == INVALID || r.Exists() && r.State != PENDING {
		return nil
	}
	return r.Desc.Dependencies(key, r.Val)
}

func (r *ViewRec) Exists() bool { return r.Flags&recApplied != 0 }

// setRec makes r a version of n published by transaction pub; old is its
// previous version (nil: none), whose viewMore is kept when nothing in it
// changed. A new viewMore comes from slab.
func setRec(r *ViewRec, n *Node, old *ViewRec, pub uint64, slab *recSlab) {
	r.Desc, r.Flags = guard.GuardOf(n.Desc), 0
	r.Seq, r.Pub, r.State, r.Origin, r.LastOp = n.Seq, pub, n.State, n.Origin, n.LastOp
	var applied proto.Message // held in more: it differs from the intent
	switch {
	case n.Intent != nil:
		r.Val, r.Flags = n.Intent, RecIntent
		if n.Applied != nil {
			r.Flags |= recApplied
			if n.Applied != n.Intent {
				r.Flags |= recSplit
				applied = n.Applied
			}
		}
	case n.Applied != nil:
		r.Val, r.Flags = n.Applied, recApplied
	}
	if lastErr := n.LastErr(); n.Base != "" || len(n.Derived) > 0 || lastErr != nil || applied != nil || n.Metadata != nil {
		if m := old.M(); m != &noMore && m.Base == n.Base && SameValue(m.LastErr, lastErr) &&
			sameKeys(m.Derived, n.Derived) && m.applied == applied && SameValue(m.Metadata, n.Metadata) {
			r.more = m
		} else {
			r.more = slab.nextMore()
			*r.more = viewMore{Base: n.Base, Derived: n.Derived, LastErr: lastErr, applied: applied, Metadata: n.Metadata}
		}
	}
}

// M returns what r holds in more (zero when it has no more).
func (r *ViewRec) M() *viewMore {
	if r == nil || r.more == nil {
		return &noMore
	}
	return r.more
}

var noMore viewMore

// recSlab hands out versions, and their viewMores, from arrays of up
// to a few hundred: one allocation for many values.
type recSlab struct {
	free []ViewRec
	left int // versions still to hand out, at most
	more []viewMore
}

// next returns a version; nextMore a viewMore for the version handed out
// last (not every version needs one: the arrays are sized for those still
// to come, the version being made included).
func (s *recSlab) next() *ViewRec { s.left--; return take(&s.free, s.left+1) }

func (s *recSlab) nextMore() *viewMore { return take(&s.more, s.left+1) }

// take hands out the first element of free, an array of n made when it
// is empty.
func take[T any](free *[]T, n int) *T {
	if len(*free) == 0 {
		*free = make([]T, max(1, min(n, 256)))
	}
	p := &(*free)[0]
	*free = (*free)[1:]
	return p
}

// sameKeys reports whether a and b are the same slice (a node's lists are
// replaced, never modified, when they change).
func sameKeys(a, b []string) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }

// SameValue reports whether a and b are identical interface values (the
// same metadata or error, say); a value of a type that is not comparable
// is never the same, and comparing it does not panic.
func SameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == b // no comparison that can panic
	}
	return sameNonNil(a, b)
}

func sameNonNil(a, b any) (eq bool) {
	defer func() { _ = recover() }() // incomparable: eq stays false
	return a == b
}
