package southbound

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	vpppunt "github.com/kvdescriptor/kvdescriptor/generated/vpp/punt/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/agent"
)

// TestVPPPuntSocketDirs: the VPP plugin of the agent takes punt sockets
// only under southbound.vpp.punt_socket_dirs, and none without it.
func TestVPPPuntSocketDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v := &vpppunt.ToHost{Port: 53, L3Protocol: vpppunt.L3Protocol_IPV4, SocketPath: filepath.Join(dir, "dns.sock")}
	for _, c := range []struct {
		dirs  []string
		valid bool
	}{{nil, false}, {[]string{dir}, true}} {
		var cfg agent.Config
		cfg.Southbound.VPP.Socket, cfg.Southbound.VPP.PuntSocketDirs = mockVPPSocket, c.dirs
		p := VPP()
		ds, err := p.Start(agent.Env{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Resync: func(string) {}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range ds {
			if d.Name() == vpppunt.ToHostModelName {
				found = true
				if err := d.Validate(vpppunt.ToHostKeyFor(v), v); (err == nil) != c.valid {
					t.Errorf("punt_socket_dirs %v: Validate: %v, want valid %v", c.dirs, err, c.valid)
				}
			}
		}
		if !found {
			t.Errorf("no descriptor %s among %d", vpppunt.ToHostModelName, len(ds))
		}
		if err := p.(interface{ Close() error }).Close(); err != nil {
			t.Error(err)
		}
	}
}
