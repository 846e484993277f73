package scheduler_test

import (
	"context"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// TestDriftReportedMissingFoundBack: a value reported MISSING (policy
// report) that something puts back, as it was or with other contents, is
// there again for what needs it: a/y, which needs a/x, is applied again.
func TestDriftReportedMissingFoundBack(t *testing.T) {
	for _, back := range []string{"mtu:1500", "mtu:1400"} {
		t.Run(back, func(t *testing.T) {
			t.Parallel()
			s, sb := driftSetup(t, kv.DriftReport)
			sb.Remove("a/x")
			checkDrift(t, s, "a/x")
			if st := s.Status("a/x"); st.State != scheduler.MISSING {
				t.Fatalf("a/x gone: %v", st.State)
			}
			t.Logf("a/y while a/x is MISSING: %v", s.Status("a/y").State)
			sb.Put("a/x", back)
			res := checkDrift(t, s, "a/x")
			t.Logf("found back:\n%s", scheduler.FormatOps(res.Executed))
			want := scheduler.CONFIGURED
			if back != "mtu:1500" {
				want = scheduler.DRIFTED
			}
			if st := s.Status("a/x"); st.State != want {
				t.Errorf("a/x found back as %q: %v, want %v", back, st.State, want)
			}
			if st := s.Status("a/y"); st.State != scheduler.CONFIGURED {
				t.Errorf("a/y, which needs a/x, found back as %q: %v (%v)", back, st.State, st.LastErr)
			}
			if _, ok := sb.Get("a/y"); !ok {
				t.Errorf("a/y is not in the southbound")
			}
			// New values that need a/x, directly or as any value under
			// a/x, are created on it.
			if _, err := s.Txn().Set("a/z", kvtest.Value("dep:a/x")).Set("a/w", kvtest.Value("any:a/x")).Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"a/z", "a/w"} {
				if st := s.Status(k); st.State != scheduler.CONFIGURED {
					t.Errorf("%s, new, which needs a/x found back as %q: %v (%v)", k, back, st.State, st.LastErr)
				}
			}
		})
	}
}
