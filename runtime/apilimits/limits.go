// Package apilimits holds the upper bounds of what a client of the agent's
// API may ask (runtime/api, and kvctl, which checks its flags by them):
// every size, count and duration a request
// carries has one here, so that no single call can make the agent
// allocate or wait without limit. A request beyond a bound is refused
// (INVALID_ARGUMENT; REST 400) with an error naming the field.
// docs/api.md lists them; Table is that list.
package apilimits

import (
	"fmt"
	"time"
)

// The bounds.
const (
	// MaxWatchBuffer bounds the updates a Watch holds for a slow client
	// (WatchRequest.buffer, kvctl watch --buffer).
	MaxWatchBuffer = 65536
	// MaxKeyLen bounds a key, a key prefix, a descriptor or source name
	// (every string selector of a read), and every HTTP query parameter.
	MaxKeyLen = 1024
	// MaxDescriptionLen bounds a transaction's description.
	MaxDescriptionLen = 4096
	// MaxCommitKeys bounds the values and deletes of one commit or plan
	// (CommitRequest.values plus deletes; PlanRequest's alike).
	MaxCommitKeys = 1000000
	// MaxMessageBytes is the default bound of one message of the API
	// (api.DefaultMaxMessageBytes; kvctl's receive limit): a commit of
	// MaxCommitKeys routes as google.protobuf.Any is about 150 MB.
	MaxMessageBytes = 512 << 20
	// MaxRetryAttempts bounds RetryPolicy.max_attempts.
	MaxRetryAttempts = 1000
	// MaxRetryPeriod bounds RetryPolicy.period and max_period.
	MaxRetryPeriod = time.Hour
	// MaxWaitTimeout bounds CommitRequest.wait_timeout (kvctl --timeout
	// of a command that waits).
	MaxWaitTimeout = 10 * time.Minute
	// MaxConfirmWithin bounds CommitRequest.confirm_within (kvctl apply
	// --confirm-within).
	MaxConfirmWithin = 24 * time.Hour
	// MaxHistoryPage bounds the transactions of one page of the operator
	// page's history (/ui/history?limit=L).
	MaxHistoryPage = 500
)

// Limit is one bound, as docs/api.md lists it.
type Limit struct {
	// Fields are the request fields it bounds, gRPC and HTTP.
	Fields string
	// Max is the bound, written as the docs write it.
	Max string
}

// Table lists the bounds, as docs/api.md does.
var Table = []Limit{
	{"`Watch` `buffer`; kvctl `watch --buffer`", fmt.Sprint(MaxWatchBuffer)},
	{"`values` + `deletes` of `Commit` and `Plan`; kvctl `delete` keys", fmt.Sprint(MaxCommitKeys)},
	{"`Commit` `retry.max_attempts`; kvctl `apply --retry-attempts`", fmt.Sprint(MaxRetryAttempts)},
	{"`Commit` `retry.period`, `retry.max_period`; kvctl `apply --retry-period`, `--retry-max-period`", MaxRetryPeriod.String()},
	{"`Commit` `wait_timeout`; kvctl `--timeout` with `--wait`", MaxWaitTimeout.String()},
	{"`Commit` `confirm_within`; kvctl `apply --confirm-within`", MaxConfirmWithin.String()},
	{"keys, prefixes, descriptor and owner names (`values[i].key`, `deletes[i]`, `key`, `prefix`, `descriptor`, `owner`)", fmt.Sprintf("%d bytes", MaxKeyLen)},
	{"`description` of `Commit`, `RollbackTo` and `DownstreamResync`", fmt.Sprintf("%d bytes", MaxDescriptionLen)},
	{"one message (a request or an answer), on every transport (`limits.max_message_bytes` sets the agent's)", fmt.Sprintf("%d bytes", MaxMessageBytes)},
	{"the operator page's `/ui/history` `limit`", fmt.Sprint(MaxHistoryPage)},
}

// Error is a request field beyond its bound.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }

// Count checks a count or size n of field against max.
func Count(field string, n, max int64) error {
	if n > max {
		return &Error{Field: field, Msg: fmt.Sprintf("%d is more than %d, the bound", n, max)}
	}
	return nil
}

// Duration checks a duration of field against max.
func Duration(field string, d, max time.Duration) error {
	if d > max {
		return &Error{Field: field, Msg: fmt.Sprintf("%s is more than %s, the bound", d, max)}
	}
	return nil
}

// Length checks the length in bytes of a string of field against max.
func Length(field, s string, max int) error {
	if len(s) > max {
		return &Error{Field: field, Msg: fmt.Sprintf("%d bytes long, more than %d, the bound", len(s), max)}
	}
	return nil
}

// First returns the first error that is not nil.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
