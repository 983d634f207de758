// Package lint holds tests that enforce code-shape rules over the whole module:
// they parse the sources and need no build tags, binaries or root.
package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function body may be, in source lines from its
// opening to its closing brace inclusive (issue 12: "no function outside tests
// and table data is longer than 60 lines").
const maxFuncLines = 60

// allowedLongFuncs lists "file:function" keys exempt from maxFuncLines. Keep it
// empty: split a long function instead of listing it here.
var allowedLongFuncs = []string{}

// longFunc is one function whose body exceeds maxFuncLines.
type longFunc struct {
	key   string // "file:function", file relative to the module root
	line  int    // line of the func keyword
	lines int    // body length in lines
}

func (f longFunc) String() string {
	return fmt.Sprintf("%s:%d lines (starts at line %d)", f.key, f.lines, f.line)
}

// TestFunctionLength fails naming file:function:lines for every function
// declaration or function literal, outside tests and table data, whose body is
// longer than maxFuncLines.
func TestFunctionLength(t *testing.T) {
	root := moduleRoot(t)
	files := goSourceFiles(t, root)
	if len(files) == 0 {
		t.Fatalf("no Go source files found under %s", root)
	}
	var found []longFunc
	for _, rel := range files {
		found = append(found, longFuncsInFile(t, root, rel)...)
	}
	for _, f := range found {
		if slices.Contains(allowedLongFuncs, f.key) {
			continue
		}
		t.Errorf("%s: longer than %d lines; split it into well-named functions", f, maxFuncLines)
	}
}

// TestLongFuncsInSource checks the detector itself on small sources: long
// plain functions and long literals are reported, table data is not.
func TestLongFuncsInSource(t *testing.T) {
	body := strings.Repeat("\tx++\n", maxFuncLines)
	rows := strings.Repeat("\t\t{1, 2},\n", maxFuncLines)
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"short", "func f() { x := 1; _ = x }", nil},
		{"long decl", "func f() {\n\tx := 0\n" + body + "}", []string{"f"}},
		{"long method", "type T struct{}\nfunc (T) m() {\n\tx := 0\n" + body + "}", []string{"T.m"}},
		{"long literal", "var v = func() {\n\tx := 0\n" + body + "}", []string{"func literal"}},
		{"table return", "func f() [][2]int {\n\treturn [][2]int{\n" + rows + "\t}\n}", nil},
		{"table assign", "func f() [][2]int {\n\tt := [][2]int{\n" + rows + "\t}\n\treturn t\n}", nil},
		{"table assign with logic", "func f() [][2]int {\n\tt := [][2]int{\n" + rows + "\t}\n\tif len(t) > 0 {\n\t\tt = nil\n\t}\n\treturn t\n}", []string{"f"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, "x.go", "package p\n"+tc.src, 0)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			var got []string
			for _, f := range longFuncs(fset, file) {
				got = append(got, f.name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("long functions = %q, want %q", got, tc.want)
			}
		})
	}
}

// moduleRoot returns the directory holding the main module's go.mod, two
// levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	return root
}

// goSourceFiles returns the non-test .go files of the module under root,
// relative to root, skipping build output, testdata, hidden directories and
// nested modules (such as bundle/).
func goSourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") && !strings.HasSuffix(d.Name(), "_test.go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return files
}

// skipDir reports whether the directory at path holds no sources of this
// module: build output, testdata, vendor, hidden directories, nested modules.
func skipDir(path, name string) bool {
	switch name {
	case "_output", "testdata", "vendor":
		return true
	}
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// longFuncsInFile parses root/rel and returns its over-long functions keyed
// "rel:name".
func longFuncsInFile(t *testing.T, root, rel string) []longFunc {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	var out []longFunc
	for _, f := range longFuncs(fset, file) {
		out = append(out, longFunc{key: rel + ":" + f.name, line: f.line, lines: f.lines})
	}
	return out
}

// namedFunc is one over-long function found in a parsed file.
type namedFunc struct {
	name  string // "f", "T.m" or "func literal"
	line  int    // line of the func keyword
	lines int    // body length in lines, braces included
}

// longFuncs returns the function declarations and literals in file whose
// bodies are longer than maxFuncLines and are not table data.
func longFuncs(fset *token.FileSet, file *ast.File) []namedFunc {
	var out []namedFunc
	check := func(name string, pos token.Pos, body *ast.BlockStmt) {
		if body == nil || isTableData(body) {
			return
		}
		n := fset.Position(body.Rbrace).Line - fset.Position(body.Lbrace).Line + 1
		if n > maxFuncLines {
			out = append(out, namedFunc{name: name, line: fset.Position(pos).Line, lines: n})
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch fn := n.(type) {
		case *ast.FuncDecl:
			check(funcDeclName(fn), fn.Pos(), fn.Body)
		case *ast.FuncLit:
			check("func literal", fn.Pos(), fn.Body)
		}
		return true
	})
	return out
}

// funcDeclName returns "f" for a function and "T.m" for a method.
func funcDeclName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}

// isTableData reports whether body only returns data: a single return of
// composite literals, or one assignment of a composite literal followed by a
// return.
func isTableData(body *ast.BlockStmt) bool {
	switch len(body.List) {
	case 1:
		ret, ok := body.List[0].(*ast.ReturnStmt)
		return ok && allCompositeLits(ret.Results)
	case 2:
		_, isRet := body.List[1].(*ast.ReturnStmt)
		switch s := body.List[0].(type) {
		case *ast.AssignStmt:
			return isRet && allCompositeLits(s.Rhs)
		case *ast.DeclStmt:
			gd, ok := s.Decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR || len(gd.Specs) != 1 {
				return false
			}
			vs, ok := gd.Specs[0].(*ast.ValueSpec)
			return ok && isRet && allCompositeLits(vs.Values)
		}
	}
	return false
}

// allCompositeLits reports whether exprs is non-empty and every expression is
// a composite literal, possibly behind &.
func allCompositeLits(exprs []ast.Expr) bool {
	if len(exprs) == 0 {
		return false
	}
	for _, e := range exprs {
		if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
			e = u.X
		}
		if _, ok := e.(*ast.CompositeLit); !ok {
			return false
		}
	}
	return true
}
