//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Sizes and bounds of a batch socket.
const (
	// batchWriteBytes bounds one sendmsg: about 1,900 route requests. The
	// kernel refuses a write longer than the socket's send buffer, so the
	// bound shrinks to fit the buffer it gets.
	batchWriteBytes = 128 << 10
	// batchRcvbuf is the receive buffer asked for: beyond
	// net.core.rmem_max as root (SO_RCVBUFFORCE), else what it allows.
	batchRcvbuf = 4 << 20
	// replyCost is a generous estimate of what one reply (an NLMSG_ERROR
	// with its extended ACK, in an skb of its own) takes of the receive
	// buffer. A write holds at most rcvbuf/replyCost requests, so that its
	// replies fit even when every request fails.
	replyCost = 1024
	// batchTimeout bounds the wait for a write's replies. rtnetlink
	// answers a write before sendmsg returns, so it is only a safety net.
	batchTimeout = 30 * time.Second
)

// batchSocket is a netlink route socket in one network namespace that
// sends "do" requests (RTM_NEWROUTE, RTM_DELROUTE, ...: requests whose only
// reply is an ACK or an error) in batches, the way FRR's zebra programs
// routes: many requests per sendmsg, an ACK asked for only on the last of
// each write. The kernel answers every failed request with an
// NLMSG_ERROR whether it asked for an ACK or not, matched back to its
// request by sequence number.
//
// It relies on rtnetlink carrying out a write synchronously: when sendmsg
// returns, every request in it has been carried out, in order, and its
// reply (if any) queued. The reply to the write's last request is then
// the write's last reply, and a request with no reply before it
// succeeded, unless the receive buffer overran (recvmsg fails with
// ENOBUFS once): then any reply may have been dropped. The write's
// requests without a reply are then sent again, each asking for an ACK,
// in writes small enough for their replies to fit, and their errors are
// marked as a resentError: an EEXIST or ESRCH on a resend may be the
// first send's own doing. No request is ever reported as done without a
// reply or a later reply that proves it.
//
// It also reads dumps (see dump): the route descriptor's Retrieve reads
// the namespace's routes through it.
//
// A batchSocket serialises its callers: one batch or dump at a time.
type batchSocket struct {
	mu   sync.Mutex
	f    *os.File
	conn syscall.RawConn
	pid  uint32 // the socket's port id, the kernel's destination
	seq  uint32 // the last sequence number sent

	writeBytes int    // most bytes per sendmsg
	fit        int    // replies that fit the receive buffer
	perWrite   int    // most requests per write in a first pass: fit, unless a test says otherwise
	ackAll     bool   // an ACK asked for on every request of a first pass (tests: provokes overruns)
	afterWrite func() // tests: called after each write is sent, before its replies are read
	overruns   int    // receive buffer overruns met

	wbuf, rbuf []byte
}

// openBatchSocket opens a netlink route socket in ns with a receive
// buffer of about rcvbuf bytes.
func openBatchSocket(ns netns.NsHandle, rcvbuf int) (*batchSocket, error) {
	var fd int
	// A netlink socket belongs to the namespace of the thread that opens it.
	err := inNamespace(ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlink route socket: %w", err)
	}
	s := &batchSocket{rbuf: make([]byte, 64<<10)}
	if err := s.setup(fd, rcvbuf); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink route socket: %w", err)
	}
	// A non-blocking descriptor joins the runtime's poller: reads wait
	// without holding a thread, and deadlines bound them.
	s.f = os.NewFile(uintptr(fd), "netlink-route")
	if s.conn, err = s.f.SyscallConn(); err != nil {
		s.f.Close()
		return nil, fmt.Errorf("netlink route socket: %w", err)
	}
	return s, nil
}

// setup binds the socket and sizes its buffers.
func (s *batchSocket) setup(fd, rcvbuf int) error {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fmt.Errorf("getsockname: %w", err)
	}
	nsa, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		return fmt.Errorf("getsockname: %T, not a netlink address", sa)
	}
	s.pid = nsa.Pid
	// The kernel's message with each error (extended ACK), and errors that
	// echo the request's header only (capped ACK): replies stay small.
	// Kernels without either still answer, with less.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	// Dumps filtered by the kernel (see dump): it then checks dump
	// requests strictly and honours their filters. Older kernels ignore
	// the filters; the caller filters again.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1)

	snd, err := sizeBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, 2*batchWriteBytes)
	if err != nil {
		return err
	}
	s.writeBytes = max(unix.Getpagesize(), min(batchWriteBytes, snd/2))
	rcv, err := sizeBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, rcvbuf)
	if err != nil {
		return err
	}
	s.fit = max(1, rcv/replyCost)
	s.perWrite = s.fit
	return nil
}

// sizeBuffer asks for a socket buffer of size bytes, beyond the system's
// limit if the process may (force), else up to that limit, and returns the
// size the kernel accounts (twice what was asked, for its overhead).
func sizeBuffer(fd, force, plain, size int) (int, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size); err != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size); err != nil {
			return 0, fmt.Errorf("setsockopt: %w", err)
		}
	}
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
	if err != nil {
		return 0, fmt.Errorf("getsockopt: %w", err)
	}
	return got, nil
}

// Close closes the socket.
func (s *batchSocket) Close() error { return s.f.Close() }

// resentError is the error of a request that was sent a second time
// because the reply to the first went lost in a receive buffer overrun:
// an EEXIST or ESRCH may then be the first send's own doing.
type resentError struct{ err error }

func (e *resentError) Error() string {
	return e.err.Error() + " (request sent again: the reply to the first went lost)"
}

func (e *resentError) Unwrap() error { return e.err }

// errNoOutcome is the error of a request whose reply went lost however
// often it was sent.
var errNoOutcome = errors.New("netlink: no reply to the request (receive buffer overrun); its outcome is unknown")

// do sends the requests and returns one error per request: nil for a
// request carried out, else the kernel's error (an errno, with the
// kernel's message if it gave one). The socket sets each request's
// sequence number and ACK flag. ctx stops the batch between writes: the
// requests not sent get its error.
func (s *batchSocket) do(ctx context.Context, reqs []*nl.NetlinkRequest) []error {
	msgs := make([][]byte, len(reqs))
	for i, r := range reqs {
		msgs[i] = r.Serialize()
	}
	return s.send(ctx, msgs)
}

// send is do for requests already written: msgs[i] is request i, whose
// flags and sequence number send sets.
func (s *batchSocket) send(ctx context.Context, msgs [][]byte) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	todo := make([]int, len(msgs))
	for i := range todo {
		todo[i] = i
	}
	errs := make([]error, len(msgs))
	uncertain := s.exchange(ctx, msgs, todo, errs, false, s.perWrite)
	// Resend what an overrun left without an outcome, each asking for an
	// ACK, in writes whose replies fit the buffer: halved after each
	// overrun, down to one request per write, which always fits.
	for chunk := s.fit; len(uncertain) > 0; chunk = max(1, chunk/2) {
		again := s.exchange(ctx, msgs, uncertain, errs, true, chunk)
		if len(again) > 0 && chunk == 1 {
			for _, i := range again {
				errs[i] = errNoOutcome
			}
			break
		}
		uncertain = again
	}
	return errs
}

// exchange sends the requests msgs[idx...], at most chunk per write, sets
// errs of those whose outcome it learns and returns those whose outcome an
// overrun hid. A resend asks for an ACK on every request, a first send on
// each write's last only (unless the socket's ackAll says otherwise), and
// marks the errors it gets as resentError.
func (s *batchSocket) exchange(ctx context.Context, msgs [][]byte, idx []int, errs []error, resend bool, chunk int) (uncertain []int) {
	ackEach := resend || s.ackAll
	replied := make([]bool, min(chunk, len(idx)))
	for len(idx) > 0 {
		if err := ctx.Err(); err != nil {
			for _, i := range idx {
				errs[i] = fmt.Errorf("netlink: not sent: %w", err)
			}
			return uncertain
		}
		n, size := 0, 0
		for n < len(idx) && n < chunk && (n == 0 || size+len(msgs[idx[n]]) <= s.writeBytes) {
			size += len(msgs[idx[n]])
			n++
		}
		w := idx[:n]
		idx = idx[n:]
		first := s.seq + 1
		s.wbuf = s.wbuf[:0]
		for k, i := range w {
			m := msgs[i]
			flags := nl.NativeEndian().Uint16(m[6:8]) &^ unix.NLM_F_ACK
			if ackEach || k == n-1 {
				flags |= unix.NLM_F_ACK
			}
			nl.NativeEndian().PutUint16(m[6:8], flags)
			s.seq++
			nl.NativeEndian().PutUint32(m[8:12], s.seq)
			s.wbuf = append(s.wbuf, m...)
		}
		if err := s.write(s.wbuf); err != nil {
			// A failed sendmsg reaches no request.
			for _, i := range w {
				errs[i] = fmt.Errorf("netlink sendmsg: %w", err)
			}
			continue
		}
		if s.afterWrite != nil {
			s.afterWrite()
		}
		clear(replied)
		overrun, err := s.replies(first, w, replied[:n], errs, resend)
		for k, i := range w {
			switch {
			case replied[k]:
			case err != nil:
				errs[i] = fmt.Errorf("netlink: reading the replies: %w", err)
			case overrun:
				uncertain = append(uncertain, i)
			default:
				errs[i] = nil // no error before the last reply: done
			}
		}
		if err != nil {
			// The socket fails: stop here rather than wait on each write.
			for _, i := range idx {
				errs[i] = fmt.Errorf("netlink: not sent: %w", err)
			}
			return uncertain
		}
	}
	return uncertain
}

// replies reads the replies to the write of the requests w, numbered from
// first, until the last one's reply, and sets replied and errs of those
// answered (errors of a resend as resentError). After an overrun, it reads
// what is queued and stops.
func (s *batchSocket) replies(first uint32, w []int, replied []bool, errs []error, resend bool) (overrun bool, err error) {
	if err := s.f.SetReadDeadline(time.Now().Add(batchTimeout)); err != nil {
		return false, err
	}
	for {
		nr, err := s.read(!overrun)
		switch {
		case errors.Is(err, unix.ENOBUFS):
			overrun = true
			s.overruns++
			continue
		case overrun && errors.Is(err, unix.EAGAIN):
			return true, nil // all read that the overrun left
		case err != nil:
			return overrun, err
		}
		msgs, err := syscall.ParseNetlinkMessage(s.rbuf[:nr])
		if err != nil {
			return overrun, err
		}
		for _, m := range msgs {
			off := m.Header.Seq - first
			if m.Header.Type != unix.NLMSG_ERROR || m.Header.Pid != s.pid || off >= uint32(len(w)) {
				continue // not a reply to this write
			}
			replied[off] = true
			err := ackErr(m)
			if err != nil && resend {
				err = &resentError{err}
			}
			errs[w[off]] = err
			if !overrun && int(off) == len(w)-1 {
				return false, nil
			}
		}
	}
}

// write sends b in one sendmsg to the kernel.
func (s *batchSocket) write(b []byte) error {
	var werr error
	err := s.conn.Write(func(fd uintptr) bool {
		werr = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return werr != unix.EAGAIN
	})
	if werr != nil {
		return werr
	}
	return err
}

// read reads one datagram from the kernel into s.rbuf, waiting for it
// (until the read deadline) or not.
func (s *batchSocket) read(wait bool) (int, error) {
	for {
		var (
			n    int
			from unix.Sockaddr
			rerr error
		)
		err := s.conn.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), s.rbuf, 0)
			return !wait || rerr != unix.EAGAIN
		})
		if rerr != nil {
			return 0, rerr
		}
		if err != nil {
			return 0, err
		}
		if sa, ok := from.(*unix.SockaddrNetlink); ok && sa.Pid == 0 {
			return n, nil
		}
		// not from the kernel: drop it
	}
}

// ackErr is the error that an NLMSG_ERROR reports, nil for an ACK: the
// errno, and the kernel's message when the reply carries one.
func ackErr(m syscall.NetlinkMessage) error {
	d := m.Data
	if len(d) < 4 {
		return errors.New("netlink: truncated error message")
	}
	errno := int32(nl.NativeEndian().Uint32(d[:4]))
	if errno == 0 {
		return nil
	}
	err := error(unix.Errno(-errno))
	// After the errno: the request's header (capped) or the whole request,
	// then the extended ACK's attributes.
	rest := d[4:]
	if m.Header.Flags&unix.NLM_F_ACK_TLVS == 0 || len(rest) < unix.SizeofNlMsghdr {
		return err
	}
	echoed := unix.SizeofNlMsghdr
	if m.Header.Flags&unix.NLM_F_CAPPED == 0 {
		echoed = nlmAlign(int(nl.NativeEndian().Uint32(rest[:4])))
	}
	if echoed > len(rest) {
		return err
	}
	attrs, perr := nl.ParseRouteAttr(rest[echoed:])
	if perr != nil {
		return err
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.NLMSGERR_ATTR_MSG {
			if msg := unix.ByteSliceToString(a.Value); msg != "" {
				return fmt.Errorf("%w: %s", err, msg)
			}
		}
	}
	return err
}

// nlmAlign rounds a netlink message length up to the 4-byte alignment.
func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
