package api_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/net/http2"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1/apiv1connect"
	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// closedWithin reports whether the server closes c (a read sees EOF or a
// reset) within d; what the server writes first (a 408, say) is read and
// dropped.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A client that announces a body and sends less is cut off at the read
// timeout; without the timeout it would hold the connection forever.
func TestLimitBodyReadTimeout(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{ReadTimeout: time.Second}})
	c, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/plan HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}", e.srv.Addr())
	if !closedWithin(c, 20*time.Second) {
		t.Fatal("the connection of a client that sent 2 of 100 bytes is still open after 20 s (read timeout 1 s)")
	}
}

// Fifty clients sending their headers at a byte a second are all cut off
// at the header timeout.
func TestLimitSlowClients(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{ReadHeaderTimeout: time.Second}})
	const n = 50
	var wg sync.WaitGroup
	open := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", e.srv.Addr())
			if err != nil {
				open <- i
				return
			}
			defer c.Close()
			done := make(chan bool, 1)
			go func() { done <- closedWithin(c, 30*time.Second) }()
			req := "GET /v1/readiness HTTP/1.1\r\nHost: " + e.srv.Addr() + "\r\n"
			for j := 0; j < len(req); j++ {
				select {
				case closed := <-done:
					if !closed {
						open <- i
					}
					return
				case <-time.After(time.Second):
				}
				if _, err := c.Write([]byte{req[j]}); err != nil {
					return // closed by the server
				}
			}
			if !<-done {
				open <- i
			}
		}()
	}
	wg.Wait()
	close(open)
	if len(open) > 0 {
		t.Fatalf("%d of %d slow clients stayed open past 30 s (header timeout 1 s)", len(open), n)
	}
}

// An idle keep-alive connection is closed at the idle timeout.
func TestLimitIdleTimeout(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{IdleTimeout: time.Second}})
	c, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", e.srv.Addr())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	if !closedWithin(c, 20*time.Second) {
		t.Fatal("an idle connection is still open after 20 s (idle timeout 1 s)")
	}
}

// Headers beyond the bound are refused.
func TestLimitHeaderBytes(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{MaxHeaderBytes: 4096}})
	req, _ := http.NewRequest("GET", e.base+"/v1/readiness", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 16<<10))
	resp, err := h1().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("16 KiB of headers: %d, want 431", resp.StatusCode)
	}
}

// A message beyond the bound is RESOURCE_EXHAUSTED on every transport (and
// 413 or 400-class over REST), one within it is read: the bound is the same
// for gRPC as for the rest.
func TestLimitMessageBytes(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{MaxMessageBytes: 1 << 20}})
	big := &apiv1.CommitRequest{Description: strings.Repeat("d", 2<<20)}
	small := &apiv1.CommitRequest{Description: strings.Repeat("d", 512<<10)}
	for _, tr := range transports {
		c := tr.client(e.base)
		_, err := c.Commit(ctx(t), connect.NewRequest(big))
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Errorf("%s: 2 MiB with a bound of 1 MiB: %v, want RESOURCE_EXHAUSTED", tr.name, err)
		}
		// Within the bound: read, and refused for the description's
		// own bound, naming it.
		_, err = c.Commit(ctx(t), connect.NewRequest(small))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.HasPrefix(connectMessage(err), "description:") {
			t.Errorf("%s: 512 KiB: %v, want INVALID_ARGUMENT naming description", tr.name, err)
		}
	}
	resp, err := h1().Post(e.base+"/v1/commit", "application/json", strings.NewReader(`{"description":"`+strings.Repeat("d", 3<<20)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode == 404 {
		t.Errorf("REST: 3 MiB with a bound of 1 MiB: %d", resp.StatusCode)
	}
}

// With the default bounds, a commit larger than gRPC's usual 4 MB receive
// limit goes through over gRPC (a value of 5 MiB), and a commit of more
// values than apilimits allows is refused for their count, naming it.
//
// The test moves about 350 MB through the API (the 5 MiB value is
// decoded, copied, persisted and recorded several times, and the second
// commit carries MaxCommitKeys+1 keys): about 1 s alone, but 9 s under
// -race, where every large allocation costs the detector's shadow memory
// work, and up to 30 s when CI runs every package at once. Its deadline
// is therefore its own, not ctx's 30 s, nor the transports' clients' 30 s
// timeout (which bounded it still: "Client.Timeout exceeded while
// awaiting headers" after 36 s on a loaded machine).
func TestLimitDefaultMessageServesLargeCommits(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	c := apiv1connect.NewAgentServiceClient(&http.Client{Transport: &http.Transport{Protocols: p}}, e.base, connect.WithGRPC())
	big := strings.Repeat("x", 5<<20)
	long, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp, err := c.Commit(long, connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value("iface/big", big)}}))
	if err != nil || resp.Msg.GetSeq() == 0 {
		t.Fatalf("a commit of 5 MiB over gRPC: %v", err)
	}
	e.want(t, "iface/big", big)
	_, err = c.Commit(long, connect.NewRequest(&apiv1.CommitRequest{Deletes: make([]string, apilimits.MaxCommitKeys+1)}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.HasPrefix(connectMessage(err), "values, deletes:") {
		t.Fatalf("a commit of %d deletes over gRPC: %v, want INVALID_ARGUMENT naming values, deletes", apilimits.MaxCommitKeys+1, err)
	}
}

// The server announces its bound of concurrent streams to an HTTP/2 client.
func TestLimitConcurrentStreams(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{MaxConcurrentStreams: 7}})
	c, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || v != 7 {
		t.Fatalf("MAX_CONCURRENT_STREAMS %d (set %v), want 7", v, ok)
	}
}

// A connection beyond the bound is closed at once; one is accepted again
// once another closes.
func TestLimitConnections(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{MaxConnections: 3}})
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", e.srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// The server has accepted the three once each answers.
	for _, c := range conns {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", e.srv.Addr())
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("within the bound: %v %v", resp, err)
		}
	}
	extra, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if !closedWithin(extra, 20*time.Second) {
		t.Fatal("a fourth connection with a bound of 3 stays open")
	}
	conns[0].Close()
	var resp *http.Response
	eventually(t, "a connection accepted again", func() bool {
		c, err := net.Dial("tcp", e.srv.Addr())
		if err != nil {
			return false
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", e.srv.Addr())
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && resp.StatusCode == 200
	})
}

// On the tokenless default, a request of a web page is refused: a foreign
// Origin, a Host that is not the listen address (DNS rebinding). The
// agent's own origin, and any origin with a token, are served.
func TestOriginAndHost(t *testing.T) {
	e := newEnv(t, envOptions{})
	own := "http://" + e.srv.Addr()
	do := func(method, path, origin, host string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("{}")
		}
		req, _ := http.NewRequest(method, e.base+path, body)
		if method == "POST" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Connect-Protocol-Version", "1")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := h1().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name, method, path, origin, host string
		want                             int
		arg                              string
	}{
		{"foreign origin, REST write", "POST", "/scheduler/downstream-resync", "http://evil.example", "", 403, "origin:"},
		{"foreign origin, Connect", "POST", "/kvdescriptor.api.v1.AgentService/Readiness", "https://evil.example", "", 403, "origin:"},
		{"rebinding, REST read", "GET", "/scheduler/dump", "", "evil.example:" + port(e.srv.Addr()), 403, "host:"},
		{"rebinding, Connect read", "POST", "/kvdescriptor.api.v1.AgentService/Dump", "", "evil.example", 403, "host:"},
		{"own origin", "POST", "/kvdescriptor.api.v1.AgentService/Readiness", own, "", 200, ""},
		{"localhost", "GET", "/v1/readiness", "", "localhost:" + port(e.srv.Addr()), 200, ""},
		{"no origin", "GET", "/v1/readiness", "", "", 200, ""},
	} {
		code, body := do(c.method, c.path, c.origin, c.host)
		if code != c.want || !strings.Contains(body, c.arg) {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, code, body, c.want, c.arg)
		}
	}
	// Over gRPC too: PERMISSION_DENIED.
	cl := transports[0].client(e.base, connect.WithInterceptors(header("Origin", "http://evil.example")))
	if _, err := cl.Readiness(ctx(t), connect.NewRequest(&apiv1.ReadinessRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("gRPC with a foreign origin: %v", err)
	}

	// With a token, the token guards: a page cannot send it.
	te := newEnv(t, envOptions{token: "s3cret"})
	cl = transports[0].client(te.base, connect.WithInterceptors(header("Origin", "http://elsewhere.example"), header("Authorization", "Bearer s3cret")))
	if _, err := cl.Readiness(ctx(t), connect.NewRequest(&apiv1.ReadinessRequest{})); err != nil {
		t.Errorf("with the token: %v", err)
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// header sets a request header of every call.
func header(name, value string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(c2 ctxT, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set(name, value)
			return next(c2, req)
		}
	}
}

// TLS: the server speaks gRPC over TLS (HTTP/2 by ALPN) and REST.
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	e := newEnv(t, envOptions{tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, token: "t0k", addr: "127.0.0.1:0"})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	cl := apiv1connect.NewAgentServiceClient(hc, e.base, connect.WithGRPC(), connect.WithInterceptors(header("Authorization", "Bearer t0k")))
	if _, err := cl.Readiness(ctx(t), connect.NewRequest(&apiv1.ReadinessRequest{})); err != nil {
		t.Fatalf("gRPC over TLS: %v", err)
	}
	req, _ := http.NewRequest("GET", e.base+"/v1/readiness", nil)
	req.Header.Set("Authorization", "Bearer t0k")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("REST over TLS: %d %s", resp.StatusCode, resp.Proto)
	}
}

// A TCP address beyond the loopback needs TLS and a token.
func TestListenRefusesExposedWithoutTLS(t *testing.T) {
	if _, _, err := api.Listen("0.0.0.0:0", false); err == nil || !strings.Contains(err.Error(), "TLS and a token") {
		t.Fatalf("0.0.0.0 without TLS: %v", err)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// The read timeout bounds the reading of a request, not a stream's life:
// a Watch (its request read long ago) outlives it over HTTP/2 and 1.
func TestLimitReadTimeoutSparesStreams(t *testing.T) {
	e := newEnv(t, envOptions{limits: api.Limits{ReadTimeout: 500 * time.Millisecond, IdleTimeout: 500 * time.Millisecond}})
	for _, tr := range transports[:3] {
		c := tr.client(e.base)
		s, err := c.Watch(ctx(t), connect.NewRequest(&apiv1.WatchRequest{Prefix: "iface/" + tr.name}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_ = s.ResponseHeader()
		// Well past the timeouts.
		time.Sleep(2 * time.Second)
		key := "iface/" + tr.name
		if _, err := c.Commit(ctx(t), connect.NewRequest(&apiv1.CommitRequest{Values: []*apiv1.Value{value(key, "v")}})); err != nil {
			t.Fatal(err)
		}
		got := false
		for !got && s.Receive() {
			got = s.Msg().GetStatus().GetKey() == key
		}
		if !got {
			t.Errorf("%s: the Watch ended past the read timeout: %v", tr.name, s.Err())
		}
	}
}
