package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// The tests re-run their own binary as helper processes to check what two
// processes sharing a file do (the CLI next to `certfn serve`).
const (
	helperEnv  = "CERTFN_LOCAL_HELPER" // which helper to run
	helperPath = "CERTFN_LOCAL_PATH"   // its file or directory
	helperN    = "CERTFN_LOCAL_N"      // its count or tag
)

// Exit codes of the helpers.
const (
	exitOK      = 0
	exitFailed  = 1
	exitExisted = 3
)

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	code := m.Run()
	for _, dir := range sweepCleanup {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// counterKey is the record the increment helpers share.
var counterKey = api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "counter"}

func runHelper(name string) int {
	ctx := context.Background()
	path, n := os.Getenv(helperPath), os.Getenv(helperN)
	switch name {
	case "increment":
		count, err := strconv.Atoi(n)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitFailed
		}
		s, err := OpenStore(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitFailed
		}
		defer s.Close()
		if err := increment(ctx, s, count); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitFailed
		}
		return exitOK
	case "create-secret":
		err := NewSecretStore(path).Create(ctx, ports.Secret{Namespace: "default", Name: "web-tls",
			Data: map[string][]byte{"tls.crt": []byte("crt " + n), "tls.key": []byte("key " + n)}})
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, ports.ErrAlreadyExists):
			return exitExisted
		default:
			fmt.Fprintln(os.Stderr, err)
			return exitFailed
		}
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return exitFailed
}

// increment adds count to the decimal counter in counterKey's data, with
// reload-and-retry on conflict.
func increment(ctx context.Context, s ports.Store, count int) error {
	for done := 0; done < count; {
		r, err := s.Get(ctx, counterKey)
		if err != nil {
			return err
		}
		v, err := strconv.Atoi(string(r.Data))
		if err != nil {
			return err
		}
		r.Data = []byte(strconv.Itoa(v + 1))
		switch _, err := s.Update(ctx, r); {
		case err == nil:
			done++
		case !errors.Is(err, ports.ErrConflict):
			return err
		}
	}
	return nil
}

// helperCmd returns a command running helper name with path and n.
func helperCmd(t *testing.T, name, path, n string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, helperPath+"="+path, helperN+"="+n)
	cmd.Stderr = os.Stderr
	return cmd
}

// helperProc is a running helper process.
type helperProc struct{ cmd *exec.Cmd }

// startHelper starts helper name; it is killed if the test ends first.
func startHelper(t *testing.T, name, path, n string) *helperProc {
	t.Helper()
	cmd := helperCmd(t, name, path, n)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return &helperProc{cmd: cmd}
}

// wait returns the helper's exit code.
func (p *helperProc) wait(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		t.Fatalf("helper: %v", err)
		return -1
	}
}
