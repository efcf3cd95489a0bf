package zipper_test

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/certfn/certfn/tools/lambdazip/zipper"
)

func TestWriteFileMakesAnExecutableBootstrap(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	content := bytes.Repeat([]byte("\x7fELF certfn "), 1000)
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sub", "worker.zip")
	if err := zipper.WriteFile(out, bin); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		t.Fatalf("entries = %d, want 1", len(zr.File))
	}
	f := zr.File[0]
	if f.Name != "bootstrap" || f.Mode().Perm() != 0o755 || f.Method != zip.Deflate {
		t.Fatalf("entry %q mode %v method %d, want bootstrap 0755 deflate", f.Name, f.Mode().Perm(), f.Method)
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if !bytes.Equal(got, content) {
		t.Fatal("content differs after a round trip")
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("zip file mode %v, want 0644", st.Mode().Perm())
	}
	if st.Size() >= int64(len(content)) {
		t.Errorf("zip %d bytes is not smaller than the %d-byte input", st.Size(), len(content))
	}
}

func TestWriteIsReproducible(t *testing.T) {
	var a, b bytes.Buffer
	for _, w := range []*bytes.Buffer{&a, &b} {
		if err := zipper.Write(w, bytes.NewReader([]byte("same binary"))); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two zips of the same binary differ")
	}
}

func TestWriteFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, out, bin string
	}{
		{"missing binary", filepath.Join(dir, "x.zip"), filepath.Join(dir, "nope")},
		{"output under a file", filepath.Join(dir, "file", "x.zip"), filepath.Join(dir, "file")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
			if err := zipper.WriteFile(tc.out, tc.bin); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
