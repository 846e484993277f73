// Command protoc-gen-kvdescriptor is the protoc plugin of kvdescriptor: for
// every message annotated with (kvdescriptor.v1.model) it generates typed key
// builders and parsers, dependency and derivation functions, a comparator,
// validation, and a typed descriptor whose handler holds only the CRUD
// bodies. Run it with buf (strategy: all) or protoc, next to protoc-gen-go.
//
// With the parameter docs=true it writes, instead of code, the models'
// reference pages: one Markdown page per .proto file with models
// (vpp/l3/v1/l3.md) and an index, README.md (buf.gen.yaml writes them
// under docs/models).
package main

import (
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/compiler/protogen"

	"github.com/kvdescriptor/kvdescriptor/protoc-gen-kvdescriptor/internal/gen"
)

// version is the plugin's version, printed by --version.
const version = "v0.1.0"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("protoc-gen-kvdescriptor", version)
		return
	}
	var flags flag.FlagSet
	docs := flags.Bool("docs", false, "write the models' reference pages (Markdown) instead of Go code")
	// protogen passes the parameters it does not know itself (module=,
	// paths=, M...) here; an error names the parameter.
	param := func(name, value string) error {
		if err := flags.Set(name, value); err != nil {
			return fmt.Errorf("parameter %s=%s: %v (known: docs=true|false, and protoc-gen-go's module=, paths=, M)", name, value, err)
		}
		return nil
	}
	protogen.Options{ParamFunc: param}.Run(func(p *protogen.Plugin) error {
		if *docs {
			return gen.GenerateDocs(p)
		}
		return gen.Generate(p)
	})
}
