package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name   string
		policy RetryPolicy
		want   []time.Duration // delays before retries 1, 2, ...
	}{
		{name: "fixed period", policy: RetryPolicy{Period: 10 * ms}, want: []time.Duration{10 * ms, 10 * ms, 10 * ms}},
		{name: "exponential", policy: RetryPolicy{Period: 10 * ms, Backoff: true}, want: []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms}},
		{name: "exponential with a cap", policy: RetryPolicy{Period: 10 * ms, Backoff: true, MaxPeriod: 25 * ms}, want: []time.Duration{10 * ms, 20 * ms, 25 * ms, 25 * ms}},
		{name: "cap below the period", policy: RetryPolicy{Period: 10 * ms, MaxPeriod: 5 * ms}, want: []time.Duration{5 * ms, 5 * ms}},
		{name: "default period", policy: RetryPolicy{}, want: []time.Duration{time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []time.Duration
			for attempt := 1; attempt <= len(tc.want); attempt++ {
				got = append(got, tc.policy.delay(attempt))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithLogger(nil), "nil logger"},
		{WithWatchBuffer(0), "watch buffer"},
		{WithHistory(-1, 0), "history retention must not be negative"},
		{WithHistory(10, -time.Second), "history retention must not be negative"},
		{WithPeriodicResync(-time.Second), "resync period must not be negative"},
	} {
		if _, err := New(tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with an invalid option: %v, want an error saying %q", err, tc.want)
		}
	}
}
