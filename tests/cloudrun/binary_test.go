package cloudrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// buildImageBinary builds the binary `make gcp-image` packs into the
// image, by the Makefile's own build command: `make -n gcp-image` prints
// the recipe (for GCP_ARCH, the machine's architecture, into a directory
// of the test), and its `go build` line is run as printed. It returns the
// binary's path.
func buildImageBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Fatalf("the Cloud Run image's binary is linux/%s; this machine is %s", runtime.GOARCH, runtime.GOOS)
	}
	root := repoRoot(t)
	dir := t.TempDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command("make", "-s", "-n", "-C", root, "gcp-image", "GO="+goBin, "GCP_DIR="+dir, "GCP_ARCH="+runtime.GOARCH)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n gcp-image: %v\n%s", err, out)
	}
	var build string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, " build ") && strings.Contains(line, "./functions/gcp/certfn") {
			if build != "" {
				t.Fatalf("make -n gcp-image printed two build commands:\n%s", out)
			}
			build = line
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`} {
		if !strings.Contains(build, want) {
			t.Fatalf("gcp-image's build command %q lacks %s (this test assumes the image's static binary)", build, want)
		}
	}
	bin := filepath.Join(dir, "certfn-"+runtime.GOARCH)
	sh := exec.Command("sh", "-c", build)
	sh.Dir = root
	sh.Env = os.Environ()
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s wrote no %s: %v", build, bin, err)
	}
	return bin
}
