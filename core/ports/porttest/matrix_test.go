package porttest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// suiteCall finds a call of one of this package's suites.
var suiteCall = regexp.MustCompile(`porttest\.(\w+Suite)\(`)

// run is one suite run by one file.
type run struct{ file, suite string }

// moduleRoot returns the directory holding go.mod above the working
// directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// suiteRuns lists every call of a suite in the module's Go files outside
// this package.
func suiteRuns(t *testing.T, root string) []run {
	t.Helper()
	var out []run
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "node_modules" || name == "testdata" || name == "vendor" || rel == "core/ports/porttest") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range suiteCall.FindAllStringSubmatch(string(src), -1) {
			if r := (run{rel, m[1]}); !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	suiteName  = regexp.MustCompile(`^\w+Suite$`)
)

// matrixRows reads the runs the README's matrix lists: per row, the suites
// of the second column and the test files of the fourth.
func matrixRows(t *testing.T) []run {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The matrix\n")
	if !ok {
		t.Fatal(`README.md: no "## The matrix" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []run
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) != 6 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") ||
			strings.TrimSpace(cells[1]) == "implementation" {
			continue
		}
		var suites, files []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			if suiteName.MatchString(m[1]) {
				suites = append(suites, m[1])
			}
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[4], -1) {
			if strings.HasSuffix(m[1], ".go") {
				files = append(files, m[1])
			}
		}
		if len(suites) == 0 || len(files) == 0 {
			t.Errorf("README.md: matrix row names no suite or no test file: %s", line)
		}
		for _, f := range files {
			for _, s := range suites {
				if r := (run{f, s}); !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// TestMatrix keeps README.md's matrix true: every suite call in the module
// has a row, and every row's test file calls its suite.
func TestMatrix(t *testing.T) {
	runs := suiteRuns(t, moduleRoot(t))
	rows := matrixRows(t)
	if len(runs) == 0 || len(rows) == 0 {
		t.Fatalf("found %d suite calls and %d matrix rows", len(runs), len(rows))
	}
	for _, r := range runs {
		if !slices.Contains(rows, r) {
			t.Errorf("%s runs porttest.%s but README.md's matrix has no row for it", r.file, r.suite)
		}
	}
	for _, r := range rows {
		if !slices.Contains(runs, r) {
			t.Errorf("README.md's matrix says %s runs %s, but it does not", r.file, r.suite)
		}
	}
}
