package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvdescriptor/kvdescriptor/options/kvdescriptorv1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Config configures the API.
type Config struct {
	// Scheduler is the scheduler served (required).
	Scheduler *scheduler.Scheduler
	// Models decodes posted values; default: the scheduler's descriptors.
	Models nb.Models
	// Owners says which source owns a key and which sources it
	// overrides (an nb.Mux); optional.
	Owners interface {
		Owner(key string) (owner string, overridden []string)
	}
	// Ready reports readiness and a detail shown at /readyz; default:
	// always ready.
	Ready func() (ready bool, detail any)
	// Southbound reads a descriptor's values from the southbound; the
	// southbound view of /dump is 501 without it.
	Southbound func(ctx context.Context, descriptor string) ([]kv.Item[string, proto.Message, any], error)
	// PlanFile plans what the file source would apply if its file held
	// data (POST /plan?format=file): the same code as its apply, in a
	// dry run (nbfile.Source.Plan over the nb.Mux), deletes of the keys
	// data drops included; its parse errors are *nbfile.ParseError.
	// Without it, format=file is a 501 naming format: nothing else can
	// say what applying a file would do.
	PlanFile func(ctx context.Context, name string, data []byte) (*scheduler.Result, error)
	// Metrics serves /metrics (404 without it).
	Metrics http.Handler
	// Token, when set, is required as a bearer token on POSTs.
	Token string
	// Logger logs recovered panics; default slog.Default().
	Logger *slog.Logger
}

type api struct {
	cfg Config
	s   *scheduler.Scheduler
}

// New returns the API's handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Scheduler == nil {
		return nil, errors.New("httpapi: Config.Scheduler is nil")
	}
	if cfg.Models == nil {
		cfg.Models = nb.SchedulerModels(cfg.Scheduler)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &api{cfg: cfg, s: cfg.Scheduler}
	mux := http.NewServeMux()
	route := func(path, method string, h func(w http.ResponseWriter, r *http.Request) error) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
				w.Header().Set("Allow", method)
				writeErr(w, &httpError{code: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s %s: use %s", r.Method, path, method)})
				return
			}
			if method == http.MethodPost && a.cfg.Token != "" && !a.authorized(r) {
				w.Header().Set("WWW-Authenticate", "Bearer")
				writeErr(w, &httpError{code: http.StatusUnauthorized, msg: "a bearer token is required (Authorization: Bearer TOKEN)", arg: "Authorization"})
				return
			}
			if err := h(w, r); err != nil {
				writeErr(w, err)
			}
		})
	}
	route("/healthz", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) error {
		_, err := io.WriteString(w, "ok\n")
		return err
	})
	route("/readyz", http.MethodGet, a.readyz)
	route("/metrics", http.MethodGet, func(w http.ResponseWriter, r *http.Request) error {
		if a.cfg.Metrics == nil {
			return &httpError{code: http.StatusNotFound, msg: "no metrics configured"}
		}
		a.cfg.Metrics.ServeHTTP(w, r)
		return nil
	})
	route("/status", http.MethodGet, a.status)
	route("/history", http.MethodGet, a.history)
	route("/timeline", http.MethodGet, a.timeline)
	route("/graph", http.MethodGet, a.graph)
	route("/dump", http.MethodGet, a.dump)
	route("/models", http.MethodGet, a.models)
	route("/stats", http.MethodGet, a.stats)
	route("/resync/downstream", http.MethodPost, a.resync)
	route("/plan", http.MethodPost, a.plan)
	u, err := newUI(a)
	if err != nil {
		return nil, err
	}
	u.register(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			if r.URL.RawQuery == "" && wantsHTML(r) {
				// A browser: the operator page.
				http.Redirect(w, r, "ui/", http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, index)
			return
		}
		writeErr(w, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("no endpoint %q (GET / lists them)", r.URL.Path)})
	})
	return a.recoverer(mux), nil
}

// index is what GET / says.
const index = `kvdescriptor agent API
GET  /healthz /readyz /metrics
GET  /status?key=K|prefix=P|descriptor=D[&format=text]
GET  /history[?seq=N|since=T&until=T][&format=text]
GET  /timeline?key=K[&at=T][&format=text]
GET  /graph[?seq=N|time=T][&format=svg|dot|json]
GET  /stats[?prefix=P][&flag=F]
GET  /dump?view=intended|southbound|scheduler[&descriptor=D|prefix=P]
GET  /models
POST /resync/downstream[?retry=true][&verbose=true]
POST /plan   {"set": {KEY: VALUE}, "delete": [KEY]}   (or ?format=file: a config file)
GET  /ui/    the operator page (HTML): values, why-pending, history, timelines, the graph
`

// wantsHTML reports whether the client is a browser asking for a page.
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (a *api) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.Token)) == 1
}

// recoverer turns a panic into a 500 that says so, and logs it.
func (a *api) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.cfg.Logger.Error("HTTP handler panicked", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				writeErr(w, &httpError{code: http.StatusInternalServerError, msg: fmt.Sprintf("internal error: %v", p)})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// httpError is an error with its status code and the argument it is
// about.
type httpError struct {
	code int
	msg  string
	arg  string
}

func (e *httpError) Error() string { return e.msg }

func badArg(arg, format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, arg: arg, msg: arg + ": " + fmt.Sprintf(format, args...)}
}

// limitErr is a 400 for a request beyond a bound of apilimits.
func limitErr(err error) error {
	var le *apilimits.Error
	if errors.As(err, &le) {
		return &httpError{code: http.StatusBadRequest, arg: le.Field, msg: le.Error()}
	}
	return err
}

func notFound(arg, format string, args ...any) error {
	return &httpError{code: http.StatusNotFound, arg: arg, msg: fmt.Sprintf(format, args...)}
}

func writeErr(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	body := map[string]string{"error": he.msg}
	if he.arg != "" {
		body["argument"] = he.arg
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(he.code)
	_ = json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, code int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeText(w http.ResponseWriter, text string) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := io.WriteString(w, text)
	return err
}

// query reads the query, refusing parameters the endpoint does not know
// and parameters given twice.
func query(r *http.Request, known ...string) (map[string]string, error) {
	q, err := urlQuery(r)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, vals := range q {
		if !slices.Contains(known, name) {
			return nil, badArg(name, "unknown parameter (this endpoint takes %s)", strings.Join(known, ", "))
		}
		if len(vals) > 1 {
			return nil, badArg(name, "given %d times", len(vals))
		}
		if err := apilimits.Length(name, vals[0], apilimits.MaxKeyLen); err != nil {
			return nil, limitErr(err)
		}
		out[name] = vals[0]
	}
	return out, nil
}

func urlQuery(r *http.Request) (map[string][]string, error) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badArg("query", "%v", err)
	}
	return q, nil
}

// format reads ?format among allowed (the first is the default).
func format(q map[string]string, allowed ...string) (string, error) {
	f, ok := q["format"]
	if !ok || f == "" {
		return allowed[0], nil
	}
	if !slices.Contains(allowed, f) {
		return "", badArg("format", "%q is not one of %s", f, strings.Join(allowed, ", "))
	}
	return f, nil
}

func parseSeq(arg, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, badArg(arg, "%q is not a transaction number (1, 2, ...)", s)
	}
	return n, nil
}

func parseBool(arg, s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badArg(arg, "%q is not true or false", s)
	}
	return b, nil
}

// parseTime reads an RFC 3339 time or a duration ago.
func parseTime(arg, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, badArg(arg, "%q is neither an RFC 3339 time nor a duration ago (10m)", s)
}

// valueJSON is a value in the protojson form of its model.
func valueJSON(m proto.Message) json.RawMessage {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprintf("(cannot write %s: %v)", m.ProtoReflect().Descriptor().FullName(), err))
	}
	return b
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *api) readyz(w http.ResponseWriter, _ *http.Request) error {
	ready, detail := true, any(nil)
	if a.cfg.Ready != nil {
		ready, detail = a.cfg.Ready()
	}
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	return writeJSON(w, code, map[string]any{"ready": ready, "detail": readyDetail(detail)})
}

// readyDetail is the detail of readiness as /readyz writes it: errors,
// which encoding/json writes as {}, become their messages (a source's
// problem, nb.SourceState.Problem, included).
func readyDetail(detail any) any {
	// nb.SourceState writes its problem as text itself (MarshalJSON).
	if err, ok := detail.(error); ok {
		return err.Error()
	}
	return detail
}

// fieldNames lists a message's fields with their kinds, nested messages
// by name.
func fieldNames(md protoreflect.MessageDescriptor) []map[string]string {
	var out []map[string]string
	fs := md.Fields()
	for i := range fs.Len() {
		f := fs.Get(i)
		kind := f.Kind().String()
		switch {
		case f.Message() != nil:
			kind = string(f.Message().FullName())
		case f.Enum() != nil:
			kind = string(f.Enum().FullName())
		}
		card := ""
		switch {
		case f.IsMap():
			card = "map"
		case f.IsList():
			card = "repeated"
		}
		m := map[string]string{"name": string(f.Name()), "json": f.JSONName(), "type": kind}
		if card != "" {
			m["cardinality"] = card
		}
		// What the schema says of the field: a reference to another
		// model (a dependency), derived values.
		if o, ok := proto.GetExtension(f.Options(), kvdescriptorv1.E_Field).(*kvdescriptorv1.FieldOptions); ok && o != nil {
			if ref := o.GetRef(); ref != nil {
				m["ref"] = ref.GetModel()
			}
			if d := o.GetDerive(); d != nil {
				m["derives"] = d.GetKey()
			}
			if o.GetRecreate() {
				m["recreate"] = "true"
			}
		}
		out = append(out, m)
	}
	return out
}

func (a *api) models(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	type model struct {
		Name          string              `json:"name"`
		KeyTemplate   string              `json:"keyTemplate,omitempty"`
		KeyPrefix     string              `json:"keyPrefix"`
		Message       string              `json:"message"`
		Fields        []map[string]string `json:"fields"`
		CanUpdate     bool                `json:"canUpdate"`
		CanRetrieve   bool                `json:"canRetrieve"`
		RetrieveAfter []string            `json:"retrieveAfter,omitempty"`
		WithMetadata  bool                `json:"withMetadata"`
		Values        int                 `json:"values"`
	}
	var out []model
	for _, name := range a.s.Descriptors() {
		d, ok := a.s.Descriptor(name)
		if !ok {
			continue
		}
		m := model{Name: name, KeyPrefix: d.KeyPrefix(), CanUpdate: d.CanUpdate(), CanRetrieve: d.CanRetrieve(),
			RetrieveAfter: d.RetrieveDependencies(), WithMetadata: d.WithMetadata(), Values: len(a.s.DescriptorStatuses(name))}
		if t := d.KeyTemplate(); t != nil {
			m.KeyTemplate = t.String()
		}
		if mt := d.ValueType(); mt != nil {
			m.Message = string(mt.Descriptor().FullName())
			m.Fields = fieldNames(mt.Descriptor())
		}
		out = append(out, m)
	}
	return writeJSON(w, http.StatusOK, out)
}
