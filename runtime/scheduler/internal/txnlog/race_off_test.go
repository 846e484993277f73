//go:build !race

package txnlog

// raceOn is set in a build with the race detector (see race_on_test.go).
const raceOn = false
