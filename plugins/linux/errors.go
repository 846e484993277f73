//go:build linux

package linux

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// isGone reports whether err says that the object addressed is not there.
func isGone(err error) bool {
	var lnf netlink.LinkNotFoundError
	return errors.As(err, &lnf) ||
		errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) ||
		errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EADDRNOTAVAIL)
}

// notFound marks err with kv.ErrNotFound when it says that the object is
// gone, so that a Delete of something already deleted succeeds.
func notFound(err error) error {
	if err == nil || !isGone(err) {
		return err
	}
	return fmt.Errorf("%w: %w", kv.ErrNotFound, err)
}

// kernelErr wraps the error of a kernel call with the command that
// failed, written as its `ip` equivalent. Errors that retrying cannot fix
// (an unsupported link type, a bad argument) are marked non-retriable.
func kernelErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf(format+": %w", append(args, err)...)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ERANGE) {
		return kv.NonRetriable(err)
	}
	return err
}

// isUnsupported reports whether err says that the kernel lacks support for
// a link type (its module is missing).
func isUnsupported(err error) bool { return errors.Is(err, unix.EOPNOTSUPP) }

// IsUnsupported reports whether err, returned for a value, says that the
// kernel lacks support for what it asks for (a link type whose module is
// not available).
func IsUnsupported(err error) bool { return isUnsupported(err) }

func isDumpInterrupted(err error) bool { return errors.Is(err, netlink.ErrDumpInterrupted) }
