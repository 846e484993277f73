// Package scheduler keeps a southbound (the kernel, VPP, anything with
// create/read/update/delete) in sync with the intended state of its values,
// in the order their dependencies require.
//
// # What it promises
//
//   - Transactions run one at a time, in the order they were committed. Each
//     is first simulated into a plan (ordered operations, no southbound
//     calls), the plan is logged, and then its calls are made in order.
//     Without failures the executed operations equal the plan; after a
//     failed call the algorithm takes over from the failure (PENDING
//     dependents, retries, revert), never making a call twice.
//   - A value is created only when its dependencies exist: until then it is
//     PENDING, with the missing ones in its status and a full chain in
//     WhyPending. It is created in the same transaction that makes its last
//     dependency appear. When a dependency goes away, its dependents are
//     deleted first and become PENDING.
//   - Derived values are created after their base and deleted before it.
//     A re-create deletes the value (its derived values and dependents
//     first) and creates it again. An equal value (by the descriptor's
//     comparator) is never re-applied. A key that two values derive (a
//     configuration conflict) is refused to the second with an error, and
//     given to it once the first lets it go.
//   - A dependency cycle (a veth pair) whose outside dependencies are met is
//     created as a unit; otherwise its members are PENDING and their status
//     names the cycle.
//   - The scheduler never creates, updates or deletes an OBTAINED value, one
//     the southbound reported through Notify: such values only satisfy
//     dependencies.
//   - A reverting transaction (Revert) undoes, on its first failure, every
//     operation it applied, and the failed one too (it may have been
//     applied in part). The undo operations are ordinary ones, ordered by
//     dependencies like any other (dependents are deleted before what they
//     need, not merely in the reverse order of the forward pass); when
//     they succeed, the southbound and the values' states end as before the
//     transaction. A best-effort transaction (the default) applies all it
//     can and leaves failed values FAILED, or RETRYING when it asked for
//     retries and the error is retriable.
//   - Commit reports a value that fails validation as an error of its key
//     (the value is INVALID); an unknown key is no error: its value waits,
//     UNIMPLEMENTED, for a descriptor.
//   - Values, as given to Set and as returned in statuses, are never mutated.
//   - Cost is proportional to what a transaction touches: keys map to
//     descriptors through a prefix index, AnyOf dependencies resolve through
//     an ordered index of existing keys, and planning rolls back an undo
//     journal instead of copying the graph.
//
// # Invalid values
//
// A value that fails validation is INVALID, with the invalid fields named
// in its LastErr, and nothing of it reaches the southbound. When a valid
// version of the value was applied before, that version stays applied (and
// so do the values that depend on it) until the value is fixed or deleted.
// The reason: an invalid input is an operator's mistake, and tearing down a
// working configuration with everything that depends on it (routes over an
// interface, say) because of a typo turns a rejected change into an outage.
// Status.Applied shows the version still in place.
//
// # Concurrency
//
// A Scheduler is safe for concurrent use. Reads (Status, WhyPending, ...)
// wait while a transaction updates the graph. Handlers must not call the
// scheduler from Create, Update or Delete (they run inside a transaction);
// they may read metadata maps, which have their own locks. Watchers never
// block the scheduler: a full watcher drops updates and counts them.
//
// # Room for parallel execution
//
// The plan's calls are made by one function (executePlan), in order, and
// the algorithm takes over after a failure, replaying the calls made. An
// executor for descriptors that opt in can therefore make the plan's calls
// in waves of calls with no dependency or derivation path between them,
// keeping the same fall-back, without changing the graph or the semantics.
package scheduler
