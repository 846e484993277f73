// Package file is the file northbound source, the agent's embedded default:
// a YAML or JSON file mapping keys to values (see Parse for its format),
// loaded, then watched, each edit becoming one update with the difference.
//
// Use it as a source of an nb.Mux:
//
//	src := file.New("/etc/kvdescriptor/config.yaml", nb.SchedulerModels(s))
//	err := mux.Run(ctx, src)
//
// Parse reads a configuration without watching (what a plan preview of a
// file does).
//
// A file that does not parse (malformed, a duplicate key, an unknown key, a
// value that does not decode), that is empty or that is missing is a
// problem, reported through Sink.Problem with the file, the line and the
// key, and nothing is applied: the last good configuration stays, so that
// a file caught half-written by an editor (truncated, renamed over,
// deleted and recreated) never removes anything. Once the file is good
// again, the difference from the last good configuration is applied and
// the problem cleared.
//
// A file larger than the source's limit (WithMaxSize, DefaultMaxSize by
// default) is a bad file too: the source reads no more than the limit and
// one byte of it, and reports ErrTooLarge with the file and the limit.
//
// A file missing (or bad) at start is reported and waited for: the source
// sends its initial resync only once the file has loaded, so an agent can
// start before its file exists, and a file that is not there yet never
// reads as "no configuration" (which would remove what a previous run of
// the agent applied). An empty configuration is written {}.
//
// A program that writes the file should write it whole and rename it over
// the file: the debounce (DefaultDebounce) covers an editor's steps, but a
// writer that pauses longer than it, after a prefix of the file that parses
// by itself, would have that prefix applied.
package file
