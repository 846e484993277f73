// Package agent is a network agent built on kvdescriptor, as a library:
// New(cfg, plugins...) and Run(ctx). The plugins contribute descriptors
// (and optionally a watcher of the southbound and a Close); the agent
// runs them under a scheduler fed by its northbound sources (a watched
// file, etcd, the API's: each key owned by the source that set it),
// serves its API (runtime/api) and the metrics, and keeps in its state
// directory what outlives a process: what it applied (so that a restart
// removes only stale values of its own), the transaction numbers (never
// given twice across restarts) and the history (so that after a restart
// or a crash the history, timelines and the graph as of an earlier
// transaction still answer).
//
// Config is its configuration, in Go or YAML (LoadConfig, ParseConfig;
// unknown fields refused, named with their line) and flags (ParseArgs);
// examples/agent is the reference binary, runtime/agent/southbound its
// Linux and VPP plugins. Every source's transactions get the agent's
// policy (Config.Transactions: retry, revert or best-effort). The log
// level may be changed while the agent runs (LogLevel).
//
// Importing this package links etcd, gRPC, bbolt and HTTP; a program that
// needs the scheduler alone imports runtime/scheduler, which links none.
package agent
