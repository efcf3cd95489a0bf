package lint

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A reference a reader of the repository cannot follow: the path of a build
// machine, the documents certfn was first designed from by their numbers
// (docs/design says what they decided, with their public URLs), and issue
// numbers of a tracker that is not part of the repository. The patterns are
// assembled so that this file does not match them itself.
var deadRefs = []struct {
	what string
	re   *regexp.Regexp
}{
	{"an absolute path of a build machine", regexp.MustCompile(`(^|[\s"'(=:\x60])/(` + strings.Join([]string{"work", "home", "root", "Users", "mnt"}, "|") + `)/[A-Za-z0-9_.-]`)},
	{"a path outside the repository", regexp.MustCompile(`\.\./` + `shared/`)},
	{"a source design by its number (link into docs/design/)", regexp.MustCompile(`(?i)\bseeds?(\s+design)?\s*(//|#)?\s*0{2}[0-9]\b`)},
	{"the source design's sections (link into docs/design/)", regexp.MustCompile(`DESIGN` + `\.md`)},
	{"an issue number (say what the issue was instead)", regexp.MustCompile(`\b[Ii]ssue\s+#?[0-9]+\b|\b[Ii]ssues\s+#[0-9]+|\b[Ii]ssues\s+[0-9]+\s*(,|and)\s*[0-9]`)},
}

// placeholderPaths are absolute paths that stand for a user's own, in
// examples and tests of what certfn derives from them ($HOME).
var placeholderPaths = []string{"/home/" + "someone"}

// skipRefs are files that may hold such text: other projects' files kept
// as fixtures, and lock files.
func skipRefs(path string) bool {
	return strings.Contains(path, "/testdata/") || strings.HasSuffix(path, "go.sum") ||
		strings.HasSuffix(path, "package-lock.json") || strings.HasSuffix(path, ".terraform.lock.hcl")
}

func TestNoDeadReferences(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files: is the test running in the repository?", len(files))
	}
	checked := 0
	for _, f := range files {
		if skipRefs(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet in the index
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary
		}
		checked++
		for _, p := range deadRefsIn(string(b)) {
			t.Errorf("%s:%s", f, p)
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d text files: too few", checked)
	}
}

// deadRefsIn returns "line: what (text)" for every dead reference in s.
func deadRefsIn(s string) []string {
	var out []string
	for _, r := range deadRefs {
		for _, loc := range r.re.FindAllStringIndex(s, -1) {
			if placeholder(s[loc[0]:]) {
				continue
			}
			line := strings.Count(s[:loc[0]], "\n") + 1
			out = append(out, fmt.Sprintf("%d: %s (%q)", line, r.what, strings.TrimSpace(s[loc[0]:loc[1]])))
		}
	}
	return out
}

// placeholder reports whether s, where a dead reference was found, starts
// with one of placeholderPaths (after the character before the path).
func placeholder(s string) bool {
	for _, p := range placeholderPaths {
		if strings.HasPrefix(s, p) || (len(s) > 0 && strings.HasPrefix(s[1:], p)) {
			return true
		}
	}
	return false
}

func TestDeadReferenceRule(t *testing.T) {
	tests := []struct {
		text string
		want string // "" for none
	}{
		{"see docs/design/one-step.md", ""},
		{"RFC 8555 §7.4 says so", ""},
		{"certfnNonce issues 50 certificates at once", ""},
		{"-roots-out /tmp/pebble-roots.pem", ""},
		{"a random seed 42 picks the order", ""},
		{"t.Setenv(\"HOME\", \"" + "/home/someone\")", ""},
		{"package x // see " + "/work" + "/main/core/api.go", "absolute path"},
		{"open(\"" + "/home" + "/dev/x\")", "absolute path"},
		{"See ../" + "shared/x", "outside the repository"},
		{"(seed " + "004: separate actors)", "source design by its number"},
		{"Seeds " + "002 and 004", "source design by its number"},
		{"(seed\n// " + "003)", "source design by its number"},
		{"DESIGN" + ".md §4 gives", "source design's sections"},
		{"found in issue " + "15: a crash", "issue number"},
		{"Issue #" + "12", "issue number"},
		{"issues " + "5 and 14", "issue number"},
	}
	for _, tc := range tests {
		got := deadRefsIn(tc.text)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%q: %q, want nothing", tc.text, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%q: %q, want one %q", tc.text, got, tc.want)
		}
	}
}

// docPath is a repository document named in a file (docs/….md), not an
// upstream project's: cert-manager's website paths (docs/configuration/…)
// and approver-policy's examples (docs/examples/…) are theirs.
var docPath = regexp.MustCompile(`(^|[^A-Za-z0-9_./-])(docs/[A-Za-z0-9_./-]+\.md)`)

func upstreamDoc(p string) bool {
	return strings.HasPrefix(p, "docs/configuration/") || strings.HasPrefix(p, "docs/examples/")
}

// TestDocPathsExist fails on a file outside docs/ that names a document of
// the repository that does not exist (moved or renamed without its
// readers).
func TestDocPathsExist(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	named := 0
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if skipRefs(f) || strings.HasSuffix(f, ".md") {
			continue // Markdown links are relative; a link checker's job
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		for _, m := range docPath.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimSuffix(m[2], ".")
			if upstreamDoc(p) {
				continue
			}
			named++
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names %s, which does not exist", f, p)
			}
		}
	}
	if named < 20 {
		t.Fatalf("found %d document paths in code: the pattern is broken", named)
	}
}
