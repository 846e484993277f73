package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// DefaultDebounce is how long the source waits after the last event on the
// file before it reads it: editors write in several steps.
const DefaultDebounce = 100 * time.Millisecond

// DefaultMaxSize is the largest file the source reads, in bytes (16 MiB).
// Parsing takes some 35 to 50 times a file's size in memory while it
// runs, so the limit bounds that to under a gigabyte; a value of the
// models written out in YAML takes about 120 bytes, so the limit holds
// some 140,000 values, twice the largest configuration the benchmarks
// apply.
const DefaultMaxSize = 16 << 20

// ErrTooLarge is the cause of the problem reported for a file larger than
// the source's limit (WithMaxSize).
var ErrTooLarge = errors.New("the file is larger than the limit")

// Source is the file source. It implements nb.Source.
type Source struct {
	path     string
	models   nb.Models
	name     string
	logger   *slog.Logger
	debounce time.Duration
	maxSize  int64
}

var _ nb.Source = (*Source)(nil)

// Option configures a Source.
type Option func(*Source)

// WithName sets the source's name, the owner of its keys ("file" by
// default).
func WithName(name string) Option { return func(s *Source) { s.name = name } }

// WithLogger sets the logger (slog.Default() by default).
func WithLogger(l *slog.Logger) Option { return func(s *Source) { s.logger = l } }

// WithDebounce sets how long the source waits after the last event on the
// file before reading it (DefaultDebounce by default).
func WithDebounce(d time.Duration) Option { return func(s *Source) { s.debounce = d } }

// WithMaxSize sets the largest file the source reads, in bytes
// (DefaultMaxSize by default; 0 or less: the default). A larger file is a
// bad file: reported, and nothing of it applied. The source never reads
// more than this and one byte of it.
func WithMaxSize(n int64) Option { return func(s *Source) { s.maxSize = n } }

// New returns the source of the file at path, its values decoded by the
// models of their keys.
func New(path string, models nb.Models, opts ...Option) *Source {
	s := &Source{path: path, models: models, name: "file", debounce: DefaultDebounce, maxSize: DefaultMaxSize}
	for _, o := range opts {
		o(s)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.debounce <= 0 {
		s.debounce = time.Millisecond
	}
	if s.maxSize <= 0 {
		s.maxSize = DefaultMaxSize
	}
	return s
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Path returns the file's path.
func (s *Source) Path() string { return s.path }

// MaxSize returns the largest file the source reads, in bytes.
func (s *Source) MaxSize() int64 { return s.maxSize }

// read reads the file, or fails with ErrTooLarge having read no more than
// the limit and one byte.
func (s *Source) read() ([]byte, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.maxSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > s.maxSize {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, s.maxSize)
	}
	return data, nil
}

// run is the state of one Run.
type run struct {
	s       *Source
	sink    nb.Sink
	loaded  bool                     // the initial resync was applied
	good    map[string]proto.Message // the configuration applied
	last    []byte                   // the contents last read
	settled bool                     // they were parsed, and applied or reported bad
	problem string                   // the problem reported, "" for none
}

// Run loads the file, sends its initial resync, then watches the file and
// sends each edit's difference, until ctx ends. The file's directory must
// exist (the file need not): Run returns an error otherwise. An update that
// the sink does not apply is reported as a problem and tried again at the
// next event in the directory; until the initial resync is applied, every
// update is a resync.
func (s *Source) Run(ctx context.Context, sink nb.Sink) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("file source %s: %w", s.path, err)
	}
	defer w.Close()
	// The directory is watched, not the file: editors replace the file
	// (rename over it, delete and recreate it), which a watch on the
	// file itself would not survive.
	dir := filepath.Dir(s.path)
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("file source %s: watching %s: %w", s.path, dir, err)
	}
	// A path that is a symlink into another directory (a mounted
	// ConfigMap's is into the same one) is watched there too.
	if real, err := filepath.EvalSymlinks(s.path); err == nil && filepath.Dir(real) != filepath.Clean(dir) {
		if err := w.Add(filepath.Dir(real)); err != nil {
			s.logger.Warn("file source: cannot watch the symlink's target", "file", s.path, "target", real, "error", err)
		}
	}
	r := &run{s: s, sink: sink}
	r.reload(ctx)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("file source: the watcher stopped")
			}
			// Any event in the directory may change what the path
			// reads (a symlink swapped, as a mounted ConfigMap does):
			// read it once things settle, and do nothing if the
			// contents are the same.
			s.logger.Debug("file source: event", "file", s.path, "event", ev.String())
			timer.Reset(s.debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("file source: the watcher stopped")
			}
			// An overflow loses events: read the file anyway.
			s.logger.Warn("file source: watcher", "file", s.path, "error", err)
			timer.Reset(s.debounce)
		case <-timer.C:
			r.reload(ctx)
		}
	}
}

// reload reads and parses the file and applies what changed.
func (r *run) reload(ctx context.Context) {
	s := r.s
	data, err := s.read()
	if err != nil {
		r.last, r.settled = nil, false
		switch {
		case errors.Is(err, fs.ErrNotExist) && !r.loaded:
			err = &ParseError{File: s.path, Err: errors.New("the file does not exist: waiting for it")}
		case errors.Is(err, fs.ErrNotExist):
			err = &ParseError{File: s.path, Err: errors.New("the file does not exist (the configuration applied stays)")}
		default:
			err = &ParseError{File: s.path, Err: err}
		}
		r.report(err)
		return
	}
	if r.settled && bytes.Equal(data, r.last) {
		// An event that changed nothing (a temporary file, a touch,
		// another file of the directory): applied, or reported.
		return
	}
	r.last, r.settled = data, false
	u, next, err := s.update(s.path, data, r.good, r.loaded)
	if err != nil {
		r.settled = true
		r.report(err)
		return
	}
	if r.loaded && len(u.Changes) == 0 {
		r.settled = true
		r.clear()
		return
	}
	if err := r.sink.Apply(ctx, u); err != nil {
		if ctx.Err() != nil {
			return
		}
		// The previous state stays; the next event in the directory
		// tries again from it, even with the same contents.
		r.report(fmt.Errorf("file source %s: the update was not applied: %w", s.path, err))
		return
	}
	s.logger.Info("file source: applied", "file", s.path, "resync", u.Resync, "changes", len(u.Changes))
	r.loaded, r.good, r.settled = true, next, true
	r.clear()
}

// update returns the update that the file's contents data make of the
// configuration good (loaded: applied already, else the update is the
// initial resync), and the configuration they hold; name names the file
// in the errors.
func (s *Source) update(name string, data []byte, good map[string]proto.Message, loaded bool) (nb.Update, map[string]proto.Message, error) {
	changes, err := Parse(name, data, s.models)
	if err != nil {
		return nb.Update{}, nil, err
	}
	u := nb.Update{Description: "file " + s.path}
	next := make(map[string]proto.Message, len(changes))
	for _, c := range changes {
		next[c.Key] = c.Value
	}
	if !loaded {
		u.Resync, u.Changes = true, changes
	} else {
		u.Changes = diff(good, changes, next)
	}
	return u, next, nil
}

// Planner plans a source's update without applying it: an *nb.Mux.
type Planner interface {
	// Desired returns what the source intends now (nil: not known).
	Desired(name string) map[string]proto.Message
	// Plan plans the source's update as applying it would run it.
	Plan(ctx context.Context, name string, u nb.Update, opts ...scheduler.TxnOption) (*scheduler.Result, error)
}

// Plan returns the plan of what the source would apply if its file held
// data (name names it in the errors, all *ParseError): the update the
// source would send, from what it intends in p, planned by p as applying
// it runs (a dry run: nothing changes). The result is nil when nothing
// would change.
func (s *Source) Plan(ctx context.Context, p Planner, name string, data []byte) (*scheduler.Result, error) {
	good := p.Desired(s.name)
	u, _, err := s.update(name, data, good, good != nil)
	if err != nil {
		return nil, err
	}
	if good != nil && len(u.Changes) == 0 {
		return nil, nil
	}
	return p.Plan(ctx, s.name, u)
}

// diff returns the changes from old to the new configuration (changes, in
// the file's order, and the same as a map): the keys set or changed, then
// the keys removed, sorted.
func diff(old map[string]proto.Message, changes []nb.Change, next map[string]proto.Message) []nb.Change {
	var out []nb.Change
	for _, c := range changes {
		if prev, ok := old[c.Key]; !ok || !proto.Equal(prev, c.Value) {
			out = append(out, c)
		}
	}
	var gone []string
	for k := range old {
		if _, ok := next[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		out = append(out, nb.Change{Key: k})
	}
	return out
}

// report reports a problem, once: the same problem again (the file still
// missing at another event in the directory) is not reported again.
func (r *run) report(err error) {
	if r.problem == err.Error() {
		return
	}
	r.s.logger.Warn("file source: not applied", "file", r.s.path, "error", err)
	r.problem = err.Error()
	r.sink.Problem(err)
}

func (r *run) clear() {
	if r.problem != "" {
		r.problem = ""
		r.sink.Problem(nil)
	}
}
