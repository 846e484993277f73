package kv

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidValue is matched (with errors.Is) by every [InvalidValueError].
// The scheduler marks a value whose validation fails INVALID and sends
// nothing of it to the southbound.
var ErrInvalidValue = errors.New("invalid value")

// ErrNotFound is returned by handlers when the southbound object an
// operation addresses does not exist. The scheduler treats a Delete that
// fails with ErrNotFound as successful: the object is gone either way.
var ErrNotFound = errors.New("not found in the southbound")

// ErrWrongType is matched by the error returned when a value of another
// message type than the descriptor's is given for one of its keys.
var ErrWrongType = errors.New("value of a wrong message type")

// FieldError names one invalid field of a value and why it is invalid.
type FieldError struct {
	// Field is the field path, e.g. "ip_addresses[1]" or "peer.name".
	Field string
	// Reason says what is wrong with it, e.g. "must be set".
	Reason string
}

func (f FieldError) String() string { return f.Field + ": " + f.Reason }

// InvalidValueError reports a value that failed validation. It names every
// invalid field it found, not just the first one.
type InvalidValueError struct {
	// Key is the key of the invalid value; the scheduler fills it in when a
	// handler leaves it empty.
	Key string
	// Fields lists the invalid fields; never empty.
	Fields []FieldError
	// Err is the underlying cause, if any (ErrWrongType, or the first
	// error of a check that did not return field errors); errors.Is and
	// errors.As see through to it.
	Err error
}

// Invalid returns an [InvalidValueError] naming one field.
func Invalid(field, format string, args ...any) *InvalidValueError {
	return &InvalidValueError{Fields: []FieldError{{Field: field, Reason: fmt.Sprintf(format, args...)}}}
}

// Add appends a field error and returns the receiver, so that checks of
// several fields can be collected in one error. A nil receiver allocates.
func (e *InvalidValueError) Add(field, format string, args ...any) *InvalidValueError {
	if e == nil {
		e = &InvalidValueError{}
	}
	e.Fields = append(e.Fields, FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	return e
}

// OrNil returns nil when no field error was collected, so that
//
//	return errs.OrNil()
//
// never returns a typed nil pointer as a non-nil error.
func (e *InvalidValueError) OrNil() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

func (e *InvalidValueError) Error() string {
	var b strings.Builder
	b.WriteString("invalid value")
	if e.Key != "" {
		b.WriteString(" for ")
		b.WriteString(e.Key)
	}
	for i, f := range e.Fields {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidValue) true.
func (e *InvalidValueError) Is(target error) bool { return target == ErrInvalidValue }

// Unwrap returns the underlying cause, or nil.
func (e *InvalidValueError) Unwrap() error { return e.Err }

// FieldNames lists the invalid fields in the order they were found.
func (e *InvalidValueError) FieldNames() []string {
	names := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		names[i] = f.Field
	}
	return names
}

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// NonRetriable marks err as one that retrying the operation cannot fix (a
// permission error, an unsupported request). A transaction that asked for
// retries leaves such a value FAILED instead of RETRYING. It returns nil for
// a nil err.
func NonRetriable(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsRetriable reports whether retrying an operation that failed with err
// may succeed: false for nil, for errors marked with [NonRetriable], for
// invalid values and for wrong types; true otherwise. A [Spec] may replace
// this default with its own IsRetriable.
func IsRetriable(err error) bool {
	if err == nil {
		return false
	}
	var t *terminalError
	if errors.As(err, &t) {
		return false
	}
	return !errors.Is(err, ErrInvalidValue) && !errors.Is(err, ErrWrongType)
}
