//go:build linux

package linux

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// errMalformed is the error of a message that the kernel would not send:
// shorter than its header, or with an attribute running past its end.
var errMalformed = errors.New("netlink: malformed message")

// dump sends the dump request req (a netlink message whose flags and
// sequence number the socket sets) and calls each with the type and body
// (what follows the netlink header) of every message of the reply, until
// NLMSG_DONE. The body aliases the socket's read buffer: it is valid only
// during the call. Once each returns an error, the rest of the dump is read
// and dropped, and dump returns that error; a dump that the kernel marked
// interrupted (NLM_F_DUMP_INTR: its results may be inconsistent) returns
// nl.ErrDumpInterrupted once read to its end, as does one whose messages a
// receive buffer overrun dropped.
func (s *batchSocket) dump(req []byte, each func(typ uint16, body []byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ne := nl.NativeEndian()
	s.seq++
	seq := s.seq
	ne.PutUint16(req[6:8], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:12], seq)
	if err := s.write(req); err != nil {
		return fmt.Errorf("netlink sendmsg: %w", err)
	}
	var (
		interrupted error // why the results may be incomplete, if they may
		failed      error // each's first error
	)
	for {
		if err := s.f.SetReadDeadline(time.Now().Add(batchTimeout)); err != nil {
			return err
		}
		nr, err := s.read(true)
		if errors.Is(err, unix.ENOBUFS) {
			// The kernel dropped some of the dump; it goes on with the rest.
			s.overruns++
			interrupted = fmt.Errorf("netlink: receive buffer overrun: %w", nl.ErrDumpInterrupted)
			continue
		}
		if err != nil {
			return fmt.Errorf("netlink: reading the dump: %w", err)
		}
		for b := s.rbuf[:nr]; len(b) >= unix.SizeofNlMsghdr; {
			size := int(ne.Uint32(b[0:4]))
			if size < unix.SizeofNlMsghdr || size > len(b) {
				return errMalformed
			}
			h := syscall.NlMsghdr{
				Len:   uint32(size),
				Type:  ne.Uint16(b[4:6]),
				Flags: ne.Uint16(b[6:8]),
				Seq:   ne.Uint32(b[8:12]),
				Pid:   ne.Uint32(b[12:16]),
			}
			body := b[unix.SizeofNlMsghdr:size]
			b = b[min(nlmAlign(size), len(b)):]
			if h.Seq != seq || h.Pid != s.pid {
				continue // not of this dump
			}
			if h.Flags&unix.NLM_F_DUMP_INTR != 0 && interrupted == nil {
				interrupted = nl.ErrDumpInterrupted
			}
			switch h.Type {
			case unix.NLMSG_ERROR:
				// The kernel refused the dump.
				if err := ackErr(syscall.NetlinkMessage{Header: h, Data: body}); err != nil {
					return err
				}
				return errors.New("netlink: the dump was acknowledged, not answered")
			case unix.NLMSG_DONE:
				if err := doneErr(h, body); err != nil {
					return err
				}
				if failed != nil {
					return failed
				}
				return interrupted
			}
			if failed == nil {
				failed = each(h.Type, body)
			}
		}
	}
}

// doneErr is the error that the NLMSG_DONE ending a dump reports, nil if
// none: the errno, and the kernel's message when it gives one (right
// after the errno: unlike NLMSG_ERROR, no request is echoed).
func doneErr(h syscall.NlMsghdr, body []byte) error {
	if len(body) < 4 {
		return nil
	}
	errno := int32(nl.NativeEndian().Uint32(body[:4]))
	if errno == 0 {
		return nil
	}
	err := error(unix.Errno(-errno))
	if h.Flags&unix.NLM_F_ACK_TLVS == 0 {
		return err
	}
	for a := body[4:]; len(a) >= unix.SizeofRtAttr; {
		size := int(nl.NativeEndian().Uint16(a[0:2]))
		if size < unix.SizeofRtAttr || size > len(a) {
			break
		}
		if nl.NativeEndian().Uint16(a[2:4]) == unix.NLMSGERR_ATTR_MSG {
			if msg := unix.ByteSliceToString(a[unix.SizeofRtAttr:size]); msg != "" {
				return fmt.Errorf("%w: %s", err, msg)
			}
		}
		a = a[min(rtaAlign(size), len(a)):]
	}
	return err
}

// rtaAlign rounds an attribute length up to the 4-byte alignment.
func rtaAlign(n int) int { return (n + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1) }
