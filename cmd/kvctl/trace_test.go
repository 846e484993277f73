package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// headerCapture answers every request with 204 and keeps its headers.
type headerCapture struct{ got http.Header }

func (h *headerCapture) RoundTrip(r *http.Request) (*http.Response, error) {
	h.got = r.Header.Clone()
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
}

// TestTraceparent: the environment's TRACEPARENT goes with every request
// as its traceparent header (with the token); a malformed one is bad
// usage, naming the variable; without it no header is sent.
func TestTraceparent(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct{ name, env, want string }{
		{name: "set", env: tp, want: tp},
		{name: "unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TRACEPARENT", tc.env)
			c := &cli{server: "127.0.0.1:1"}
			if _, err := c.dial(); err != nil {
				t.Fatal(err)
			}
			bt := c.httpClient.Transport.(bearerTransport)
			capture := &headerCapture{}
			bt.next, bt.token = capture, "s3cret"
			req, _ := http.NewRequest(http.MethodPost, c.base+"/x", nil)
			resp, err := bt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := capture.got.Get("traceparent"); got != tc.want || capture.got.Get("Authorization") != "Bearer s3cret" {
				t.Errorf("headers %v, want traceparent %q and the token", capture.got, tc.want)
			}
			if req.Header.Get("traceparent") != "" {
				t.Error("the caller's request was changed")
			}
		})
	}
	for _, bad := range []string{
		"0af7651916cd43dd8448eb211c80319c",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
	} {
		t.Setenv("TRACEPARENT", bad)
		c := &cli{server: "127.0.0.1:1"}
		_, err := c.dial()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "TRACEPARENT") {
			t.Errorf("TRACEPARENT=%s: %v, want bad usage naming TRACEPARENT", bad, err)
		}
	}
	if !validTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future") {
		t.Error("a later version with more fields is refused")
	}
}
