package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// testMTime is the archive time of the tests' releases.
var testMTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// repoRoot is the repository root (this package is tools/release).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	return root
}

// packagedFiles are the repository files a release reads.
var packagedFiles = []string{
	"README.md", "docs/deploy/local.md", "packaging/systemd/certfn.service", "packaging/systemd/certfn.socket", "packaging/default/certfn",
	"packaging/deb/postinst", "packaging/deb/prerm", "packaging/deb/postrm",
}

// fixtureRoot is a directory holding copies of the repository's packaged
// files (and a LICENSE when license is non-empty), so that a test decides
// whether a LICENSE exists.
func fixtureRoot(t testing.TB, license string) string {
	t.Helper()
	root, dir := repoRoot(t), t.TempDir()
	for _, p := range packagedFiles {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, p), b, 0o644)
	}
	if license != "" {
		writeFile(t, filepath.Join(dir, "LICENSE"), []byte(license), 0o644)
	}
	return dir
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeBinaries writes one small stand-in binary per architecture and
// returns arch → path.
func fakeBinaries(t testing.TB, archs ...string) map[string]string {
	t.Helper()
	dir, bins := t.TempDir(), map[string]string{}
	for _, a := range archs {
		p := filepath.Join(dir, a, "certfn")
		writeFile(t, p, fakeBinary(a), 0o755)
		bins[a] = p
	}
	return bins
}

func fakeBinary(arch string) []byte {
	return bytes.Repeat([]byte("\x7fELF certfn for linux/"+arch+"\n"), 300)
}

// releaseOptions builds the options of a test release.
type releaseOptions struct{ o options }

func newRelease(root, out string) *releaseOptions {
	return &releaseOptions{options{Version: "1.2.3~rc.1", OutDir: out, Root: root, Archs: []string{"amd64", "arm64"},
		ModTime: testMTime, Maintainer: defaultMaintainer, Go: "go"}}
}

func (r *releaseOptions) version(v string) *releaseOptions    { r.o.Version = v; return r }
func (r *releaseOptions) archs(a ...string) *releaseOptions   { r.o.Archs = a; return r }
func (r *releaseOptions) mtime(m time.Time) *releaseOptions   { r.o.ModTime = m; return r }
func (r *releaseOptions) maintainer(m string) *releaseOptions { r.o.Maintainer = m; return r }
func (r *releaseOptions) outDir(d string) *releaseOptions     { r.o.OutDir = d; return r }
func (r *releaseOptions) build() options                      { return r.o }

// tarEntry is one entry of a tar read back.
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

// readTarGz reads a gzipped tar; it also returns the gzip header.
func readTarGz(t testing.TB, data []byte) ([]tarEntry, gzip.Header) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []tarEntry
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{*h, b})
	}
	return out, zr.Header
}

// requireTool returns the path of a command the tests need, failing
// (never skipping) when it is missing.
func requireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		where := "on this machine"
		if os.Getenv("CI") == "true" {
			where = "in CI (.ci/run must run `make deps` before `make test`)"
		}
		t.Fatalf("%s is not installed %s: run `make deps` (installs the Debian package %s)", name, where, pkg)
	}
	return p
}

// runCmd runs a command and returns its stdout, failing t on an error.
func runCmd(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	return runCmdEnv(t, nil, dir, name, args...)
}

// runCmdEnv is runCmd with the environment env (nil: this process's).
func runCmdEnv(t testing.TB, env []string, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
