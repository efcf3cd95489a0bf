package localmode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/internal/localmode"
)

// One serve per data directory: a second one fails at once, naming the
// running one's PID; once the first stops, a serve starts again.
func TestOneServePerDataDirectory(t *testing.T) {
	dir := t.TempDir()
	open := func() *localmode.Runtime {
		rt, err := localmode.Open(localmode.Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Close() })
		return rt
	}
	first, second := open(), open()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Serve(ctx, localmode.ServeOptions{}) }()
	lock := filepath.Join(dir, localmode.ServeLockFile)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(lock); strings.TrimSpace(string(b)) == fmt.Sprint(os.Getpid()) {
			break // the first serve holds the lock
		}
		if time.Now().After(deadline) {
			t.Fatal("the first serve never took the lock")
		}
	}
	if pid, running, err := localmode.ServeRunning(dir); err != nil || !running || pid != fmt.Sprint(os.Getpid()) {
		t.Fatalf("ServeRunning while serving: %q %t %v", pid, running, err)
	}
	err := second.Serve(context.Background(), localmode.ServeOptions{UntilIdle: true})
	if !errors.Is(err, localmode.ErrServeRunning) || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) {
		t.Fatalf("second serve: %v, want ErrServeRunning naming PID %d", err, os.Getpid())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first serve: %v", err)
	}
	if _, running, err := localmode.ServeRunning(dir); err != nil || running {
		t.Fatalf("ServeRunning after the serve stopped: %t %v", running, err)
	}
	if _, running, err := localmode.ServeRunning(t.TempDir()); err != nil || running {
		t.Fatalf("ServeRunning on a directory that never served: %t %v", running, err)
	}
	if err := second.Serve(context.Background(), localmode.ServeOptions{UntilIdle: true}); err != nil {
		t.Fatalf("serve after the first stopped: %v", err)
	}
}
