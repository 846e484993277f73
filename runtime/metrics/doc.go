// Package metrics exports a scheduler's figures as Prometheus metrics.
//
// A Metrics is the scheduler's Observer: it counts and times every
// transaction and every southbound call as they end, and, once attached to
// the scheduler, reads the queue length and the number of values per state
// when it is scraped. Create it first, give it to the scheduler with
// scheduler.WithObserver, then Attach the scheduler:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg)
//	...
//	s, err := scheduler.New(scheduler.WithObserver(m))
//	...
//	err = m.Attach(s)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// # What it promises
//
//   - Every metric is named kvdescriptor_scheduler_*, and its labels have a
//     small, fixed set of values: transaction kinds, outcomes, descriptor
//     names, operation kinds, results and states. No key, value or error
//     text ever becomes a label, so the number of series does not grow with
//     the number of values.
//   - Durations are histograms in seconds, with buckets from 10µs to 10s
//     unless told otherwise (WithOperationBuckets, WithTransactionBuckets).
//   - The observer's methods only update counters and histograms: they
//     never block and never call the scheduler, as the Observer contract
//     asks.
//   - Values per state are reported for every state, zero included, so a
//     state that empties shows as 0 rather than disappearing.
//   - One Metrics serves one scheduler. To expose several schedulers in one
//     registry, give each Metrics distinct constant labels
//     (WithConstLabels), e.g. {"instance": "vpp"}.
//
// # The metrics
//
//	kvdescriptor_scheduler_transactions_total{kind,outcome}               counter
//	kvdescriptor_scheduler_transaction_duration_seconds{kind}             histogram
//	kvdescriptor_scheduler_operations_total{descriptor,op,result}         counter
//	kvdescriptor_scheduler_operation_duration_seconds{descriptor,op}      histogram
//	kvdescriptor_scheduler_retries_total                                  counter
//	kvdescriptor_scheduler_drift_total{kind,policy}                       counter
//	kvdescriptor_scheduler_drift_repairs_total                            counter
//	kvdescriptor_scheduler_queue_length                                   gauge (scrape time)
//	kvdescriptor_scheduler_values{state}                                  gauge (scrape time)
//
// kind is one of nb, sb_notification, retry, registration, full_resync,
// upstream_resync, downstream_resync, drift_check. outcome is dry_run (planned, not
// executed), reverted (a failure made it undo itself), error (some keys
// failed) or ok. op is create, update, delete or retrieve; result is ok or
// error. retries_total counts the southbound calls of retry transactions
// (operations flagged scheduler.FlagRetry): the failed operations tried
// again, and the operations of values they unblock; a retry transaction
// is also counted in transactions_total with kind retry.
// drift_total counts the values of ours that drift checks found changed
// (kind changed) or gone (kind missing) behind our back, by drift policy
// (repair, report, adopt); drift_repairs_total the southbound calls made
// to repair them.
// state is the scheduler's state name, e.g. CONFIGURED.
package metrics
