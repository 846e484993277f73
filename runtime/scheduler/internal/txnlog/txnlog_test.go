package txnlog

import (
	"strings"
	"testing"
)

// TestLogSafeFindsEveryControlByte: the word-at-a-time scan quotes a text
// exactly when the byte-by-byte rule would, whatever the byte and its
// place.
func TestLogSafeFindsEveryControlByte(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return true
			}
		}
		return false
	}
	for _, n := range []int{1, 7, 8, 9, 16, 23} {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a\xc3\xa9", n)[:n])
				b[pos] = byte(c)
				s := string(b)
				if quoted := Safe(s) != s; quoted != naive(s) {
					t.Fatalf("Safe(%q) quoted=%v, want %v", s, quoted, naive(s))
				}
			}
		}
	}
}
