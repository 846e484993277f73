package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

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
