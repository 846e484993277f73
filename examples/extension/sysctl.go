// Package extension adds a new item type to the agent (examples/agent)
// with an annotated model and its handler, and nothing else: a Linux
// kernel parameter (sysctl) of a network namespace.
//
// The model is models/examples/sysctl/v1/sysctl.proto: key
// linux/sysctl/{namespace}/{name}, the value the setting, e.g.
//
//	linux/sysctl/blue/net.ipv4.ip_forward:
//	  namespace: blue
//	  name: net.ipv4.ip_forward
//	  value: "1"
//
// `make generate` turns it into typed keys, validation and a typed
// descriptor (generated/examples/sysctl/v1); this package holds the
// handler's bodies and an init function that registers them with the
// agent's extension point (examples/agent/ext). The agent links the
// package with a blank import, and its file and etcd sources, HTTP and
// gRPC APIs and kvctl's reads know the model from then on, through the
// scheduler; nothing in runtime/ or plugins/ knows about it.
//
// The handler writes /proc/sys/<name, dots as slashes> inside the
// namespace, named as `ip netns` names them (a file under /var/run/netns),
// on an OS thread locked and moved into it. What Delete does: it restores
// the value found before the first write, kept as the value's metadata.
// Metadata lives in the agent's memory: after a restart of the agent, a
// sysctl that was already as configured has no known original, and its
// Delete leaves the value as it is (logged). A name must be a sysctl path:
// letters, digits, '.', '_' and '-', no empty part; names with a '/'
// (sysctls of interfaces whose names hold a dot) are not supported.
package extension

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netns"

	"github.com/kvdescriptor/kvdescriptor/examples/agent/ext"
	sysctlv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/sysctl/v1"
	"github.com/kvdescriptor/kvdescriptor/plugins/linux"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

func init() { ext.Register("sysctl", New) }

// New builds the sysctl descriptor. Over the agent's in-memory
// southbound it builds none: it would change the real kernel.
func New(env ext.Env) ([]kv.Descriptor, error) {
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if env.Memory {
		logger.Info("sysctl extension: off over the in-memory southbound")
		return nil, nil
	}
	h := handler{logger: logger, procSys: "/proc/sys"}
	if env.AllowedNetns != nil {
		h.allowed = map[string]bool{}
		for _, n := range env.AllowedNetns {
			h.allowed[n] = true
		}
	}
	d, err := sysctlv1.NewSysctlDescriptor[Original](h)
	if err != nil {
		return nil, err
	}
	return []kv.Descriptor{d}, nil
}

// Original is the metadata of a sysctl: the value found before the agent
// first wrote it, which Delete restores. Known is false when the agent
// never saw it (it found the value already as configured at start).
type Original struct {
	Value string
	Known bool
}

// handler holds the CRUD bodies of examples.sysctl.v1.Sysctl.
type handler struct {
	logger  *slog.Logger
	procSys string
	// allowed, when not nil, holds the only namespaces values may name.
	allowed map[string]bool
}

var (
	_ sysctlv1.SysctlHandler[Original]   = handler{}
	_ sysctlv1.SysctlUpdater[Original]   = handler{}
	_ sysctlv1.SysctlRetriever[Original] = handler{}
	_ sysctlv1.SysctlValidator           = handler{}
)

// Create keeps the current value and writes the new one:
// `ip netns exec <namespace> sysctl -w <name>=<value>`.
func (h handler) Create(_ context.Context, k sysctlv1.SysctlKey, v *sysctlv1.Sysctl) (Original, error) {
	var orig Original
	err := h.inNamespace(k.Namespace, func() error {
		cur, err := h.read(k.Name)
		if err != nil {
			return err
		}
		orig = Original{Value: cur, Known: true}
		return h.write(k.Name, v.GetValue())
	})
	return orig, err
}

// Update writes the new value; the original stays the one found before
// the first write (or, if unknown, becomes the one found now).
func (h handler) Update(_ context.Context, k sysctlv1.SysctlKey, _, v *sysctlv1.Sysctl, orig Original) (Original, error) {
	err := h.inNamespace(k.Namespace, func() error {
		if !orig.Known {
			cur, err := h.read(k.Name)
			if err != nil {
				return err
			}
			orig = Original{Value: cur, Known: true}
		}
		return h.write(k.Name, v.GetValue())
	})
	return orig, err
}

// Delete restores the original value:
// `ip netns exec <namespace> sysctl -w <name>=<original>`. A namespace
// that is gone took its sysctls with it.
func (h handler) Delete(_ context.Context, k sysctlv1.SysctlKey, _ *sysctlv1.Sysctl, orig Original) error {
	if !orig.Known {
		h.logger.Warn("sysctl: original value unknown (set before the agent started): left as it is", "namespace", k.Namespace, "name", k.Name)
		return nil
	}
	err := h.inNamespace(k.Namespace, func() error { return h.write(k.Name, orig.Value) })
	if errors.Is(err, errNoNamespace) {
		return fmt.Errorf("%w: %w", kv.ErrNotFound, err)
	}
	return err
}

// Retrieve reads the current values of the sysctls the scheduler expects
// (`ip netns exec <namespace> sysctl <name>`); a sysctl is one of many
// settings of the kernel, so the others are not listed. Values that differ
// only in white space (the kernel separates the numbers of a vector with
// tabs) are taken as equal.
func (h handler) Retrieve(_ context.Context, correlate []sysctlv1.SysctlItem[Original]) ([]sysctlv1.SysctlItem[Original], error) {
	var out []sysctlv1.SysctlItem[Original]
	for _, it := range correlate {
		var cur string
		err := h.inNamespace(it.Key.Namespace, func() error {
			var err error
			cur, err = h.read(it.Key.Name)
			return err
		})
		if errors.Is(err, errNoNamespace) || errors.Is(err, fs.ErrNotExist) {
			continue // not there: the scheduler creates it when it can
		}
		if err != nil {
			return nil, err
		}
		if slices.Equal(strings.Fields(cur), strings.Fields(it.Value.GetValue())) {
			cur = it.Value.GetValue()
		}
		out = append(out, sysctlv1.SysctlItem[Original]{
			Key:      it.Key,
			Value:    &sysctlv1.Sysctl{Namespace: it.Key.Namespace, Name: it.Key.Name, Value: cur},
			Metadata: it.Metadata,
			Origin:   kv.OriginNB,
		})
	}
	return out, nil
}

// Validate checks what the schema cannot say: that the name is a sysctl
// path, and that the namespace is one the agent may configure (ext.Env's
// AllowedNetns). The schema checks that the namespace is a plain name, a
// file of `ip netns` (format PLAIN_NAME).
func (h handler) Validate(k sysctlv1.SysctlKey, _ *sysctlv1.Sysctl) error {
	var errs *kv.InvalidValueError
	if reason := checkName(k.Name); reason != "" {
		errs = errs.Add("name", "%q is not a sysctl name: %s", k.Name, reason)
	}
	if h.allowed != nil && kv.CheckPlainName(k.Namespace) == "" && !h.allowed[k.Namespace] {
		errs = errs.Add("namespace", "%q is not among the namespaces the agent may configure", k.Namespace)
	}
	return errs.OrNil()
}

// checkName says what is wrong with a sysctl name, "" if nothing.
func checkName(name string) string {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("%q is not allowed (letters, digits, '.', '_' and '-')", r)
		}
	}
	for _, part := range strings.Split(name, ".") {
		if part == "" {
			return "an empty part (\"..\", or a dot at an end)"
		}
	}
	return ""
}

// path is the file of a sysctl under /proc/sys.
func (h handler) path(name string) string {
	return filepath.Join(h.procSys, strings.ReplaceAll(name, ".", "/"))
}

// read reads a sysctl of the calling thread's network namespace.
func (h handler) read(name string) (string, error) {
	b, err := os.ReadFile(h.path(name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// write writes a sysctl of the calling thread's network namespace.
func (h handler) write(name, value string) error {
	f, err := os.OpenFile(h.path(name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

var errNoNamespace = errors.New("no such network namespace")

// inNamespace runs f on an OS thread locked and moved into the named
// network namespace, and moved back afterwards.
func (h handler) inNamespace(name string, f func() error) error {
	ns, err := netns.GetFromName(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", errNoNamespace, name)
		}
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer ns.Close()
	var ferr error
	_, err = linux.OnLockedThread(func() (netns.NsHandle, error) {
		if err := netns.Set(ns); err != nil {
			return netns.None(), fmt.Errorf("enter network namespace %s: %w", name, err)
		}
		ferr = f()
		return netns.None(), nil
	})
	return errors.Join(err, ferr)
}
