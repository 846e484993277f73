// Package kvaccess is the scheduler's access to what runtime/kv keeps from
// everybody else: writing a descriptor's metadata map. runtime/kv fills the
// functions in when it is initialised; being internal, the package cannot be
// imported from outside runtime/, so plugins and users see metadata maps only
// through their read-only view.
package kvaccess

// SetMetadata records the metadata of a label in the metadata map of d, a
// kv.Descriptor; metadata of another type than the descriptor's removes the
// label.
var SetMetadata func(d any, label string, metadata any)

// DeleteMetadata removes a label from the metadata map of d, a
// kv.Descriptor.
var DeleteMetadata func(d any, label string)
