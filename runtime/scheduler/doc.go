// Package scheduler keeps a southbound (the kernel, VPP, anything with
// create/read/update/delete) in sync with the intended state of its values,
// in the order their dependencies require.
//
// docs/scheduler.md in the repository is the user guide (using it, the
// options, invalid values, resync, drift, batching, history and traces),
// the Example a complete program, and docs/legend.md explains the
// transaction log. What follows is the contract.
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
//     deleted first and become PENDING; so does a dependent whose create
//     failed and that holds nothing (FAILED or RETRYING). A value that
//     needs one which the same transaction removes is not created (and
//     deleted again): it stays PENDING.
//   - Derived values are created after their base and deleted before it.
//     A re-create deletes the value (its derived values and dependents
//     first) and creates it again. An equal value (by the descriptor's
//     comparator) is never re-applied. A key that two values derive (a
//     configuration conflict) is refused to the second with an error, and
//     given to it once the first lets it go.
//   - A dependency cycle (a veth pair) whose outside dependencies are met is
//     created as a unit; otherwise its members are PENDING and their status
//     names the cycle. When the create of a member fails, the members there go
//     again (PENDING), those there before it too (the other end of a veth pair
//     whose peer went): none stays CONFIGURED without it. A cycle is removed
//     member by member: when the removal of a member fails, or is refused
//     (ErrStillNeeded), after another member went,
//     it stays without it, FAILED with that error, until a later transaction or
//     resync removes it or brings the other back. A southbound may hold a cycle
//     of two as one object that goes with either member (deleting one end of a
//     veth pair deletes both): when a read-back finds a member gone (after its
//     Delete failed, or before a transaction, its outcome unknown), or a revert
//     deletes a member the other was there without before the transaction, the
//     other member is read back too: one found gone is gone (nothing applied; a
//     revert creates it again with the rest), one found changed is taken as
//     found; when that read-back fails, its outcome is unknown, as below (after
//     a revert's delete, it stays as the revert found it).
//   - The scheduler never creates, updates or deletes an OBTAINED value, one
//     the southbound reported through Notify: such values only satisfy
//     dependencies.
//   - A reverting transaction (Revert) undoes, on its first failure, every
//     operation it applied, and the failed one too (read back first: it may have
//     applied in part). Every value it touched, and every value the revert
//     itself changes on the way (a derived value or a dependent that goes with a
//     value the revert re-creates), gets back its intended value and the version
//     it had applied before, through ordinary operations ordered by dependencies
//     like any other (dependents are deleted before what they need, a derived
//     value is created after its base); a step refused because another value
//     still needs the value is tried again once the values it waits for are back
//     (the transaction records its refusal once, the last, or none when a try
//     succeeds). When that never comes (the value that needs it lies outside the
//     transaction, and nothing the revert restores satisfies it meanwhile), that
//     value goes first, as a dependent does in any removal, and is restored with
//     the rest: the revert changed it on the way; unless its outcome is unknown
//     (below): no call is made on it, and the step stays refused until it is
//     read back. Nor is a leftover that stayed after its delete failed before
//     the transaction, and that the transaction left alone, deleted on the way:
//     a step that waits for it to go stays refused (ErrStillNeeded). When the
//     southbound accepts the undo calls, the southbound and the values' states
//     end exactly as before the transaction (a retry, a transaction of its own,
//     may run just before or after it: what the retry changes stays): a value
//     that was FAILED before is FAILED again (RETRYING again, and its retry
//     still comes), with its old error and the operation it was about, and holds
//     what it held then (nothing, for a failed create: the revert does not retry
//     it; nor for a delete that removed the value and failed: it is still FAILED
//     with that error, though nothing intends it); an INVALID value keeps the
//     valid version it kept; a value that was there without something it needs
//     (its delete had failed, or its create applied in part, or a delete of what
//     it needs removed that and failed) stays as it was when the revert deletes
//     what the transaction created for it (not what a failed create found there
//     while the refresh of its descriptor failed, its key not read alone since:
//     it may have been there all along); when the transaction deleted it, or
//     re-created it (a cycle's member, re-created with the rest of its cycle),
//     it is not created again without what it needs, nor is what needs it: they
//     wait, PENDING, as in any transaction. When the transaction updated it, and
//     an update back would leave it without what it needs, it stays as the
//     transaction left it, FAILED (not reverted), and what only its version of
//     before derives stays deleted, with what needs that (PENDING). Nor is one
//     the transaction set and left as it was, there without something it needs
//     that was not there before either (or of unknown outcome), deleted: it
//     stays. One exception: a leftover that nothing intends (a derived value
//     that the version its base has applied does not derive, its base's intent
//     aside: one still there after its delete failed, or one that its base, read
//     back in another version, no longer derives) is not put back once the
//     transaction, or its revert, deleted it. When an undo call fails, the value
//     is FAILED and the graph says what the southbound holds. A best-effort
//     transaction (the default) applies all it can and leaves failed values
//     FAILED, or RETRYING when it asked for retries and the error is retriable.
//     A retry is best-effort too, whatever the transaction it retries for.
//   - A failed call may have applied in part (a link created, its MTU refused; a
//     delete that removed the value, then failed). Before the graph records a
//     failure, the value is read back through its descriptor's Retrieve, with
//     its key alone to correlate, and the graph takes what the southbound holds:
//     a value found after a failed create exists (FAILED, with its error, and
//     what needs it can be created), one found gone after a failed delete is
//     gone. A base found (so, or before a transaction, below) has its leftovers
//     (derived values with no base still there after their delete failed: what
//     its version derives, or what BaseOf names it base of) deleted before it. A
//     revert then starts from there. A descriptor without Retrieve is taken at
//     its word: the failed call changed nothing, and a revert calls the inverse
//     of the failed call blindly. When the read-back fails too, the value's
//     outcome is unknown, whatever the call (create, update or delete): it is
//     read back again before the next transaction, which takes what is found
//     first, even when it reverts (found as the call wanted, it is CONFIGURED
//     with no error; else its failure stands, known; a call on it that succeeds
//     tells as much, even when its transaction reverts, and a call that taking
//     it makes and that fails stands too, FAILED; what the finding calls for, a
//     value found gone and still wanted created again, what a found one derives,
//     and what it no longer derives going, is done at the end of that
//     transaction; when it reverts, by a retry transaction of its own right
//     after it, which calls nothing on a FAILED one unless found without what
//     its version needs: it goes); until then it is not decided on
//     (ErrOutcomeUnknown), nothing that needs it is created on it (it may be
//     absent: a failed create or delete leaves the graph holding nothing of it),
//     and the removal of a value it may need (a dependency, its base) is refused
//     (ErrStillNeeded, ErrOutcomeUnknown) and decided again once it is read
//     back. No blind call is made on it: a reverting transaction reads it back
//     again first and undoes it from what it finds, like any other value; when
//     that read-back fails too, it makes no call on it (a blind Delete lacks the
//     metadata the create never returned; a blind Create of a veth end may make
//     a new pair), and it stays FAILED, of unknown outcome, until read back.
//   - Every call into a descriptor's code is recovered: a panic in a
//     handler fails its call (a non-retriable error); a panic in a
//     function of the spec becomes a *PanicError (ErrPanicked) naming the
//     descriptor, the function and the key, reported as an error of the
//     key. Nothing of such a value reaches the southbound: a value whose
//     validation or dependencies panic is INVALID, one whose comparison
//     panics FAILED with no call, and a base whose derivation panics keeps
//     the derived values it had. Label and IsKey panics, met by readers
//     too, give the key as label and "not a key" (logged).
//   - Commit reports a value that fails validation as an error of its key
//     (the value is INVALID), and so is a value of a message type other
//     than its descriptor's (kv.ErrWrongType); a nil message of a type
//     fails the commit. A key no descriptor handles is an error of the
//     key too (ErrUnimplemented, logged), but its value is kept: it waits,
//     UNIMPLEMENTED, for a descriptor, and is applied when one is
//     registered.
//   - Every southbound call (Create, Update, Delete, Retrieve) has a
//     deadline (WithCallTimeout, default 30 s; WithDescriptorCallTimeout),
//     carried by the handler's context, which is cancelled at it. A
//     handler that ignores it does not hold the scheduler: the transaction
//     gives up on the call at the deadline, and the call fails with a
//     retriable error wrapping ErrCallTimeout (then the value is read back,
//     as after any failed call). The handler may still complete later, in
//     whole or in part: its late result is logged and dropped, and the
//     next resync repairs what it applied. A group of concurrent calls
//     given up on starts none of its calls it had not started.
//   - Commit's context bounds the caller's wait: when it ends, Commit
//     returns its error (naming the transaction when it has started),
//     while the transaction completes and is recorded. Close returns at
//     its context's deadline, naming the call in flight, which is given up
//     on. A panic in the scheduler's own work, or in an observer or a
//     watcher's selector, is recovered and logged: the job fails, the
//     scheduler stays usable.
//   - Values, as given to Set and as returned in statuses, are never mutated.
//   - Cost is proportional to what a transaction touches: keys map to
//     descriptors through a prefix index, AnyOf dependencies resolve through
//     an ordered index of existing keys, and planning rolls back an undo
//     journal instead of copying the graph.
//   - Drift (a value of ours changed or deleted behind our back) is
//     noticed without a resync by a drift check: CheckDrift (a watcher
//     of the southbound that sees events of our values calls it: the
//     Linux plugin's, within a second) or the periodic one
//     (WithDriftCheck: a slice of values at a time, spread over its
//     interval). Each value is read back through its descriptor's
//     Retrieve and compared with what was applied by the descriptor's
//     comparator; one found as applied costs no transaction. A drifted
//     value is recorded (DRIFTED, and MISSING when gone, with the fields
//     that differ, redacted) and handled by its drift policy (the model's
//     drift_policy, overridable with WithDriftPolicy): repair applies it
//     again at once, but a value repaired again soon after its last repair
//     waits, after k repairs in a row, base*2^(k-1) (WithDriftBackoff),
//     DRIFTED or MISSING meanwhile, with the wait in Status.Drift, and is
//     checked again when it ends, so something that keeps undoing a value
//     never makes the scheduler spin; report leaves it DRIFTED or MISSING
//     (Status.Drift) until a resync, a new intent, or the southbound puts
//     it back; adopt takes the southbound's contents as the intended and
//     applied value (a value that is gone stays MISSING). Found gone, a
//     value's derived values and dependents are checked in the same job.
//     A downstream resync still repairs every drifted value, whatever its
//     policy.
//
// # Reconciliation with the southbound
//
// A resync is a transaction with an option: FullResync (its values replace
// the whole intended state, and the southbound is read first), UpstreamResync
// (the values replace the intended state; the scheduler's view of the
// southbound is trusted) or DownstreamResync (the southbound is read and
// brought back to the intended state, which is kept; it takes no values).
// WithPeriodicResync runs a downstream resync periodically.
//
// Reading the southbound (a refresh) calls each descriptor's Retrieve in
// RetrieveDependencies order (a cycle, or a name not registered before or
// in the same Register call, is a registration error), with the
// values the scheduler expects (correlate): for each value of ours its
// applied version, else its intended one (for a full resync, the
// transaction's values and what they derive). Metadata maps are updated
// as each descriptor is read, so a later Retrieve can resolve what an
// earlier one found. Items with an empty key, no value, a key outside the
// descriptor's key space or a key given twice are dropped and logged. A
// Retrieve that fails is an error of the transaction; its descriptor keeps
// the scheduler's view (after a restart, what the values found derive).
// What a refresh finds is kept even by a dry run: it is a fact, not a
// change.
//
// Then, for the descriptors read:
//   - a value of ours the southbound no longer has is MISSING (an
//     operation flagged MISSING) and created again, once, in the same
//     transaction; what needs it waits for it without being deleted;
//   - a value of ours the southbound holds with other contents is taken as
//     applied and updated (or re-created) back;
//   - an intended value the southbound already holds is adopted: applied
//     with no call (ADOPTED), updated if it differs. A startup resync over
//     a southbound that is already right makes no call at all;
//   - a value the southbound holds that we never owned is OBTAINED and left
//     alone; Retrieve tells ownership through Item.Origin (OriginNB: ours;
//     OriginSB: not ours; OriginUnknown: ours when the scheduler applied the key
//     or correlates it (intended, or Remembered from an agent's record), not
//     ours otherwise), and only values of ours that nothing intends (STALE) are
//     deleted. The scheduler never deletes what it did not create. OBTAINED
//     values are removed by notifications only: a Retrieve that reports only
//     what it owns does not make them go;
//   - stale values go in order: a stale derived value before its base
//     (linked by what the found base derives, or by the derived
//     descriptor's BaseOf when the southbound reports the base without the
//     field that derives), whether the base is stale too or stays and is
//     updated or re-created; a stale value that another found value needs
//     only once that value has been decided, and with it what it needs in
//     turn;
//   - a derived value whose descriptor cannot Retrieve is taken to exist
//     when its base was found as intended. Give it a Retrieve when the
//     base's comparison leaves out the field that derives it (generated
//     comparators do): a base found equal says nothing of it then.
//
// Values whose intent changes are reconciled first, then what the refresh
// changed, then every other value out of line with its target (FAILED,
// PENDING, dependents of what went missing), each in key order. A resync
// looks at every value once and sorts only those that need something.
//
// Notifications (Notify) are transactions too: a value reported present and
// not intended is OBTAINED; one of ours is taken as applied and brought to
// its intent; one of ours reported gone is created again. A notification
// of a key outside every descriptor's key space (no descriptor's prefix, or
// a prefix whose template the key does not match) is an error of the key,
// returned by Notify and logged, and its value is not kept: no descriptor
// could read it back, compare it or delete it. A value keeps the
// retry policy of the transaction that set it, whichever transaction's call
// failed it (a notification that unblocked it, say).
//
// # Concurrency
//
// A Scheduler is safe for concurrent use. Reads (Status, Statuses,
// StateCounts, WhyPending, History, Record, Timeline, GraphSnapshot, the
// descriptor lookups) never wait for a running transaction: they see the
// state the last finished transaction left, whole (a transaction's changes
// appear all at once, and a read over many keys sees one state), while
// the next one plans and calls its handlers. Handlers may read the
// scheduler, and see the state before their transaction; they must not
// commit from Create, Update or Delete (they run inside a transaction).
// They may read metadata maps, which have their own locks. Watchers never
// block the scheduler: a full watcher drops updates and counts them. A
// read that explains a PENDING value (Status's Unmet, WhyPending) calls
// the descriptor's Dependencies on the reader's goroutine, with the
// published intent: like Label and IsKey, it must be a function of the key
// and the value only, safe for concurrent use (generated code is).
//
// The calls of an executed plan are made on the worker's goroutine, never
// the committer's; when one outlives its deadline, a new goroutine takes
// the transaction over, its committer gets the result when the
// transaction ends (whether or not Commit's context can end), and the
// blocked goroutine ends when the handler returns. The other calls (after a failure, read-backs, reverts,
// a refresh's Retrieve) each run on a goroutine of their own.
package scheduler
