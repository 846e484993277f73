package ui

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Service is what the page calls of the agent's API: the read calls of
// the AgentService. The service's handler (runtime/api's *api.Service,
// apiv1connect.AgentServiceHandler) and a client of a remote agent
// (apiv1connect.AgentServiceClient) both are one.
type Service interface {
	Status(context.Context, *connect.Request[apiv1.StatusRequest]) (*connect.Response[apiv1.StatusResponse], error)
	History(context.Context, *connect.Request[apiv1.HistoryRequest]) (*connect.Response[apiv1.HistoryResponse], error)
	Timeline(context.Context, *connect.Request[apiv1.TimelineRequest]) (*connect.Response[apiv1.TimelineResponse], error)
	Graph(context.Context, *connect.Request[apiv1.GraphRequest]) (*connect.Response[httpbody.HttpBody], error)
	GraphSnapshot(context.Context, *connect.Request[apiv1.GraphSnapshotRequest]) (*connect.Response[apiv1.GraphSnapshotResponse], error)
	Readiness(context.Context, *connect.Request[apiv1.ReadinessRequest]) (*connect.Response[apiv1.ReadinessResponse], error)
	Dump(context.Context, *connect.Request[apiv1.DumpRequest]) (*connect.Response[apiv1.DumpResponse], error)
	Stats(context.Context, *connect.Request[apiv1.StatsRequest]) (*connect.Response[apiv1.StatsResponse], error)
	Models(context.Context, *connect.Request[apiv1.ModelsRequest]) (*connect.Response[apiv1.ModelsResponse], error)
}

// Authorizer is a service that checks the token of a request's header as
// its own calls do: *api.Service (its Authorize). The page then requires
// the very token of the API.
type Authorizer interface {
	Authorize(http.Header) error
}

// Options configures the page.
type Options struct {
	// Path is where the page is mounted, the pattern it is served under
	// ("/ui/" by default): mux.Handle(opts.Path, h). It starts and ends
	// with a slash.
	Path string
	// Token, when set, is required of every page (Authorization: Bearer,
	// or the cookie that the page's login form sets). A service that is
	// an Authorizer (*api.Service) requires its own token in any case.
	Token string
	// Logger logs the failures of templates (default slog.Default()).
	Logger *slog.Logger
	// MaxLiveStreams bounds the pages that follow the agent live at
	// once (GET events; default DefaultMaxLiveStreams); one more is
	// answered 503 and its page says that live updates are off.
	MaxLiveStreams int
	// LiveStreamLifetime bounds one live stream's life (default
	// DefaultLiveStreamLifetime); the browser then opens a new one.
	LiveStreamLifetime time.Duration
	// MaxGraphNodes bounds the graph the graph page draws (default
	// DefaultMaxGraphNodes): a larger one is refused, with the filters
	// (model, state, a key's neighbourhood) that narrow it.
	MaxGraphNodes int
	// PlotsStore, when set, keeps the plots' ring across restarts: New
	// loads it (a record that cannot be read is ignored, with a
	// warning), and every feed of the ring saves it (when it changed).
	// Feed keeps the ring fed while no page is open.
	PlotsStore PlotsStore
}

// DefaultMaxGraphNodes is the largest graph the graph page draws by
// default.
const DefaultMaxGraphNodes = 1000

// DefaultPath is where the page is mounted by default.
const DefaultPath = "/ui/"

// cookieName is the cookie the login form sets: the token, base64 (URL
// alphabet, no padding), HttpOnly, SameSite=Strict.
const cookieName = "kvdescriptor_ui_token"

//go:embed templates static
var files embed.FS

// pageNames are the views; each is parsed with the layout and the
// partials.
var pageNames = []string{"overview", "values", "value", "timeline", "history", "txn", "graph", "error", "login", "search", "diff", "plots"}

// csp is the Content-Security-Policy of every page: nothing but the page's
// own files; no inline script.
const csp = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

type handler struct {
	svc    Service
	auth   Authorizer
	token  string
	path   string
	apiURL string
	logger *slog.Logger
	pages  map[string]*template.Template
	// static serves static/; statesCSS is generated from the graph's
	// colours so that a state looks the same in tables and in the graph.
	static    fs.FS
	statesCSS []byte
	views     map[string]func(*request) (string, any, error)
	// watch streams status changes (nil: the service cannot); live
	// counts and bounds the streams.
	watch func(context.Context, *connect.Request[apiv1.WatchRequest], func(*apiv1.WatchResponse) error) error
	live  *liveStreams
	// maxGraphNodes bounds the graph page's graph.
	maxGraphNodes int
	// plots is the ring of the last hour; now its clock.
	plots *ring
	now   func() time.Time
	// store keeps the ring (nil: none); saved is the record saved last
	// (both used with plots.feeding held, or in New). feedEvery is
	// Feed's interval while it runs (0: none runs).
	store     PlotsStore
	saved     []byte
	feedEvery atomic.Int64
}

// New returns the operator page: server-rendered HTML views of what the
// service's calls answer, to mount at opts.Path.
func New(svc Service, opts Options) (http.Handler, error) {
	if svc == nil {
		return nil, errors.New("ui: the service is nil")
	}
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if !strings.HasPrefix(opts.Path, "/") || !strings.HasSuffix(opts.Path, "/") || strings.Contains(opts.Path, "//") {
		return nil, fmt.Errorf("ui: Options.Path %q: give a path that starts and ends with a slash (%s)", opts.Path, DefaultPath)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &handler{svc: svc, token: opts.Token, path: opts.Path, logger: opts.Logger, pages: map[string]*template.Template{}}
	h.auth, _ = svc.(Authorizer)
	if opts.MaxLiveStreams < 0 || opts.LiveStreamLifetime < 0 || opts.MaxGraphNodes < 0 {
		return nil, fmt.Errorf("ui: Options.MaxLiveStreams %d, LiveStreamLifetime %v, MaxGraphNodes %d: give zero (the default) or more",
			opts.MaxLiveStreams, opts.LiveStreamLifetime, opts.MaxGraphNodes)
	}
	h.maxGraphNodes = opts.MaxGraphNodes
	if h.maxGraphNodes == 0 {
		h.maxGraphNodes = DefaultMaxGraphNodes
	}
	if opts.MaxLiveStreams == 0 {
		opts.MaxLiveStreams = DefaultMaxLiveStreams
	}
	if opts.LiveStreamLifetime == 0 {
		opts.LiveStreamLifetime = DefaultLiveStreamLifetime
	}
	h.watch = watchFunc(svc)
	h.plots, h.now = &ring{}, time.Now
	if opts.PlotsStore != nil {
		h.store = opts.PlotsStore
		h.loadPlots()
	}
	h.live = &liveStreams{max: int64(opts.MaxLiveStreams), lifetime: opts.LiveStreamLifetime}
	// The REST API is at the root of the server the page is mounted in:
	// relative to the page's directory, one "../" per level of Path.
	h.apiURL = strings.Repeat("../", strings.Count(opts.Path, "/")-1)
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(files,
			"templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		h.pages[name] = t
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	h.static = static
	var b bytes.Buffer
	b.WriteString("/* generated from the graph's colours (runtime/graphviz) */\n")
	for _, name := range stateNames() {
		s, _ := scheduler.ParseState(name)
		fmt.Fprintf(&b, ".st-%s { background: %s; }\n", s, graphviz.StateColor(s))
	}
	h.statesCSS = b.Bytes()
	h.views = map[string]func(*request) (string, any, error){
		"":         h.overview,
		"values":   h.values,
		"value":    h.value,
		"timeline": h.timeline,
		"history":  h.history,
		"txn":      h.txn,
		"graph":    h.graph,
		"search":   h.search,
		"diff":     h.diff,
		"plots":    h.plotsPage,
	}
	return h, nil
}

// request is one page's request and the header of the calls it makes
// (the page's credential as a bearer token).
type request struct {
	r     *http.Request
	calls http.Header
	// authed: the page needs a token and was given it.
	authed bool
}

// call makes a request of msg with the page's credential.
func call[T any](rq *request, msg *T) *connect.Request[T] { return withHeader(rq.calls, msg) }

// withHeader makes a request of msg with the header calls.
func withHeader[T any](calls http.Header, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	for k, v := range calls {
		req.Header()[k] = v
	}
	return req
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, h.path)
	if !ok {
		http.Error(w, fmt.Sprintf("no page %q (the operator page is under %s)", r.URL.Path, h.path), http.StatusNotFound)
		return
	}
	if name, ok := strings.CutPrefix(rest, "static/"); ok {
		h.serveStatic(w, r, name)
		return
	}
	if strings.Contains(rest, "/") {
		// Deeper than the pages: their relative links would not
		// resolve; a plain answer.
		http.Error(w, fmt.Sprintf("no page %q (see %s)", r.URL.Path, h.path), http.StatusNotFound)
		return
	}
	if rest == "login" {
		h.login(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		h.errorPage(w, &pageError{code: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s %s: use GET", r.Method, r.URL.Path)}, false)
		return
	}
	rq := &request{r: r, calls: http.Header{}}
	cred := credential(r)
	if cred != "" {
		rq.calls.Set("Authorization", "Bearer "+cred)
	}
	if err := h.authorize(rq.calls); err != nil {
		h.loginPage(w, r, http.StatusUnauthorized, err.Error())
		return
	}
	rq.authed = h.needsToken()
	if rest == "events" {
		h.events(w, rq)
		return
	}
	view, ok := h.views[rest]
	if !ok {
		h.errorPage(w, &pageError{code: http.StatusNotFound, arg: "path",
			msg: fmt.Sprintf("no page %q (the overview at %s links to every page)", r.URL.Path, h.path)}, rq.authed)
		return
	}
	name, data, err := view(rq)
	var ce *connect.Error
	if errors.As(err, &ce) && ce.Code() == connect.CodeUnauthenticated {
		// The service wants a token that the page was not given.
		h.loginPage(w, r, http.StatusUnauthorized, ce.Message())
		return
	}
	if err != nil {
		h.errorPage(w, err, rq.authed)
		return
	}
	h.render(w, http.StatusOK, name, data)
}

// needsToken reports whether the page is guarded by a token of its own or
// the service's.
func (h *handler) needsToken() bool {
	if h.token != "" {
		return true
	}
	return h.auth != nil && h.auth.Authorize(http.Header{}) != nil
}

// authorize checks a page's credential (as the bearer token of calls): by
// the service's own check when it has one, and by Options.Token.
func (h *handler) authorize(calls http.Header) error {
	if h.auth != nil {
		if err := h.auth.Authorize(calls); err != nil {
			return err
		}
	}
	if h.token == "" {
		return nil
	}
	got, ok := strings.CutPrefix(calls.Get("Authorization"), "Bearer ")
	if !ok {
		return errors.New("authorization: this agent's page needs its token")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) != 1 {
		return errors.New("authorization: the token is wrong")
	}
	return nil
}

// credential is the token a request presents: its Authorization header
// (Bearer), or the login form's cookie.
func credential(r *http.Request) string {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return tok
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ""
	}
	return string(b)
}

// nextPage matches where the login form may send a browser afterwards: a
// page of this page's directory with its query, nothing else.
var nextPage = regexp.MustCompile(`^[a-z]*(\?[!-\[\]-~]*)?$`)

type loginData struct {
	page
	Message string
	Next    string
}

// loginPage answers the login form: code 401 when a page needed the token.
func (h *handler) loginPage(w http.ResponseWriter, r *http.Request, code int, msg string) {
	next := strings.TrimPrefix(r.URL.Path, h.path)
	if r.URL.RawQuery != "" {
		next += "?" + r.URL.RawQuery
	}
	if next == "login" || !nextPage.MatchString(next) || len(next) > apilimits.MaxKeyLen {
		next = ""
	}
	d := loginData{page: page{Title: "Token", Nav: "login"}, Message: msg, Next: next}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	h.render(w, code, "login", d)
}

// maxLoginBytes bounds the login form's body.
const maxLoginBytes = 16 << 10

// login serves the login form (GET) and takes its token (POST): a right
// token is set as a cookie of the page's directory, and the browser sent
// to the page it asked for.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if !h.needsToken() {
			seeOther(w, "./")
			return
		}
		h.loginPage(w, r, http.StatusOK, "This agent's page needs its token (the API's).")
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		h.errorPage(w, &pageError{code: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s %s: use GET or POST", r.Method, r.URL.Path)}, false)
		return
	}
	// The form is the page's own: a post of another site is refused
	// (the cookie is SameSite=Strict in any case).
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			h.errorPage(w, &pageError{code: http.StatusForbidden, arg: "origin",
				msg: fmt.Sprintf("origin: %q is not this page's: the login form is posted by the page itself", o)}, false)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil {
		h.errorPage(w, &pageError{code: http.StatusBadRequest, arg: "form", msg: "form: " + err.Error()}, false)
		return
	}
	next := r.PostForm.Get("next")
	if !nextPage.MatchString(next) || next == "login" {
		next = ""
	}
	cookie := &http.Cookie{Name: cookieName, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if r.PostForm.Get("forget") != "" {
		cookie.MaxAge = -1
		http.SetCookie(w, cookie)
		h.loginPage(w, r, http.StatusOK, "The token is forgotten by this browser.")
		return
	}
	tok := r.PostForm.Get("token")
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+tok)
	if tok == "" || h.authorize(hdr) != nil {
		msg := "authorization: the token is wrong"
		if tok == "" {
			msg = "authorization: give the token"
		}
		r.URL.RawQuery = ""
		d := loginData{page: page{Title: "Token", Nav: "login"}, Message: msg, Next: next}
		w.Header().Set("WWW-Authenticate", "Bearer")
		h.render(w, http.StatusUnauthorized, "login", d)
		return
	}
	cookie.Value = base64.RawURLEncoding.EncodeToString([]byte(tok))
	http.SetCookie(w, cookie)
	seeOther(w, "./"+next)
}

// seeOther redirects to a URL relative to the page's directory, kept
// relative (http.Redirect would make it absolute from the request's path,
// wrong behind a proxy that mounts the page under another prefix).
func seeOther(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}

// serveStatic serves the embedded CSS and script (and the generated
// colours of the states); nothing else, and no directory listing.
func (h *handler) serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	if name == "states.css" {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(h.statesCSS)
		return
	}
	if st, err := fs.Stat(h.static, name); name == "" || strings.Contains(name, "/") || err != nil || st.IsDir() {
		http.Error(w, fmt.Sprintf("no file %q", r.URL.Path), http.StatusNotFound)
		return
	}
	http.ServeFileFS(w, r, h.static, name)
}

// render executes a page into a buffer first, so that a template error is
// a clean 500 and never half a page.
func (h *handler) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&b, "layout", data); err != nil {
		h.logger.Error("ui: template failed", "page", name, "err", err)
		if name != "error" {
			h.errorPage(w, fmt.Errorf("page %s: %w", name, err), false)
			return
		}
		http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// pageError is an error with its status code and the argument it is
// about.
type pageError struct {
	code int
	msg  string
	arg  string
}

func (e *pageError) Error() string { return e.msg }

func badArg(arg, format string, args ...any) error {
	return &pageError{code: http.StatusBadRequest, arg: arg, msg: arg + ": " + fmt.Sprintf(format, args...)}
}

// codeStatus is the HTTP status of an API code, as the API's REST answers.
func codeStatus(c connect.Code) int {
	switch c {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		return http.StatusBadRequest
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists, connect.CodeAborted:
		return http.StatusConflict
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeUnimplemented:
		return http.StatusNotImplemented
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	case connect.CodeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case connect.CodeCanceled:
		return 499
	}
	return http.StatusInternalServerError
}

// errorOf is the page's error of a call's: its HTTP status, its message,
// and the argument its google.rpc.BadRequest detail names.
func errorOf(err error) *pageError {
	var pe *pageError
	if errors.As(err, &pe) {
		return pe
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return &pageError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	out := &pageError{code: codeStatus(ce.Code()), msg: ce.Message()}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if br, ok := v.(*errdetails.BadRequest); ok && derr == nil && len(br.GetFieldViolations()) > 0 {
			out.arg = br.GetFieldViolations()[0].GetField()
			break
		}
	}
	return out
}

// errorData is the error page's: the status, what went wrong and the
// argument (query parameter) it is about.
type errorData struct {
	page
	Code     int
	Status   string
	Message  string
	Argument string
}

func (h *handler) errorPage(w http.ResponseWriter, err error, authed bool) {
	pe := errorOf(err)
	d := errorData{Code: pe.code, Status: http.StatusText(pe.code), Message: pe.msg, Argument: pe.arg}
	if d.Status == "" {
		d.Status = "Error"
	}
	d.Title = fmt.Sprintf("%d %s", pe.code, d.Status)
	d.Authed = authed
	h.render(w, pe.code, "error", d)
}

// page is what the layout needs of every page: the title, the tab of the
// navigation that is current, and the REST API's URL of the same view
// (none when the page needs a token: a browser cannot send it there).
type page struct {
	Title string
	Nav   string
	API   string
	// Authed: the page needs a token and has it (the layout offers to
	// forget it).
	Authed bool
	// Live: the page follows the agent's changes (static/live.js over
	// GET events), of the values under LivePrefix.
	Live       bool
	LivePrefix string
}

// newPage is the page of a view.
func (h *handler) newPage(rq *request, title, nav, api string, q ...string) page {
	p := page{Title: title, Nav: nav, Authed: rq.authed, Live: h.watch != nil}
	if api != "" && !rq.authed {
		p.API = h.apiURL + api + query(q...)
	}
	return p
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// stateClass is the CSS class of a state's colour. State names are
	// letters only; anything else gets no colour.
	"stateClass": func(state string) string {
		if _, ok := scheduler.ParseState(state); ok {
			return "st-" + state
		}
		return "st-unknown"
	},
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05.000")
	},
	"took": func(start, end time.Time) string { return end.Sub(start).Round(time.Microsecond).String() },
}

// stateNames lists the states the scheduler names, in order.
func stateNames() []string {
	var out []string
	for i := range 256 {
		s := scheduler.State(i)
		if p, ok := scheduler.ParseState(s.String()); ok && p == s {
			out = append(out, s.String())
		}
	}
	return out
}

// query builds "?name=value&..." from pairs, leaving out empty values.
func query(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(pairs[i])
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(pairs[i+1]))
	}
	return b.String()
}

// args reads a page's query, refusing parameters the page does not know,
// parameters given twice and values beyond the API's bound of a key.
func args(r *http.Request, known ...string) (map[string]string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badArg("query", "%v", err)
	}
	out := map[string]string{}
	for name, vals := range q {
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return nil, badArg(name, "unknown parameter (this page takes none)")
			}
			return nil, badArg(name, "unknown parameter (this page takes %s)", strings.Join(known, ", "))
		}
		if len(vals) > 1 {
			return nil, badArg(name, "given %d times", len(vals))
		}
		if err := apilimits.Length(name, vals[0], apilimits.MaxKeyLen); err != nil {
			var le *apilimits.Error
			if errors.As(err, &le) {
				return nil, badArg(le.Field, "%s", le.Msg)
			}
			return nil, err
		}
		out[name] = vals[0]
	}
	return out, nil
}
