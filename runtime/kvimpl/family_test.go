package kvimpl

import "testing"

func TestOtherFamily(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{"10.0.0.1", "10.0.0.2", false},
		{"10.0.0.1", "2001:db8::1", true},
		{"10.0.0.0/24", "2001:db8::/64", true},
		{"2001:db8::1/64", "2001:db8::2", false},
		{"10.0.0.1", "", false},        // one empty: nothing to compare
		{"nope", "2001:db8::1", false}, // the format check names it
	}
	for _, tc := range tests {
		if got := OtherFamily(tc.a, tc.b); got != tc.want {
			t.Errorf("OtherFamily(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
