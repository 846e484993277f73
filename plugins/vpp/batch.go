package vpp

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
)

// window is how many requests a pipeline sends ahead of their replies.
// The stream's reply buffer holds as many, so that no reply waits for a
// place: govpp drops a reply that its reader has not taken within 100ms.
const window = 256

// pipeline sends the requests on one stream, each without waiting for
// the replies to those before it (up to window ahead), and returns the
// error of each (nil: applied), naming the call. A nil request is skipped
// and its error left nil. VPP answers the requests of a client in order,
// so the replies are matched to the requests by their order; after an
// error of the stream itself (a timeout, a lost connection) that order
// is lost, and every request not answered yet fails with it.
func (p *Plugin) pipeline(ctx context.Context, reqs []api.Message) []error {
	errs := make([]error, len(reqs))
	failAll := func(from int, sent []int, err error) []error {
		for _, i := range sent {
			errs[i] = vppErr(reqs[i].GetMessageName(), err)
		}
		for i := from; i < len(reqs); i++ {
			if reqs[i] != nil {
				errs[i] = vppErr(reqs[i].GetMessageName(), err)
			}
		}
		return errs
	}
	s, err := p.conn.NewStream(ctx, core.WithReplySize(window))
	if err != nil {
		return failAll(0, nil, err)
	}
	defer func() { _ = s.Close() }()
	var sent []int // the requests sent whose reply is due, in order
	recv := func() error {
		m, err := s.RecvMsg()
		if err != nil {
			return err
		}
		i := sent[0]
		sent = sent[1:]
		errs[i] = vppErr(reqs[i].GetMessageName(), retval(m))
		return nil
	}
	for i, r := range reqs {
		if r == nil {
			continue
		}
		if len(sent) == window {
			if err := recv(); err != nil {
				return failAll(i, sent, err)
			}
		}
		if err := s.SendMsg(r); err != nil {
			return failAll(i, sent, err)
		}
		sent = append(sent, i)
	}
	for len(sent) > 0 {
		if err := recv(); err != nil {
			return failAll(len(reqs), sent, err)
		}
	}
	return errs
}

// retval returns the error that a reply's retval stands for.
func retval(reply api.Message) error {
	if f := reflect.ValueOf(reply).Elem().FieldByName("Retval"); f.Kind() == reflect.Int32 {
		return api.RetvalToVPPApiError(int32(f.Int()))
	}
	return nil
}

// apply builds the request that adds (or removes) one value and sends it:
// the Create and Delete of handlers whose Batch sends many.
func apply[K, V any](ctx context.Context, p *Plugin, build func(K, V, bool) (api.Message, error), k K, v V, add bool) error {
	req, err := build(k, v, add)
	if err != nil {
		return err
	}
	return p.pipeline(ctx, []api.Message{req})[0]
}

// batch applies creates or deletes with one request each, built by
// build and sent on one stream (pipeline): the Batch of handlers without
// Update. Each operation's Err names its key, and the call when VPP
// refused it.
func batch[K fmt.Stringer, V proto.Message, M any](ctx context.Context, p *Plugin, kind kv.BatchKind, ops []kv.BatchOp[K, V, M], build func(K, V, bool) (api.Message, error)) {
	reqs := make([]api.Message, len(ops))
	for i := range ops {
		op := &ops[i]
		var err error
		if kind == kv.BatchUpdate {
			err = kv.NonRetriable(errors.New("no update in place: a change re-creates"))
		} else {
			reqs[i], err = build(op.Key, op.Value, kind == kv.BatchCreate)
		}
		if err != nil {
			op.Err = fmt.Errorf("%s: %w", op.Key, err)
		}
	}
	for i, err := range p.pipeline(ctx, reqs) {
		if err != nil {
			ops[i].Err = fmt.Errorf("%s: %w", ops[i].Key, err)
		}
	}
}
