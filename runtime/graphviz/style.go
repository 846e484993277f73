package graphviz

import "github.com/kvdescriptor/kvdescriptor/runtime/scheduler"

// stateColors are the fill colours of the states: green for what is in
// place, blues for what the southbound owns, warm colours for what needs
// attention, greys for what is gone or unknown.
var stateColors = map[scheduler.State]string{
	scheduler.NONEXISTENT:   "#f8f9fa",
	scheduler.PENDING:       "#fff3bf", // yellow, and dashed
	scheduler.CONFIGURED:    "#b2f2bb", // green
	scheduler.OBTAINED:      "#a5d8ff", // blue
	scheduler.DISCOVERED:    "#d0ebff", // light blue
	scheduler.INVALID:       "#eebefa", // violet
	scheduler.FAILED:        "#ffa8a8", // red
	scheduler.RETRYING:      "#ffd8a8", // orange
	scheduler.REMOVED:       "#dee2e6", // grey
	scheduler.MISSING:       "#fcc2d7", // pink
	scheduler.UNIMPLEMENTED: "#ced4da", // dark grey
	scheduler.DRIFTED:       "#e599f7", // magenta
}

// unknownStateColor fills a node of a state with no colour of its own (a
// state newer than this package).
const unknownStateColor = "#ffffff"

// StateColor returns the fill colour of a state, as "#rrggbb".
func StateColor(s scheduler.State) string {
	if c, ok := stateColors[s]; ok {
		return c
	}
	return unknownStateColor
}

// The colours of the other elements.
const (
	placeholderColor = "#868e96"
	unmetColor       = "#e03131"
	derivedColor     = "#1c7ed6"
	clusterColor     = "#adb5bd"
	touchedPenWidth  = "3"
)

// states lists every state the scheduler names, in order.
func states() []scheduler.State {
	var out []scheduler.State
	for i := 0; i <= 255; i++ {
		s := scheduler.State(i)
		if p, ok := scheduler.ParseState(s.String()); ok && p == s {
			out = append(out, s)
		}
	}
	return out
}
