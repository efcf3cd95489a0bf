package cloudrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// startBuild starts building the binary `make gcp-image` packs into the
// image, by the Makefile's own build command: `make -n gcp-image` prints
// the recipe (for GCP_ARCH, the machine's architecture, into a directory
// of the test), and its `go build` line is run as printed. The build runs
// while the caller goes on (it is the longest step on a cold build cache);
// the returned function waits for it and returns the binary's path.
func startBuild(t *testing.T) func() string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Fatalf("the Cloud Run image's binary is linux/%s; this machine is %s", runtime.GOARCH, runtime.GOOS)
	}
	root := repoRoot(t)
	dir := t.TempDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not in PATH: %v", err)
	}
	out, err := exec.Command("make", "-s", "-n", "-C", root, "gcp-image", "GO="+goBin, "GCP_DIR="+dir, "GCP_ARCH="+runtime.GOARCH).Output()
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
	// finished closes when the build ends; buildErr is its error. The
	// cleanup waits for it, before the directory goes.
	finished := make(chan struct{})
	var buildErr error
	t.Cleanup(func() { <-finished })
	start := time.Now()
	go func() {
		defer close(finished)
		sh := exec.Command("sh", "-c", build)
		sh.Dir = root
		if out, err := sh.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%s: %v\n%s", build, err, out)
			return
		}
		if _, err := os.Stat(bin); err != nil {
			buildErr = fmt.Errorf("%s wrote no %s: %v", build, bin, err)
		}
	}()
	return func() string {
		t.Helper()
		<-finished
		if buildErr != nil {
			t.Fatal(buildErr)
		}
		t.Logf("built the image's binary: %s", time.Since(start).Round(100*time.Millisecond))
		return bin
	}
}
