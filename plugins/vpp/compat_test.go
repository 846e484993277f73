package vpp

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/gre"
	"go.fd.io/govpp/binapi/vxlan"
)

// TestUsedMessagesListed checks that usedMessages lists every request
// the plugin's code builds (a composite literal of a binary API request
// type in a non-test file), and nothing else.
func TestUsedMessagesListed(t *testing.T) {
	requests := map[string]bool{} // "path.Type" of every registered request
	for _, msgs := range api.GetRegisteredMessages() {
		for _, m := range msgs {
			if m.GetMessageType() == api.RequestMessage && !strings.HasSuffix(m.GetMessageName(), "_details") {
				typ := reflect.TypeOf(m).Elem()
				requests[typ.PkgPath()+"."+typ.Name()] = true
			}
		}
	}
	built := map[string]string{} // "path.Type" -> where
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, fn := range files {
		if strings.HasSuffix(fn, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, fn, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{}
		for _, i := range f.Imports {
			path, _ := strconv.Unquote(i.Path.Value)
			name := filepath.Base(path)
			if i.Name != nil {
				name = i.Name.Name
			}
			imports[name] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if se, ok := cl.Type.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok {
					if name := imports[id.Name] + "." + se.Sel.Name; requests[name] {
						built[name] = fset.Position(cl.Pos()).String()
					}
				}
			}
			return true
		})
	}
	listed := map[string]bool{}
	for _, m := range usedMessages {
		typ := reflect.TypeOf(m).Elem()
		listed[typ.PkgPath()+"."+typ.Name()] = true
	}
	for name, at := range built {
		if !listed[name] {
			t.Errorf("%s: %s is sent but not in usedMessages", at, name)
		}
	}
	for name := range listed {
		if built[name] == "" {
			t.Errorf("usedMessages lists %s, which the plugin does not send", name)
		}
	}
	if len(built) < 40 {
		t.Errorf("found %d requests in the plugin's code; the scan is broken", len(built))
	}
}

// TestIncompatibleMessagesReported connects to a VPP that lacks two of
// the messages the plugin uses: New succeeds, and Incompatible and the
// log name them; a VPP with all of them reports none.
func TestIncompatibleMessagesReported(t *testing.T) {
	p, _ := newPlugin(t)
	if got := p.Incompatible(); len(got) != 0 {
		t.Errorf("Incompatible() = %v with a VPP of the same release", got)
	}

	f := newFakeVPP(t)
	f.unknown.Store("vxlan_add_del_tunnel_v3", true)
	f.unknown.Store("gre_tunnel_details", true)
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := New(WithAdapter(f), WithLogger(logger), WithRetryInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := []string{
		(&gre.GreTunnelDetails{}).GetMessageName() + "_" + (&gre.GreTunnelDetails{}).GetCrcString(),
		(&vxlan.VxlanAddDelTunnelV3{}).GetMessageName() + "_" + (&vxlan.VxlanAddDelTunnelV3{}).GetCrcString(),
	}
	if got := p.Incompatible(); !slices.Equal(got, want) {
		t.Errorf("Incompatible() = %v, want %v", got, want)
	}
	for _, w := range want {
		if !strings.Contains(log.String(), w) {
			t.Errorf("the log does not name %s:\n%s", w, log.String())
		}
	}
}
