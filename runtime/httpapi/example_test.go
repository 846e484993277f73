package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kvdescriptor/kvdescriptor/runtime/httpapi"
	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// The API over a scheduler, served here by a test server (a program
// would give the handler to http.Server): a route waits for its
// interface, and the API says why; a plan preview executes nothing.
func Example() {
	ctx := context.Background()
	s, err := scheduler.New(scheduler.WithTxnLog(false))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	sb := kvtest.NewSB()
	iface, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		log.Fatal(err)
	}
	// A kvtest value's "dep:KEY" token makes it depend on KEY.
	route, err := sb.Descriptor(kvtest.Config{Name: "route", KeyTemplate: "route/{dst:ipprefix}"})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Register(iface, route); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Txn().Set("route/10.0.0.0/8", kvtest.Value("dep:iface/eth0")).Commit(ctx); err != nil {
		log.Fatal(err)
	}

	h, err := httpapi.New(httpapi.Config{Scheduler: s})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(method, path, body string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s %s: %d\n%s\n", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	get("GET", "/healthz", "")
	get("GET", "/status?key=route/10.0.0.0/8&format=text", "")
	get("GET", "/status?key=route/10.0.0.7/8", "")
	get("POST", "/plan", `{"set": {"iface/eth0": "up"}}`)
	fmt.Println("after the plan, iface/eth0 is", s.Status("iface/eth0").State)
	// Output:
	// GET /healthz: 200
	// ok
	// GET /status?key=route/10.0.0.0/8&format=text: 200
	// route/10.0.0.0/8 PENDING  waits for iface/eth0 -> iface/eth0 (NONEXISTENT)
	// GET /status?key=route/10.0.0.7/8: 404
	// {"argument":"key","error":"key \"route/10.0.0.7/8\": no value, and no descriptor handles it"}
	// POST /plan: 200
	// {
	//   "error": "",
	//   "planned": [
	//     {
	//       "key": "iface/eth0",
	//       "op": "CREATE",
	//       "state": "CONFIGURED",
	//       "value": "up",
	//       "called": true
	//     },
	//     {
	//       "key": "route/10.0.0.0/8",
	//       "op": "CREATE",
	//       "state": "CONFIGURED",
	//       "flags": "WAS-PENDING",
	//       "value": "dep:iface/eth0",
	//       "called": true
	//     }
	//   ]
	// }
	// after the plan, iface/eth0 is NONEXISTENT
}
