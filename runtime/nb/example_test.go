package nb_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/kvtest"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// Two sources feed one scheduler through a Mux: a watched file, and an
// "api" source driven by hand (what a remote API does). Each key belongs
// to the source that set it; a key both set goes to the file, the higher
// priority, and the api's value is reported as overridden.
func ExampleMux() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := scheduler.New(scheduler.WithTxnLog(false))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(context.Background())
	// An in-memory southbound; its values are text ("mtu=9000").
	sb := kvtest.NewSB()
	iface, err := sb.Descriptor(kvtest.Config{Name: "iface", KeyTemplate: "iface/{name}"})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Register(iface); err != nil {
		log.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "nb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("iface/eth0: mtu=9000\niface/eth1: mtu=1500\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := nb.NewMux(s, nb.WithPriorityOrder("file", "api"), nb.WithSources("file", "api"), nb.WithMuxLogger(quiet))
	defer mux.Close()

	// The api source's first update is its whole state (a resync). The
	// startup waits for every source: nothing is applied yet.
	api := mux.Sink("api")
	if err := api.Apply(ctx, nb.Update{Resync: true, Changes: []nb.Change{
		{Key: "iface/eth1", Value: kvtest.Value("mtu=9000")},
		{Key: "iface/eth2", Value: kvtest.Value("mtu=1500")},
	}}); err != nil {
		log.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- mux.Run(ctx, file.New(config, nb.SchedulerModels(s), file.WithLogger(quiet))) }()

	// The file loads, and the startup resync applies both sources at once.
	keys := []string{"iface/eth0", "iface/eth1", "iface/eth2"}
	configured := func() bool {
		for _, k := range keys {
			if s.Status(k).State != scheduler.CONFIGURED {
				return false
			}
		}
		return mux.Ready()
	}
	for deadline := time.Now().Add(10 * time.Second); !configured(); {
		if time.Now().After(deadline) {
			log.Fatal("the sources did not load")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, key := range keys {
		owner, overridden := mux.Owner(key)
		v, _ := sb.Get(key)
		fmt.Println(key, s.Status(key).State, v, "owner:", owner, "overridden:", overridden)
	}
	cancel()
	if err := <-ran; err != nil {
		log.Fatal(err)
	}
	// Output:
	// iface/eth0 CONFIGURED mtu=9000 owner: file overridden: []
	// iface/eth1 CONFIGURED mtu=1500 owner: file overridden: [api]
	// iface/eth2 CONFIGURED mtu=1500 owner: api overridden: []
}
