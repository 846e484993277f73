package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNothingSkips holds the README to its word that `go test -v ./...`
// reports no SKIP: a test source may call Skip, Skipf or SkipNow only
// under a testing.Short() condition (make test does not pass -short) or
// in the body of a fuzz target (inputs a fuzzer may make up), and only
// in files built without a tag (a file built with a tag, like the real
// VPP's test, is not in the suite).
func TestNothingSkips(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if tagged(f) {
			return nil
		}
		for _, bad := range unguardedSkips(f) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s:%d: a skip that a plain go test run can reach", rel, fset.Position(bad).Line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tagged says whether a file has a //go:build line naming a tag other
// than an operating system's (linux, unix): a file of a run that asks
// for it.
func tagged(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if expr, ok := strings.CutPrefix(c.Text, "//go:build "); ok {
				for _, word := range strings.FieldsFunc(expr, func(r rune) bool { return strings.ContainsRune(" !&|()", r) }) {
					if word != "linux" && word != "unix" {
						return true
					}
				}
			}
		}
	}
	return false
}

// unguardedSkips returns the places of the Skip calls of f that are
// neither under a testing.Short() condition nor in a fuzz target.
func unguardedSkips(f *ast.File) []token.Pos {
	var out []token.Pos
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Skip" && sel.Sel.Name != "Skipf" && sel.Sel.Name != "SkipNow") {
			return true
		}
		if !guarded(stack) {
			out = append(out, call.Pos())
		}
		return true
	})
	return out
}

// guarded says whether the innermost node of stack is under an if whose
// condition calls testing.Short(), or in a function passed to a Fuzz.
func guarded(stack []ast.Node) bool {
	for i := len(stack) - 2; i >= 0; i-- {
		switch n := stack[i].(type) {
		case *ast.IfStmt:
			if callsShort(n.Cond) {
				return true
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Fuzz" {
				return true
			}
		}
	}
	return false
}

func callsShort(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Short" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "testing" {
				found = true
			}
		}
		return !found
	})
	return found
}
