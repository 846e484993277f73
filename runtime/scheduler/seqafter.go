package scheduler

// WithSeqAfter numbers the scheduler's transactions after seq: the first
// is seq+1 (default 0: the first is 1). A program that restarts its
// scheduler passes the last number it gave (or one it reserved, see the
// agent's state store), so that a number given before the restart, to a
// confirmation or a rollback, never names another transaction after it.
func WithSeqAfter(seq uint64) Option { return func(o *options) { o.seqAfter = seq } }
