package graph

import "strconv"

// State is documented at its alias in the scheduler package.
type State uint8

// The value states.
const (
	NONEXISTENT State = iota
	PENDING
	CONFIGURED
	OBTAINED
	DISCOVERED
	INVALID
	FAILED
	RETRYING
	REMOVED
	MISSING
	UNIMPLEMENTED
	DRIFTED
)

var StateNames = [...]string{"NONEXISTENT", "PENDING", "CONFIGURED", "OBTAINED", "DISCOVERED", "INVALID", "FAILED", "RETRYING", "REMOVED", "MISSING", "UNIMPLEMENTED", "DRIFTED"}

func (s State) String() string {
	if int(s) < len(StateNames) {
		return StateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Settled reports whether a value in this state is done changing by itself:
// everything but PENDING and RETRYING.
func (s State) Settled() bool { return s != PENDING && s != RETRYING }

// OpKind is documented at its alias in the scheduler package.
type OpKind uint8

// The operation kinds.
const (
	OpNone OpKind = iota
	OpCreate
	OpUpdate
	OpDelete
	OpRetrieve
)

var opNames = [...]string{"NONE", "CREATE", "UPDATE", "DELETE", "RETRIEVE"}

func (k OpKind) String() string { return opNames[k] }
