//go:build race

package scheduler_test

// raceOn is set in a build with the race detector, which changes what
// allocates (sync.Pool drops what it is given at random).
const raceOn = true
