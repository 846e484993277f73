package gen_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/kvdescriptor/kvdescriptor/protoc-gen-kvdescriptor/internal/gen"
)

// repoRoot is the root of the repository (three levels up from this package).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	return root
}

// compileRequest compiles files the way protoc does (source info included)
// and returns the CodeGeneratorRequest protoc would send a plugin: every
// file with its imports, dependencies first, and files as FileToGenerate.
// Imports are resolved by r, then among protoc's standard imports
// (google/protobuf/descriptor.proto).
func compileRequest(t testing.TB, r protocompile.Resolver, parameter string, files ...string) *pluginpb.CodeGeneratorRequest {
	t.Helper()
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(r),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(context.Background(), files...)
	if err != nil {
		t.Fatalf("compile %v: %v", files, err)
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: files}
	if parameter != "" {
		req.Parameter = proto.String(parameter)
	}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, fileProto(fd))
	}
	for _, f := range compiled {
		add(f)
	}
	return req
}

// fileProto returns the descriptor proto of a compiled (or standard) file.
func fileProto(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if r, ok := fd.(linker.Result); ok {
		return r.FileDescriptorProto()
	}
	return protodesc.ToFileDescriptorProto(fd)
}

// generate runs the generator on req as the plugin binary would.
func generate(t testing.TB, req *pluginpb.CodeGeneratorRequest) (*pluginpb.CodeGeneratorResponse, error) {
	t.Helper()
	return runPlugin(t, req, gen.Generate)
}

// runPlugin runs a protogen plugin function on req. The request is
// marshalled and parsed again first, as it is on its way to a plugin
// binary: custom options then become the registered Go types instead of
// the compiler's dynamic messages (GetExtension would not find them).
func runPlugin(t testing.TB, req *pluginpb.CodeGeneratorRequest, fn func(*protogen.Plugin) error) (*pluginpb.CodeGeneratorResponse, error) {
	t.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	req = &pluginpb.CodeGeneratorRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		t.Fatal(err)
	}
	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		t.Fatalf("protogen: %v", err)
	}
	if err := fn(plugin); err != nil {
		return nil, err
	}
	resp := plugin.Response()
	if resp.Error != nil {
		return nil, errors.New(resp.GetError())
	}
	return resp, nil
}
