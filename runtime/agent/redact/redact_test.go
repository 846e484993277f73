package redact

import (
	"strings"
	"testing"
)

// TestConfig: every value under a secret-looking name is
// redacted, whatever its kind; URL passwords and comments go; the rest
// stays.
func TestConfig(t *testing.T) {
	in := `# password: c0mment
name: edge1 # token: l1ne
sources:
  etcd:
    endpoints: ["https://root:u4l-pw@10.0.0.1:2379", "http://10.0.0.2:2379"]
    username: root
    password: e7cd-pw
    tls: {cert_file: /etc/c.pem, key_file: /etc/k.pem, ca_file: /etc/ca.pem}
    client_secret: {value: s3cr3t, rotate: true}
http: {token_file: /etc/tok, address: "127.0.0.1:9191"}
apiKeys: [k1-secret, k2-secret]
anchored: &a an-ch0r
auth_token: *a
`
	out, err := Config([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, secret := range []string{"c0mment", "l1ne", "u4l-pw", "e7cd-pw", "/etc/k.pem", "s3cr3t", "/etc/tok", "k1-secret", "k2-secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("the redacted configuration holds %q:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"name: edge1", "username: root", "https://root:REDACTED@10.0.0.1:2379", "http://10.0.0.2:2379",
		"cert_file: /etc/c.pem", "ca_file: /etc/ca.pem", "key_file: REDACTED", "password: REDACTED", "127.0.0.1:9191", "auth_token: REDACTED"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the redacted configuration lacks %q:\n%s", kept, got)
		}
	}
	if out, err := Config([]byte("password: [unclosed")); err == nil {
		t.Errorf("a configuration that does not parse: %s, want an error", out)
	}
}
