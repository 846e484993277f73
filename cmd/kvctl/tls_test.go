package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTLSToken reaches an agent over loopback TCP with TLS and a bearer
// token: with both it answers; without the token the call fails (exit
// code 1).
func TestTLSToken(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kvctl test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, tokFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "token")
	for path, data := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		tokFile:  []byte("s3cret\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "cfg.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	agent := exec.Command(agentBin, "-memory", "-file", cfg, "-state-dir", dir, "-http", "", "-grpc", "127.0.0.1:0",
		"-grpc-cert", certFile, "-grpc-key", keyFile, "-grpc-token-file", tokFile)
	agent.Stdout, agent.Stderr = &log, &log
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Signal(syscall.SIGTERM)
		_ = agent.Wait()
	})
	// The agent takes a free port (port 0) and logs the address it bound.
	const mark = " listener=grpc address="
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" {
		if out := log.String(); strings.Contains(out, mark) {
			_, rest, _ := strings.Cut(out, mark)
			addr, _, _ = strings.Cut(rest, " ")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not log its gRPC listener's address:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		out, code := kvctl(t, "--server", addr, "--tls-ca", certFile, "--token-file", tokFile, "status", "linux/interface/veth2")
		if code == 0 && strings.Contains(out, "CONFIGURED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kvctl over TLS: exit code %d\n%s\n%s", code, out, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, code := kvctl(t, "--server", addr, "--tls-ca", certFile, "status"); code != 1 || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("without the token: exit code %d, want 1\n%s", code, out)
	}
}
