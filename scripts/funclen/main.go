// Command funclen checks the size rules of the developers' guide: no function over -max lines
// (100) and no file over -file lines (600). It reads every .go file under the given
// directories (default ".") with go/ast, skipping testdata, vendor and hidden directories,
// and prints each function or file over its limit, longest first; it exits 1 when it printed
// any.
//
//	go run ./scripts/funclen [-max 100] [-file 600] [-v] [DIR...]
//
// A function's length counts the lines from its "func" keyword to its closing brace (a
// function literal inside it counts toward it). A declarative table is exempt: a function
// that is mostly (-table, 80%) one composite literal, such as a table of test cases or a
// tool's schema, reads as data, not as steps. -v lists the exempt tables too.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// finding is one function or file over its limit.
type finding struct {
	pos   string // file:line
	name  string // the function (Recv.Name), or "" for a whole file
	lines int
	table bool // exempt: mostly one composite literal
}

func main() {
	maxFunc := flag.Int("max", 100, "longest function allowed, in lines")
	maxFile := flag.Int("file", 600, "longest file allowed, in lines")
	table := flag.Float64("table", 0.8, "share of a function's lines one composite literal must span for it to count as a table")
	verbose := flag.Bool("v", false, "also list the exempt tables")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var funcs, files []finding
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); path != dir && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			fs, fl, err := measure(path, *maxFunc, *maxFile, *table)
			funcs, files = append(funcs, fs...), append(files, fl...)
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
	}
	over := report("functions over", *maxFunc, funcs, *verbose) + report("files over", *maxFile, files, *verbose)
	if over > 0 {
		os.Exit(1)
	}
}

// measure parses one file and returns its functions and the file itself when over the limits.
func measure(path string, maxFunc, maxFile int, tableShare float64) (funcs, files []finding, err error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	if n := bytes.Count(src, []byte{'\n'}); n > maxFile {
		files = append(files, finding{pos: path, lines: n})
	}
	lines := func(n ast.Node) int { return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1 }
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := lines(fd)
		if n <= maxFunc {
			continue
		}
		widest := 0
		ast.Inspect(fd.Body, func(x ast.Node) bool {
			if cl, ok := x.(*ast.CompositeLit); ok {
				widest = max(widest, lines(cl))
				return false
			}
			return true
		})
		funcs = append(funcs, finding{pos: fmt.Sprintf("%s:%d", path, fset.Position(fd.Pos()).Line), name: funcName(fd),
			lines: n, table: float64(widest) >= tableShare*float64(n)})
	}
	return funcs, files, nil
}

// funcName is Name or Recv.Name.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// report prints the findings over limit, longest first, and returns how many are not exempt.
func report(what string, limit int, fs []finding, verbose bool) int {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].lines != fs[j].lines {
			return fs[i].lines > fs[j].lines
		}
		return fs[i].pos < fs[j].pos
	})
	over, tables := 0, 0
	for _, f := range fs {
		if f.table {
			tables++
			if !verbose {
				continue
			}
		} else {
			over++
		}
		tag := ""
		if f.table {
			tag = " (table, exempt)"
		}
		fmt.Printf("%5d  %s %s%s\n", f.lines, f.pos, f.name, tag)
	}
	fmt.Printf("%d %s %d lines (%d declarative tables exempt)\n", over, what, limit, tables)
	return over
}
