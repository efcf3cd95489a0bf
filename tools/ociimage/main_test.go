package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image holds the binary as its entrypoint and the CA bundle, runs as
// a non-root user, and is the same bytes when built twice.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	bin, cas := filepath.Join(dir, "certfn"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bin, []byte("\x7fELF fake binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cas, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out1, out2 := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, o := range []string{out1, out2} {
		if err := build(o, bin, "certfn:test", "arm64", cas); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(out1)
	b, _ := os.ReadFile(out2)
	if string(a) != string(b) {
		t.Fatal("two builds differ")
	}
	img, err := tarball.ImageFromPath(out1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" || cfg.OS != "linux" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/certfn" || cfg.Config.User != "65532:65532" {
		t.Fatalf("config %+v", cfg.Config)
	}
	files := map[string]int64{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h.Mode
	}
	if files["certfn"] != 0o755 || files["etc/ssl/certs/ca-certificates.crt"] != 0o644 {
		t.Fatalf("files %v", files)
	}
	if err := build(out1, bin, "certfn:test", "s390x", cas); err == nil {
		t.Fatal("an unknown architecture was accepted")
	}
}
