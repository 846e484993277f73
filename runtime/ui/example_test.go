package ui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/api"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
	"github.com/kvdescriptor/kvdescriptor/runtime/ui"
)

// The operator page mounted at /ui/ beside the agent's API.
func Example() {
	s, _ := scheduler.New()
	defer s.Close(context.Background())
	d, _ := kvtest.NewSB().Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	_ = s.Register(d)
	mux := nb.NewMux(s, nb.WithLoadDeadline(0), nb.WithSources("api"))
	remote, err := nb.NewRemote(mux, nb.SchedulerModels(s), nb.RemoteConfig{})
	if err != nil {
		panic(err)
	}
	defer remote.Close()
	svc, err := api.New(api.Deps{Scheduler: s, Mux: mux, Remote: remote})
	if err != nil {
		panic(err)
	}
	apiHandler, err := svc.Handler()
	if err != nil {
		panic(err)
	}
	page, err := ui.New(svc, ui.Options{})
	if err != nil {
		panic(err)
	}
	m := http.NewServeMux()
	m.Handle("/", apiHandler)
	m.Handle("/ui/", page)
	srv := httptest.NewServer(m)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/ui/")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), "<h1>Overview</h1>"))
	// Output: 200 true
}
