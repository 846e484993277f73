package view

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
)

// ErrDrifted is documented at its alias in the scheduler package.
var ErrDrifted = errors.New("drifted: changed behind our back")

// DriftError is documented at its alias in the scheduler package.
type DriftError struct {
	// Missing says that the southbound no longer has the value; else it
	// holds other contents, and Diff lists the fields that differ (the
	// intended value's against the southbound's, sensitive fields
	// redacted).
	Missing bool
	Diff    []kv.FieldDiff
	// Policy is the value's drift policy.
	Policy kv.DriftPolicy
	// Repairs counts the repairs of the value in a row that something
	// undid soon after; BackoffUntil, when set, is the time before which
	// no repair is made (the value is checked again then).
	Repairs      int
	BackoffUntil time.Time
	// Noticed is when the drift check found it.
	Noticed time.Time
}

func (e *DriftError) Error() string {
	var b strings.Builder
	if e.Missing {
		b.WriteString("gone from the southbound behind our back")
	} else {
		b.WriteString("changed in the southbound behind our back")
		for i, d := range e.Diff {
			if i == 0 {
				b.WriteString(": ")
			} else {
				b.WriteString("; ")
			}
			b.WriteString(d.String())
		}
	}
	fmt.Fprintf(&b, " (drift policy %s", e.Policy)
	if !e.BackoffUntil.IsZero() {
		fmt.Fprintf(&b, "; undone again %d times in a row: repairs back off until %s", e.Repairs, e.BackoffUntil.Format(time.RFC3339Nano))
	}
	b.WriteString(")")
	return b.String()
}

// Is makes a *DriftError match ErrDrifted.
func (e *DriftError) Is(target error) bool { return target == ErrDrifted }

// Flags is documented at its alias in the scheduler package.
type Flags uint16

var AllFlagNames = []string{"DERIVED", "RECREATE", "WAS-PENDING", "IS-PENDING", "REVERT", "RETRY", "NOOP", "INVALID", "UNIMPLEMENTED", "OBTAINED", "CYCLE", "MISSING", "ADOPTED", "STALE", "DRIFTED", "FINDING"}

func (f Flags) String() string {
	var b strings.Builder
	f.AppendTo(&b)
	return b.String()
}

// AppendTo writes the names of the flags set, in flagNames' order; only
// the bits set are looked at (an operation has one flag or two).
func (f Flags) AppendTo(b *strings.Builder) {
	f &= 1<<len(AllFlagNames) - 1 // a bit that no flag is has no name
	for first := true; f != 0; first = false {
		i := bits.TrailingZeros16(uint16(f))
		f &= f - 1
		if !first {
			b.WriteByte(' ')
		}
		b.WriteString(AllFlagNames[i])
	}
}

// Op is documented at its alias in the scheduler package.
type Op struct {
	Key  string
	Kind graph.OpKind
	// State is the value's state after the operation.
	State graph.State
	Flags Flags
	// Value is the value created or updated to; PrevValue the value
	// updated from or deleted.
	Value, PrevValue proto.Message
	// Metadata is what Create or Update returned (executed operations).
	Metadata any
	// Err is the operation's error (executed operations only).
	Err error
	// Called says that the operation called the southbound (Create,
	// Update or Delete, failed or not); bookkeeping records (PENDING,
	// ADOPTED, MISSING, NOOP, a refused delete, ...) made none. A
	// transaction whose operations all have Called false made no call.
	Called bool
}

// KeyError is documented at its alias in the scheduler package.
type KeyError struct {
	Key string
	Op  graph.OpKind
	Err error
}

func (e KeyError) Error() string {
	if e.Op == graph.OpNone {
		return e.Key + ": " + e.Err.Error()
	}
	return e.Key + ": " + e.Op.String() + ": " + e.Err.Error()
}

func (e KeyError) Unwrap() error { return e.Err }

// TxnKind is documented at its alias in the scheduler package.
type TxnKind uint8

var txnKindNames = [...]string{"NB transaction", "SB notification", "retry", "descriptor registration",
	"full resync", "upstream resync", "downstream resync", "drift check"}

func (k TxnKind) String() string { return txnKindNames[k] }

// Status is documented at its alias in the scheduler package.
type Status struct {
	Key        string
	Descriptor string // empty when UNIMPLEMENTED
	State      graph.State
	Origin     kv.Origin
	// Value is the intended value. When nothing is intended (Intended is
	// false: an OBTAINED value, or a leftover of ours that a failed delete
	// kept in the southbound), it is the applied one.
	Value proto.Message
	// Intended reports whether a value is intended for the key: set by a
	// northbound transaction, or derived from an intended base. False for
	// OBTAINED values and for leftovers waiting to be deleted.
	Intended bool
	// Applied is what the scheduler believes the southbound holds: nil
	// when the value does not exist there. It differs from Value while a
	// value is PENDING, INVALID (the last valid version stays), or after a
	// failed update.
	Applied proto.Message
	// Metadata is what Create or Update returned.
	Metadata any
	// Base is the key of the base value of a derived value.
	Base string
	// Derived lists the keys of values derived from this one.
	Derived []string
	LastOp  graph.OpKind
	LastErr error
	// Unmet lists the unmet dependencies of a PENDING value.
	Unmet []UnmetDependency
	// Details says more, e.g. the members of a blocked dependency cycle.
	Details []string
	// Seq is the transaction that last changed the value.
	Seq uint64
	// Drift is set while the value is DRIFTED or MISSING because a drift
	// check found it changed or gone behind our back: what differs, the
	// policy, and the repairs' backoff. (It is LastErr, as a *DriftError.)
	Drift *DriftError
}
