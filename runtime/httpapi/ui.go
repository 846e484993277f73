package httpapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/kvdescriptor/kvdescriptor/runtime/graphviz"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The operator page: a few server-rendered HTML views of what the JSON
// API serves, under /ui/. Everything it needs is embedded (templates,
// CSS, the graph's pan-and-zoom script): no build step, no external
// asset, so it works on a machine with no internet. Links between views
// are relative, so the page works behind a proxy that mounts the API
// under a prefix. html/template escapes every key and value (they are
// user data), and the Content-Security-Policy allows scripts from the
// page's own files only, so that even an escaping bug could not run an
// injected script.
//
//	GET /ui/                              overview: values by state, the last transactions
//	GET /ui/values[?prefix=P][&state=S]   values with state, owner, descriptor, last error
//	GET /ui/value?key=K                   one value: status, why it is pending, its last changes
//	GET /ui/timeline?key=K                every recorded change of one value
//	GET /ui/history[?before=N][&limit=L]  transactions with their plans, newest first
//	GET /ui/txn?seq=N                     one transaction
//	GET /ui/graph[?seq=N]                 the dependency graph (SVG), now or as of transaction N

//go:embed ui
var uiFiles embed.FS

// uiPages are the views; each is parsed with the layout and the partials.
var uiPages = []string{"overview", "values", "value", "timeline", "history", "txn", "graph", "error"}

type ui struct {
	a     *api
	pages map[string]*template.Template
	// static serves ui/static; statesCSS is generated from the graph's
	// colours so that a state looks the same in tables and in the graph.
	static    fs.FS
	statesCSS []byte
}

// uiCSP is the Content-Security-Policy of every page: nothing but the
// page's own files; no inline script.
const uiCSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func newUI(a *api) (*ui, error) {
	u := &ui{a: a, pages: map[string]*template.Template{}}
	for _, name := range uiPages {
		t, err := template.New(name).Funcs(uiFuncs).ParseFS(uiFiles,
			"ui/templates/layout.html", "ui/templates/partials.html", "ui/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("httpapi: UI template %s: %w", name, err)
		}
		u.pages[name] = t
	}
	static, err := fs.Sub(uiFiles, "ui/static")
	if err != nil {
		return nil, err
	}
	u.static = static
	var b bytes.Buffer
	b.WriteString("/* generated from the graph's colours (runtime/graphviz) */\n")
	for i := range 256 {
		s := scheduler.State(i)
		if p, ok := scheduler.ParseState(s.String()); !ok || p != s {
			continue
		}
		fmt.Fprintf(&b, ".st-%s { background: %s; }\n", s, graphviz.StateColor(s))
	}
	u.statesCSS = b.Bytes()
	return u, nil
}

// register adds the views to mux.
func (u *ui) register(mux *http.ServeMux) {
	page := func(path string, h func(r *http.Request) (string, any, error)) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", http.MethodGet)
				u.errorPage(w, &httpError{code: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s %s: use GET", r.Method, path)})
				return
			}
			name, data, err := h(r)
			if err == errPlain {
				http.Error(w, fmt.Sprintf("no page %q (see /ui/)", r.URL.Path), http.StatusNotFound)
				return
			}
			if err != nil {
				u.errorPage(w, err)
				return
			}
			u.render(w, http.StatusOK, name, data)
		})
	}
	page("/ui/", func(r *http.Request) (string, any, error) {
		if r.URL.Path != "/ui/" {
			if strings.Contains(strings.TrimPrefix(r.URL.Path, "/ui/"), "/") {
				// Deeper than the pages: their relative links would
				// not resolve; a plain answer.
				return "", nil, errPlain
			}
			return "", nil, &httpError{code: http.StatusNotFound, arg: "path",
				msg: fmt.Sprintf("no page %q (the overview at /ui/ links to every page)", r.URL.Path)}
		}
		return u.overview(r)
	})
	page("/ui/values", u.values)
	page("/ui/value", u.value)
	page("/ui/timeline", u.timeline)
	page("/ui/history", u.history)
	page("/ui/txn", u.txn)
	page("/ui/graph", u.graph)
	mux.HandleFunc("/ui/static/", u.serveStatic)
}

// errPlain answers a plain-text 404 (a path deeper than the pages).
var errPlain = errors.New("plain 404")

// serveStatic serves the embedded CSS and script (and the generated
// colours of the states); nothing else, and no directory listing.
func (u *ui) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/ui/static/")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	if name == "states.css" {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(u.statesCSS)
		return
	}
	if st, err := fs.Stat(u.static, name); name == "" || strings.Contains(name, "/") || err != nil || st.IsDir() {
		http.Error(w, fmt.Sprintf("no file %q", r.URL.Path), http.StatusNotFound)
		return
	}
	http.ServeFileFS(w, r, u.static, name)
}

// render executes a page into a buffer first, so that a template error
// is a clean 500 and never half a page.
func (u *ui) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := u.pages[name].ExecuteTemplate(&b, "layout", data); err != nil {
		u.a.cfg.Logger.Error("UI template failed", "page", name, "err", err)
		if name != "error" {
			u.errorPage(w, fmt.Errorf("page %s: %w", name, err))
			return
		}
		http.Error(w, "internal error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// errorData is the error page's: the status, what went wrong and the
// argument (query parameter) it is about.
type errorData struct {
	uiPage
	Code     int
	Status   string
	Message  string
	Argument string
}

func (u *ui) errorPage(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	d := errorData{Code: he.code, Status: http.StatusText(he.code), Message: he.msg, Argument: he.arg}
	d.Title = fmt.Sprintf("%d %s", he.code, d.Status)
	u.render(w, he.code, "error", d)
}

// uiPage is what the layout needs of every page: the title, the tab of
// the navigation that is current, and the JSON API's URL of the same
// view.
type uiPage struct {
	Title string
	Nav   string
	API   string
}

// uiFuncs are the templates' helpers.
var uiFuncs = template.FuncMap{
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

// uiValueText is a value as indented protojson, for a <pre>.
func uiValueText(m proto.Message) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return ""
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("(cannot write %s: %v)", m.ProtoReflect().Descriptor().FullName(), err)
	}
	// protojson's spacing is deliberately unstable; settle it.
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// apiURL is the URL of a JSON endpoint relative to /ui/, with its query.
func apiURL(path string, q ...string) string {
	return "../" + path + uiQuery(q...)
}

// uiQuery builds "?name=value&..." from pairs, leaving out empty values.
func uiQuery(pairs ...string) string {
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
