// Package kv is the descriptor contract of kvdescriptor: the types that the
// scheduler, generated code and southbound plugins share.
//
// Invariants this package promises:
//
//   - Values handed to handlers, and values returned by the scheduler, are
//     never mutated by the scheduler. A handler must not mutate the values it
//     receives either: the same message is the scheduler's record of what was
//     applied.
//   - A descriptor is built only through [NewDescriptor], from a typed [Spec]
//     (the schema-derived part, normally generated) and a typed [Handler] (the
//     CRUD bodies, hand-written). Handlers never see proto.Message or any:
//     the conversion happens once, here.
//   - Optional handler capabilities ([Updater], [Retriever], [Validator]) are
//     discovered by type assertion. A handler without Update has every change
//     of its values applied as Delete followed by Create.
//   - Keys are plain strings built from a [KeyTemplate]. Placeholder values of
//     format [FormatName] are escaped with [EscapeSegment], so they never
//     contain '/', and keys parse back unambiguously.
//   - Metadata maps are written only by the scheduler that owns the
//     descriptor; everybody else gets the read-only [MetadataMap] view.
//
// This package depends only on the protobuf runtime and the standard library.
package kv

// IsAtLeastVersion0_1_0 is referenced by generated code, so that code
// generated for a newer contract fails to compile against an older runtime
// with a clear name instead of misbehaving.
const IsAtLeastVersion0_1_0 = true
