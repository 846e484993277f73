package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// restParams lets scripts written for the reference agent's REST paths
// (/scheduler/...) work unchanged: its parameter names and values become
// those of the request messages before vanguard maps the query to them.
// On every REST path, a time (since, until, time) may be a Unix time in
// seconds or a duration ago ("10m") as well as an RFC 3339 time.
func restParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" && r.URL.Path != "/scheduler/graph" || r.Method != http.MethodGet && r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/scheduler/") && !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		q, err := parseQuery(r.URL.RawQuery)
		if err != nil {
			writeRESTError(w, http.StatusBadRequest, 3, "query: "+err.Error())
			return
		}
		if strings.HasPrefix(r.URL.Path, "/scheduler/") {
			for from, to := range referenceNames {
				if v, ok := q[from]; ok {
					delete(q, from)
					q[to] = append(q[to], v...)
				}
			}
			if vs, ok := q["view"]; ok {
				for i, v := range vs {
					if n, ok := referenceViews[strings.ToLower(v)]; ok {
						vs[i] = n
					}
				}
			}
			if r.URL.Path == "/scheduler/graph" && len(q["format"]) == 0 {
				q["format"] = []string{"GRAPH_FORMAT_SVG"}
			}
		}
		if vs, ok := q["format"]; ok && strings.HasSuffix(r.URL.Path, "/graph") {
			for i, v := range vs {
				if _, err := strconv.Atoi(v); err != nil && !strings.HasPrefix(v, "GRAPH_FORMAT_") {
					vs[i] = "GRAPH_FORMAT_" + strings.ToUpper(v)
				}
			}
		}
		now := time.Now()
		for _, name := range []string{"since", "until", "time"} {
			for i, v := range q[name] {
				q[name][i] = restTime(v, now)
			}
		}
		r2 := r.Clone(r.Context())
		r2.URL.RawQuery = q.Encode()
		next.ServeHTTP(w, r2)
	})
}

// referenceNames are the reference agent's parameter names that differ
// from the request fields'.
var referenceNames = map[string]string{
	"seq-num":    "seq",
	"key-prefix": "prefix",
}

// referenceViews are the views of the reference agent's /scheduler/dump
// (and the former HTTP API's names).
var referenceViews = map[string]string{
	"sb": "VIEW_SOUTHBOUND", "southbound": "VIEW_SOUTHBOUND",
	"nb": "VIEW_INTENDED", "intended": "VIEW_INTENDED",
	"cached": "VIEW_SCHEDULER", "internal": "VIEW_SCHEDULER", "scheduler": "VIEW_SCHEDULER",
}

// restTime turns a Unix time in seconds, or a duration ago, into RFC 3339;
// anything else is left for the request's decoding to accept or refuse.
func restTime(v string, now time.Time) string {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n < 1<<40 {
		return time.Unix(n, 0).UTC().Format(time.RFC3339Nano)
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d).UTC().Format(time.RFC3339Nano)
	}
	return v
}
