// Package readme runs the README's Quickstart as written: the first shell
// block under "## Quickstart (local mode)", in the repository's root, as a
// reader runs it (it builds bin/certfn and fills .certfn/).
package readme

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/certfn/certfn/internal/localmode"
)

// quickstart returns the first ```sh block after the Quickstart heading.
func quickstart(t *testing.T, readme string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "## Quickstart (local mode)")
	if !ok {
		t.Fatal(`README.md has no "## Quickstart (local mode)" section`)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the Quickstart has no ```sh block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("the Quickstart's ```sh block does not end")
	}
	return block
}

func TestREADMEQuickstart(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := quickstart(t, string(readme))
	// The Quickstart runs in the repository itself, as a reader runs it:
	// `make build` then reuses the packages the other tests compiled (a
	// copy elsewhere would compile every package again, minutes on CI).
	// A data directory left by a reader's own Quickstart is set aside and
	// put back, unless a serve runs on it.
	data := filepath.Join(root, ".certfn")
	if _, err := os.Stat(data); err == nil {
		if pid, running, err := localmode.ServeRunning(data); err != nil || running {
			t.Fatalf("%s is in use by a certfn serve (PID %s, %v): stop it to run the README Quickstart test", data, pid, err)
		}
		aside := data + ".readme-test"
		if err := os.Rename(data, aside); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = os.RemoveAll(data)
			_ = os.Rename(aside, data)
		})
	} else {
		t.Cleanup(func() { _ = os.RemoveAll(data) })
	}
	// The block as written, with the background serve stopped at the end.
	script := "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\nPS4='+ [$SECONDS s] '\nset -x\n" + block
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CERTFN_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env // HOME kept: the go command's caches live there
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything left of the process group
	if err != nil {
		t.Fatalf("the README Quickstart failed: %v\n%s", err, out.String())
	}
	t.Logf("the Quickstart, traced:\n%s", out.String())
	for _, want := range []string{
		"certificate.cert-manager.io/web (default) condition met: Ready=True",
		"web-tls",
		"tls.key",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the Quickstart's output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(data, "state.db")); err != nil {
		t.Errorf("the Quickstart's data directory: %v", err)
	}
}
