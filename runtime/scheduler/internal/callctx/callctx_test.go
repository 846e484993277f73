package callctx

import (
	"context"
	"errors"
	"testing"
	"time"
)

type key struct{}

// TestCtxEndsOnce: a live context has no error and an open Done; the first
// End decides its error and closes Done (made before or after); a later
// End changes nothing. Values come from the parent; the deadline is
// Start+Timeout.
func TestCtxEndsOnce(t *testing.T) {
	start := time.Unix(100, 0)
	c := &Ctx{Parent: context.WithValue(context.Background(), key{}, "v"), Start: start, Timeout: time.Second}
	if d, ok := c.Deadline(); !ok || !d.Equal(start.Add(time.Second)) {
		t.Errorf("Deadline = %v, %v", d, ok)
	}
	if c.Value(key{}) != "v" {
		t.Error("the parent's value is not seen")
	}
	done := c.Done()
	if c.Err() != nil {
		t.Fatalf("live: Err = %v", c.Err())
	}
	select {
	case <-done:
		t.Fatal("live: Done is closed")
	default:
	}
	c.End(Expired)
	c.End(Returned)
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("after End(Expired), End(Returned): Err = %v, want DeadlineExceeded", c.Err())
	}
	<-done
	late := &Ctx{Parent: context.Background()}
	late.End(Returned)
	<-late.Done() // made after the end: closed
	if !errors.Is(late.Err(), context.Canceled) {
		t.Errorf("after End(Returned): Err = %v, want Canceled", late.Err())
	}
}
