// Package kvaccess is the scheduler's access to what runtime/kv keeps from
// everybody else: writing a descriptor's metadata map, and telling a
// descriptor that the keys of a call are known to be its own. runtime/kv
// fills the metadata functions in when it is initialised, the scheduler
// KeysMatched; being internal, the package cannot be
// imported from outside runtime/, so plugins and users see metadata maps only
// through their read-only view.
package kvaccess

import "context"

// SetMetadata records the metadata of a label in the metadata map of d, a
// kv.Descriptor; metadata of another type than the descriptor's removes the
// label.
var SetMetadata func(d any, label string, metadata any)

// DeleteMetadata removes a label from the metadata map of d, a
// kv.Descriptor.
var DeleteMetadata func(d any, label string)

// KeysMatched reports whether ctx is the context of a scheduler's call of
// d, a kv.Descriptor, every key of which the scheduler matched to d's key
// template (nil until the scheduler is initialised: nothing is).
var KeysMatched func(ctx context.Context, d any) bool
