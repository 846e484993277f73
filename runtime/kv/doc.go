// Package kv is the descriptor contract of kvdescriptor: the types that the
// scheduler, generated code and southbound plugins share.
//
// A descriptor is a [Spec] (the schema-derived part: name, key template,
// key parsing, dependencies, derived values, comparison, validation) and a
// [Handler] (the southbound calls), joined by [NewDescriptor] and then
// registered with a scheduler. Generated code provides the Spec and a
// typed constructor (NewRouteDescriptor(h) calls NewDescriptor with
// RouteSpec); a descriptor written by hand fills in a Spec itself:
//
//	d, err := kv.NewDescriptor(kv.Spec[string, *structpb.Struct, struct{}]{
//		Name:        "route",
//		KeyTemplate: "demo/route/{dst:ipprefix}",
//		Dependencies: func(key string, v *structpb.Struct) []kv.Dependency {
//			return []kv.Dependency{{Label: "interface", Key: "demo/interface/" + v.GetFields()["dev"].GetStringValue()}}
//		},
//	}, routes{}) // routes has Create and Delete, and optionally Update, Retrieve, Validate, Batch
//	...
//	err = s.Register(d) // s is a *scheduler.Scheduler
//
// The handler's optional capabilities are [Updater], [Retriever],
// [Validator], [Batcher] and [Concurrent]. A handler returns [ErrNotFound]
// for a delete of what is already gone, and marks errors that retrying
// cannot fix with [NonRetriable].
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
//     the conversion happens once, here. There is one handler family,
//     generic over the key type K: every call, Retrieve included, gets the
//     key parsed by Spec.ParseKey (the generated typed key of a model), and
//     a text that does not parse never reaches the handler; descriptors
//     written by hand may use K = string.
//   - Optional handler capabilities ([Updater], [Retriever], [Validator]) are
//     discovered by type assertion, and a handler with a method of one of
//     their names but another signature is refused by [NewDescriptor] (a
//     mistyped Update would otherwise be silently missing). A handler without
//     Update has every change of its values applied as Delete followed by
//     Create.
//   - [Descriptor] is sealed: only [TypedDescriptor] implements it, and its
//     metadata map is written only by the scheduler that registered it.
//   - Keys are plain strings built from a [KeyTemplate]. Placeholder values of
//     format [FormatName] are escaped with [EscapeSegment], so they never
//     contain '/', and keys parse back unambiguously.
//   - A key matches a template only if kv builds it: each placeholder value
//     is in the key form of its format ([KeyValue]), so
//     Build(Split(key)) == key, and decoding each value and writing it with
//     [KeyValue] again gives the same key. Keys never hold control
//     characters, escapes other than "%25" and "%2F", numbers with leading
//     zeros, addresses or networks out of canonical form, or MAC addresses
//     other than six lower-case octets; a key that does is nobody's key.
//   - Metadata maps are written only by the scheduler that owns the
//     descriptor; everybody else gets the read-only [MetadataMap] view.
//
// # Key template grammar
//
// [ParseKeyTemplate], and with it the code generator, accepts exactly the
// templates of this grammar (ABNF, RFC 5234); everything else is an error
// that names the template and the offending part or its byte offset:
//
//	template    = segment *( "/" segment )
//	segment     = 1*( literal / placeholder )
//	literal     = 1*lchar
//	lchar       = %x20-24 / %x26-2E / %x30-7A / "|" / "~" / UTF8-nonascii
//	            ; printable, not "%" "/" "{" "}"
//	placeholder = "{" field [ ":" format ] "}"
//	field       = ident *( "." ident )
//	ident       = ( ALPHA / "_" ) *( ALPHA / DIGIT / "_" )
//	format      = "name" / "uint" / "ip" / "ipprefix" / "ipiface" / "mac"
//
// with one more rule: each field appears in at most one placeholder. So a
// template is never empty, neither starts nor ends with '/', has no empty
// segment ("//"), holds no control character (U+0000 to U+001F, U+007F)
// and no invalid UTF-8, and has no '%' outside placeholders ('%' starts the
// escapes of names in keys). A key prefix of an AnyOf dependency is a
// template followed by one '/'. Templates that the grammar accepts may still
// split keys in more than one place; [KeyTemplate.Ambiguity] says where, and
// the generator rejects them.
//
// This package depends only on the protobuf runtime and the standard library.
package kv

// IsAtLeastVersion0_1_0 is referenced by generated code, so that code
// generated for a newer contract fails to compile against an older runtime
// with a clear name instead of misbehaving.
const IsAtLeastVersion0_1_0 = true

// IsAtLeastVersion0_2_0 is the handshake of code generated for the contract
// with Spec.BaseOf (derived models name their base) and BaseKeyOf.
const IsAtLeastVersion0_2_0 = true

// IsAtLeastVersion0_3_0 is the handshake of code generated for the contract
// with one handler family over typed keys (Handler[K, V, M], Spec.ParseKey
// and Spec.KeyString) and the per-model capability interfaces.
const IsAtLeastVersion0_3_0 = true

// IsAtLeastVersion0_4_0 is the handshake of code generated for the contract
// where every model registers its schema (RegisterSchema).
const IsAtLeastVersion0_4_0 = true
