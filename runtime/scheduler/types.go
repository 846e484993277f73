package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/graph"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler/internal/view"
)

// State is the state of one value.
type State = graph.State

// The value states.
const (
	// NONEXISTENT: the scheduler knows nothing of the key.
	NONEXISTENT = graph.NONEXISTENT
	// PENDING: intended, but waiting for unmet dependencies.
	PENDING = graph.PENDING
	// CONFIGURED: applied to the southbound and equal to the intended value.
	CONFIGURED = graph.CONFIGURED
	// OBTAINED: created outside us and only observed (SB origin).
	OBTAINED = graph.OBTAINED
	// DISCOVERED: derived from an OBTAINED value; observed, never created by us.
	DISCOVERED = graph.DISCOVERED
	// INVALID: the intended value failed validation; nothing of it was sent
	// to the southbound (a previously applied valid version stays).
	INVALID = graph.INVALID
	// FAILED: the last operation failed and will not be retried.
	FAILED = graph.FAILED
	// RETRYING: the last operation failed and a retry is scheduled.
	RETRYING = graph.RETRYING
	// REMOVED: deleted on request; reported by watchers and outcomes.
	REMOVED = graph.REMOVED
	// MISSING: configured, but the southbound no longer has it.
	MISSING = graph.MISSING
	// UNIMPLEMENTED: no registered descriptor handles the key.
	UNIMPLEMENTED = graph.UNIMPLEMENTED
	// DRIFTED: configured, but the southbound holds other contents,
	// changed behind our back (see Status.Drift); left so by the
	// descriptor's drift policy (report), or while repairs back off.
	DRIFTED = graph.DRIFTED
)

// ParseState returns the state with the given name.
func ParseState(name string) (State, bool) {
	for i, n := range graph.StateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// OpKind is the kind of one planned or executed operation.
type OpKind = graph.OpKind

// The operation kinds.
const (
	// OpNone records a change of state with no southbound call (a value
	// set pending, invalid, unimplemented, or obtained).
	OpNone   = graph.OpNone
	OpCreate = graph.OpCreate
	OpUpdate = graph.OpUpdate
	OpDelete = graph.OpDelete
	// OpRetrieve is a read of a descriptor's southbound state (a resync's
	// refresh); it appears in errors and observer events, never in plans.
	OpRetrieve = graph.OpRetrieve
)

// Flags annotate operations in plans and logs, in the spirit of the
// reference's transaction log.
type Flags = view.Flags

// The operation flags.
const (
	// FlagDerived: the value is derived from a base value.
	FlagDerived Flags = 1 << iota
	// FlagRecreate: part of a re-create (Delete then Create).
	FlagRecreate
	// FlagWasPending: the value was PENDING before this operation.
	FlagWasPending
	// FlagIsPending: the value is PENDING after this operation.
	FlagIsPending
	// FlagRevert: undoes an operation of a failed transaction.
	FlagRevert
	// FlagRetry: part of a retry of a failed operation.
	FlagRetry
	// FlagNoop: the value equals what is applied; nothing to do.
	FlagNoop
	// FlagInvalid: the value failed validation.
	FlagInvalid
	// FlagUnimplemented: no descriptor handles the key.
	FlagUnimplemented
	// FlagObtained: the value comes from the southbound (a notification).
	FlagObtained
	// FlagCycle: created as a member of a dependency cycle.
	FlagCycle
	// FlagMissing: a value of ours that the southbound no longer has
	// (found by a refresh); it is created again when it can be.
	FlagMissing
	// FlagAdopted: an intended value found in the southbound by a refresh
	// and taken as applied, with no call (an update follows when it
	// differs from what is intended).
	FlagAdopted
	// FlagStale: a value of ours in the southbound that is no longer
	// intended (found by a refresh); it is deleted.
	FlagStale
	// FlagDrifted: a drift check found a value of ours changed or gone
	// behind our back (with MISSING when gone); what follows depends on
	// the drift policy (a repair, nothing, or ADOPTED).
	FlagDrifted
	// FlagFinding: takes what a read-back before the transaction found of
	// a value of unknown outcome; a fact, which a revert starts from.
	FlagFinding
)

// FlagNames returns the names of the flags, as Flags.String writes them.
func FlagNames() []string { return append([]string(nil), view.AllFlagNames...) }

// Op is one operation of a plan or of an execution.
type Op = view.Op

// KeyError is the error of one key in a transaction.
type KeyError = view.KeyError

// TxnKind tells where a transaction came from.
type TxnKind = view.TxnKind

// The transaction kinds.
const (
	// NBTxn is a transaction committed by a northbound client.
	NBTxn TxnKind = iota
	// SBNotification applies values pushed by the southbound.
	SBNotification
	// RetryTxn re-applies values whose operations failed.
	RetryTxn
	// RegistrationTxn applies values that a newly registered descriptor
	// handles (they were UNIMPLEMENTED).
	RegistrationTxn
	// FullResyncTxn replaces the whole intended state with the
	// transaction's values and refreshes the view of the southbound.
	FullResyncTxn
	// UpstreamResyncTxn replaces the whole intended state and trusts the
	// view of the southbound as it is.
	UpstreamResyncTxn
	// DownstreamResyncTxn refreshes the view of the southbound and brings
	// it back to the intended state, which it keeps.
	DownstreamResyncTxn
	// DriftCheckTxn handles the drift a drift check found (CheckDrift,
	// WithDriftCheck): a check that finds none records no transaction.
	DriftCheckTxn
)

// Result is the outcome of one transaction.
type Result struct {
	// Seq numbers the executed transactions from 1; 0 for a dry run.
	Seq         uint64
	Kind        TxnKind
	Description string
	// Planned is the simulated plan; Executed what was actually called
	// (including revert operations). Both are empty for a dry run's
	// Executed.
	Planned, Executed []Op
	// Errors lists per-key errors, in the order they happened.
	Errors []KeyError
	// Reverted is set when a failure made the transaction undo itself.
	Reverted bool
	// DryRun is set when nothing was executed.
	DryRun bool
	// Batches counts the batches the execution sent (kv.Batcher) and the
	// groups of concurrent calls it ran (kv.Concurrent); BatchedOps the
	// operations they held. An execution detail: the operations are in
	// Executed as they would be without batches.
	Batches, BatchedOps int
	// Outcomes is filled by CommitAndWait: the final state of every value
	// the transaction touched.
	Outcomes   []Outcome
	Start, End time.Time
	// Err is what Commit returns: nil, ErrClosed, a context error, or a
	// *TxnError listing the per-key errors.
	Err error
}

// Outcome is the state a value reached after CommitAndWait.
type Outcome struct {
	Key   string
	State State
	Err   error
	// LastOp is the value's last operation (the one that failed, for a
	// FAILED value).
	LastOp OpKind
	// WhyPending explains a value still PENDING when the wait ended.
	WhyPending *PendingReason
}

// Status is the status of one value.
type Status = view.Status

// ErrClosed is returned for work submitted to, or still queued in, a closed
// scheduler.
var ErrClosed = errors.New("scheduler: closed")

// ErrUnimplemented is the error of a key that no registered descriptor
// handles; its value is kept as UNIMPLEMENTED until one is registered.
var ErrUnimplemented = errors.New("no descriptor handles the key")

// ErrDerivedKey is returned when a transaction sets or deletes a derived
// value directly: derived values follow their base.
var ErrDerivedKey = errors.New("derived values follow their base and cannot be changed directly")

// ErrObtainedKey is returned when a transaction deletes a value that the
// southbound owns (OBTAINED): the scheduler never deletes what it did not
// create.
var ErrObtainedKey = errors.New("the value was obtained from the southbound and is not ours to delete")

// ErrStillNeeded is the error of a value that was not deleted because a
// value that needs it (a dependent, or a derived value) could not be
// deleted first. No Delete was called; the value stays, FAILED.
var ErrStillNeeded = errors.New("still needed")

// ErrOutcomeUnknown is matched by the error of a value whose call failed
// and whose read-back failed too, so that what the southbound holds of it
// is unknown until a read-back succeeds (see doc.go), and by the error of
// a value not deleted because such a value may need it.
var ErrOutcomeUnknown = errors.New("what the southbound holds is unknown")

// ErrRetriesExhausted wraps the last error of a value whose retries ran out.
var ErrRetriesExhausted = errors.New("retries exhausted")

// RegistrationError reports a descriptor that cannot be registered.
type RegistrationError struct {
	Descriptor string
	Reason     string
}

func (e *RegistrationError) Error() string {
	return "scheduler: register " + e.Descriptor + ": " + e.Reason
}

// TxnError is the error of a transaction with failed keys. Errors lists them
// in order; errors.Is and errors.As see through it to each key's error.
type TxnError struct {
	Seq      uint64
	Errors   []KeyError
	Reverted bool
}

func (e *TxnError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transaction #%d: %d failed", e.Seq, len(e.Errors))
	if e.Reverted {
		b.WriteString(" (reverted)")
	}
	for i, ke := range e.Errors {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-3)
			break
		}
		b.WriteString("; ")
		b.WriteString(ke.Error())
	}
	return b.String()
}

// Unwrap returns the per-key errors.
func (e *TxnError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, ke := range e.Errors {
		out[i] = ke
	}
	return out
}

// ErrCallTimeout is wrapped by the error of a southbound call (Create,
// Update, Delete, Retrieve) that did not return within its call timeout
// (WithCallTimeout, WithDescriptorCallTimeout). The transaction gave up on
// it; the error is retriable.
var ErrCallTimeout = errors.New("southbound call timed out")

// CallTimeoutError is the error of a call the transaction gave up on: it
// names the operation, the descriptor, the key (empty for a Retrieve of a
// refresh) and the timeout, and wraps ErrCallTimeout, or ErrClosed when
// Close gave up on the call.
type CallTimeoutError struct {
	Op         OpKind
	Descriptor string
	Key        string
	Timeout    time.Duration
	// Closed is set when Close's deadline, not the call timeout, ended
	// the wait.
	Closed bool
	// Group is the number of operations of the batch or group of
	// concurrent calls given up on, which begins with Key; 0 for one call.
	Group int
}

func (e *CallTimeoutError) Error() string {
	what := e.Op.String()
	if e.Key != "" {
		what += " of " + e.Key
	}
	if e.Group > 1 {
		what = fmt.Sprintf("%s and %d more in one batch", what, e.Group-1)
	}
	if e.Closed {
		return fmt.Sprintf("%s by descriptor %s: given up, the scheduler was closed", what, e.Descriptor)
	}
	return fmt.Sprintf("%s by descriptor %s: no answer within the call timeout %s", what, e.Descriptor, e.Timeout)
}

// Unwrap returns ErrCallTimeout, or ErrClosed.
func (e *CallTimeoutError) Unwrap() error {
	if e.Closed {
		return ErrClosed
	}
	return ErrCallTimeout
}

// errNilContext is the error of a call given a nil context.
func errNilContext(call string) error {
	return fmt.Errorf("scheduler: %s: nil context (use context.Background() for none)", call)
}

// setOf returns the keys of xs, key(x) each, as a set.
func setOf[T any](xs []T, key func(*T) string) map[string]bool {
	set := make(map[string]bool, len(xs))
	for i := range xs {
		set[key(&xs[i])] = true
	}
	return set
}

// itself is the key of a key, for setOf.
func itself(k *string) string { return *k }

// put sets m[k] to v, making m first when it is nil.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[k] = v
}
