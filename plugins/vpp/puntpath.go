package vpp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// maxSocketPath is the longest socket path VPP takes: its sun_path holds
// 108 bytes with the terminating NUL.
const maxSocketPath = 107

// checkSocketPath says why the plugin refuses the socket path p of a punt
// value (naming the field socket_path): VPP sends packets to whatever
// socket the path names, so it must be absolute and clean, short enough
// for VPP, and under a directory of WithPuntSocketDirs, also once the
// symbolic links of the path (or, while the socket does not exist yet,
// of its directory) are resolved. A path whose directory does not exist
// yet is judged by its text.
func (p *Plugin) checkSocketPath(path string) error {
	dirs := p.opts.puntDirs
	switch {
	case !filepath.IsAbs(path) || filepath.Clean(path) != path:
		return kv.Invalid("socket_path", "%q is not an absolute path in its shortest form", path)
	case len(path) > maxSocketPath:
		return kv.Invalid("socket_path", "%s: %d bytes, VPP takes at most %d", path, len(path), maxSocketPath)
	case len(dirs) == 0:
		return kv.Invalid("socket_path", "%s: the plugin allows no directory of punt sockets (WithPuntSocketDirs)", path)
	}
	under := func(path string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool {
			rel, err := filepath.Rel(d, path)
			return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
		})
	}
	if !under(path) {
		return kv.Invalid("socket_path", "%s is not under a directory the plugin allows (%s)", path, strings.Join(dirs, ", "))
	}
	real, err := filepath.EvalSymlinks(path)
	if _, lerr := os.Lstat(path); err != nil && lerr == nil {
		return kv.Invalid("socket_path", "%s leads to no file (%v)", path, err)
	} else if err != nil { // no socket yet: where its directory leads
		dir, derr := filepath.EvalSymlinks(filepath.Dir(path))
		if derr != nil {
			return nil // no directory either: nothing leads elsewhere
		}
		real = filepath.Join(dir, filepath.Base(path))
	}
	if !under(real) {
		return kv.Invalid("socket_path", "%s leads to %s, not under a directory the plugin allows (%s)", path, real, strings.Join(dirs, ", "))
	}
	return nil
}
