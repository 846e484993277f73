package kv_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func TestFieldErrorString(t *testing.T) {
	t.Parallel()
	got := kv.FieldError{Field: "ip_addresses[1]", Reason: "not an IP prefix"}.String()
	if want := "ip_addresses[1]: not an IP prefix"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestInvalidValueErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *kv.InvalidValueError
		want string
	}{
		{
			name: "one field, no key",
			err:  kv.Invalid("name", "must be set"),
			want: "invalid value: name: must be set",
		},
		{
			name: "formatted reason",
			err:  kv.Invalid("mtu", "must be at most %d, got %d", 9000, 9216),
			want: "invalid value: mtu: must be at most 9000, got 9216",
		},
		{
			name: "key and several fields",
			err: func() *kv.InvalidValueError {
				e := kv.Invalid("name", "must be set").Add("ip_addresses[1]", "%q is not an IP prefix", "10.0.0")
				e.Key = "linux/interface/eth0"
				return e
			}(),
			want: `invalid value for linux/interface/eth0: name: must be set; ip_addresses[1]: "10.0.0" is not an IP prefix`,
		},
		{
			name: "literal struct",
			err: &kv.InvalidValueError{Key: "k", Fields: []kv.FieldError{
				{Field: "a", Reason: "x"}, {Field: "b", Reason: "y"}, {Field: "c", Reason: "z"},
			}},
			want: "invalid value for k: a: x; b: y; c: z",
		},
		{
			name: "reason with a percent sign is not reformatted by Add",
			err:  (*kv.InvalidValueError)(nil).Add("rate", "%s", "100%"),
			want: "invalid value: rate: 100%",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("Error() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidValueErrorAdd(t *testing.T) {
	t.Parallel()
	var errs *kv.InvalidValueError
	errs = errs.Add("name", "must be set")
	if errs == nil {
		t.Fatal("Add on a nil receiver returned nil")
	}
	same := errs.Add("mtu", "must be at most %d", 9000)
	if same != errs {
		t.Error("Add on a non-nil receiver returned another error")
	}
	want := []kv.FieldError{
		{Field: "name", Reason: "must be set"},
		{Field: "mtu", Reason: "must be at most 9000"},
	}
	if diff := cmp.Diff(want, errs.Fields); diff != "" {
		t.Errorf("Fields mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"name", "mtu"}, errs.FieldNames()); diff != "" {
		t.Errorf("FieldNames mismatch (-want +got):\n%s", diff)
	}
}

func TestInvalidValueErrorFieldNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *kv.InvalidValueError
		want []string
	}{
		{name: "one", err: kv.Invalid("a", "x"), want: []string{"a"}},
		{name: "in order found", err: kv.Invalid("z", "x").Add("a", "y").Add("m", "z"), want: []string{"z", "a", "m"}},
		{name: "duplicates kept", err: kv.Invalid("a", "x").Add("a", "y"), want: []string{"a", "a"}},
		{name: "empty", err: &kv.InvalidValueError{}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.err.FieldNames()); diff != "" {
				t.Errorf("FieldNames mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidValueErrorOrNil(t *testing.T) {
	t.Parallel()

	collect := func(fields ...string) error {
		var errs *kv.InvalidValueError
		for _, f := range fields {
			errs = errs.Add(f, "bad")
		}
		return errs.OrNil()
	}
	if err := collect(); err != nil {
		t.Errorf("OrNil of a nil *InvalidValueError = %#v, want a nil error", err)
	}
	if err := (&kv.InvalidValueError{Key: "k"}).OrNil(); err != nil {
		t.Errorf("OrNil of an empty *InvalidValueError = %#v, want a nil error", err)
	}
	if err := (&kv.InvalidValueError{Fields: []kv.FieldError{}}).OrNil(); err != nil {
		t.Errorf("OrNil of an *InvalidValueError with empty Fields = %#v, want a nil error", err)
	}

	err := collect("a", "b")
	if err == nil {
		t.Fatal("OrNil with fields returned nil")
	}
	var inv *kv.InvalidValueError
	if !errors.As(err, &inv) {
		t.Fatalf("OrNil returned %T, want *kv.InvalidValueError", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, inv.FieldNames()); diff != "" {
		t.Errorf("FieldNames mismatch (-want +got):\n%s", diff)
	}
	e := kv.Invalid("x", "y")
	if got := e.OrNil(); got != error(e) {
		t.Errorf("OrNil returned %v, want the receiver", got)
	}
}

func TestInvalidValueErrorIs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{name: "direct", err: kv.Invalid("a", "b"), target: kv.ErrInvalidValue, want: true},
		{name: "wrapped", err: fmt.Errorf("validate: %w", kv.Invalid("a", "b")), target: kv.ErrInvalidValue, want: true},
		{name: "joined", err: errors.Join(errors.New("x"), kv.Invalid("a", "b")), target: kv.ErrInvalidValue, want: true},
		{name: "not wrong type", err: kv.Invalid("a", "b"), target: kv.ErrWrongType, want: false},
		{name: "not not found", err: kv.Invalid("a", "b"), target: kv.ErrNotFound, want: false},
		{name: "plain error is not invalid", err: errors.New("invalid value"), target: kv.ErrInvalidValue, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.target, got, tt.want)
			}
		})
	}
}

func TestNonRetriable(t *testing.T) {
	t.Parallel()
	if err := kv.NonRetriable(nil); err != nil {
		t.Errorf("NonRetriable(nil) = %#v, want nil", err)
	}
	base := fmt.Errorf("create tap0: %w", fs.ErrPermission)
	err := kv.NonRetriable(base)
	if got, want := err.Error(), base.Error(); got != want {
		t.Errorf("Error() = %q, want the wrapped message %q", got, want)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Error("NonRetriable hides the wrapped error from errors.Is")
	}
	if got := errors.Unwrap(err); got != base {
		t.Errorf("errors.Unwrap = %v, want the original error", got)
	}
}

func TestIsRetriable(t *testing.T) {
	t.Parallel()
	plain := errors.New("connection refused")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "plain", err: plain, want: true},
		{name: "wrapped plain", err: fmt.Errorf("create: %w", plain), want: true},
		{name: "not found", err: kv.ErrNotFound, want: true},
		{name: "deadline", err: context.DeadlineExceeded, want: true},
		{name: "terminal", err: kv.NonRetriable(plain), want: false},
		{name: "wrapped terminal", err: fmt.Errorf("create tap0: %w", kv.NonRetriable(plain)), want: false},
		{name: "joined terminal", err: errors.Join(plain, kv.NonRetriable(plain)), want: false},
		{name: "invalid", err: kv.Invalid("name", "must be set"), want: false},
		{name: "wrapped invalid", err: fmt.Errorf("x: %w", kv.Invalid("name", "must be set")), want: false},
		{name: "wrong type", err: kv.ErrWrongType, want: false},
		{name: "wrapped wrong type", err: fmt.Errorf("k: %w: got x", kv.ErrWrongType), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := kv.IsRetriable(tt.err); got != tt.want {
				t.Errorf("IsRetriable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestSentinelErrorsAreDistinct(t *testing.T) {
	t.Parallel()
	sentinels := []error{kv.ErrInvalidValue, kv.ErrNotFound, kv.ErrWrongType}
	for i, a := range sentinels {
		for j, b := range sentinels {
			if got := errors.Is(a, b); got != (i == j) {
				t.Errorf("errors.Is(%v, %v) = %v", a, b, got)
			}
		}
	}
}
