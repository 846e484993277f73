package nb

import (
	"slices"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// WithTxnOptions gives the transactions of the sources' updates the
// options opts (Retry, Revert: the policy of an agent), before the options
// of the call (ApplyWith's, a remote client's): an option the call gives
// too is the call's.
func WithTxnOptions(opts ...scheduler.TxnOption) MuxOption {
	return func(o *muxOptions) { o.txnOpts = slices.Clone(opts) }
}

// WithStartupTxnOptions gives the startup resync the options opts (a
// Retry, typically; a full resync is not reverted).
func WithStartupTxnOptions(opts ...scheduler.TxnOption) MuxOption {
	return func(o *muxOptions) { o.startupOpts = slices.Clone(opts) }
}

// txnOptions returns the options of an update's transaction: the Mux's,
// then the call's.
func (m *Mux) txnOptions(call []scheduler.TxnOption) []scheduler.TxnOption {
	if len(m.opts.txnOpts) == 0 {
		return call
	}
	return append(slices.Clip(m.opts.txnOpts), call...)
}
