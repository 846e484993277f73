package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The errors: every one names the argument it is about first ("key: ..."),
// and one of a request's field carries a google.rpc.BadRequest detail with
// that field, the same over every transport.

func argErr(code connect.Code, field, format string, args ...any) error {
	err := connect.NewError(code, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	if d, derr := connect.NewErrorDetail(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: field, Description: fmt.Sprintf(format, args...)},
	}}); derr == nil {
		err.AddDetail(d)
	}
	return err
}

func invalid(field, format string, args ...any) error {
	return argErr(connect.CodeInvalidArgument, field, format, args...)
}

func notFound(field, format string, args ...any) error {
	return argErr(connect.CodeNotFound, field, format, args...)
}

// bounded returns the first bound exceeded (runtime/apilimits), as
// INVALID_ARGUMENT naming the field.
func bounded(errs ...error) error {
	err := apilimits.First(errs...)
	var le *apilimits.Error
	if errors.As(err, &le) {
		return invalid(le.Field, "%s", le.Msg)
	}
	return err
}

func keyLen(field, s string) error { return apilimits.Length(field, s, apilimits.MaxKeyLen) }

// txnError maps the error of a transaction (or of the Remote) to a code; a
// transaction that ran with errors of its keys is no error (its outcomes
// say them).
func txnError(res *scheduler.Result, err error) error {
	if err == nil {
		return nil
	}
	var te *scheduler.TxnError
	var ce *connect.Error
	switch {
	case errors.As(err, &te):
		return nil
	case errors.As(err, &ce):
		return err
	case errors.Is(err, nb.ErrNothingToConfirm), errors.Is(err, nb.ErrAwaitingConfirmation):
		return connect.NewError(connect.CodeFailedPrecondition, err)
	case errors.Is(err, nb.ErrNotAwaiting), errors.Is(err, nb.ErrUnknownTransaction):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, scheduler.ErrClosed), errors.Is(err, nb.ErrMuxClosed), errors.Is(err, nb.ErrNotStarted):
		return connect.NewError(connect.CodeUnavailable, err)
	}
	if res != nil && res.Seq > 0 {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("transaction %d: %w", res.Seq, err))
	}
	return connect.NewError(connect.CodeInternal, err)
}

// writeRESTError writes an error of a path outside the service as vanguard
// writes the service's own REST errors: google.rpc.Status in JSON.
func writeRESTError(w http.ResponseWriter, status int, code connect.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(code), "message": msg})
}
