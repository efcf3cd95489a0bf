package emulators

// moto's server mode (moto_server, Python; moto 5.2 on certfn's CI image)
// emulates many AWS services behind one endpoint: certfn runs the Secrets
// Manager and ACM tests against it, besides the hand-written doubles.
//
// Like the gcloud emulators, each test binary starts at most one
// moto_server, on first use, on a free port of 127.0.0.1, and shares it
// between its tests; tests isolate themselves by resource name (moto keeps
// all accounts' data in one process; the default account is 123456789012).
// It runs under the same sh supervisor in its own process group, so it ends
// when the test binary exits, however it exits.
//
// moto_server is not installed by `make emulators`: a missing one fails the
// test with a message saying so (in CI, that the image is broken). Nothing
// here reads AWS_ENDPOINT_URL: callers that honour an external endpoint
// check External first.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// motoReady starts the line werkzeug prints once moto_server listens.
const motoReady = "Running on http://"

// motoStartTimeout bounds moto_server's start (about 1 s on an idle
// machine).
const motoStartTimeout = 60 * time.Second

// MotoAccountID is the account moto answers for with any credentials
// (GetCallerIdentity), unless MOTO_ACCOUNT_ID is set for moto_server.
const MotoAccountID = "123456789012"

var motoShared struct {
	once sync.Once
	url  string
	err  error
	// proc stays referenced for the life of the binary (see sharedEmu).
	proc *GcloudProcess
}

// Moto returns the endpoint URL (http://127.0.0.1:PORT) of the moto_server
// this test binary shares, started on first use and stopped when the
// binary exits. Give it to the SDK as the service's endpoint (any region,
// any credentials). It fails t when moto_server is missing or does not
// start; a failed start is remembered, so later tests fail at once.
func Moto(t testing.TB) string {
	t.Helper()
	motoShared.once.Do(func() {
		motoShared.proc, motoShared.err = StartMoto()
		if motoShared.err == nil {
			motoShared.url = "http://" + motoShared.proc.Host
		}
	})
	if motoShared.err != nil {
		t.Fatalf("moto: %v", motoShared.err)
	}
	return motoShared.url
}

// ErrMotoMissing marks errors about a missing moto_server.
var ErrMotoMissing = errors.New("moto_server not installed")

// motoMissing explains a missing moto_server; CI=true says the image is
// broken rather than asking a person to install it.
func motoMissing(err error) error {
	if os.Getenv("CI") == "true" {
		return fmt.Errorf("%w in CI (the CI image ships moto[server] 5.2): %v", ErrMotoMissing, err)
	}
	return fmt.Errorf("%w: %v. Install moto's server mode (Python: pip install 'moto[server]'), so that moto_server is on PATH", ErrMotoMissing, err)
}

// StartMoto starts a moto_server on a free port of 127.0.0.1 and returns
// it (Host is host:port); Stop ends its process group. The port is taken
// by another process between FreePort and the bind at times: a server that
// exits before it is ready is started again on another port.
func StartMoto() (*GcloudProcess, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, motoMissing(err)
	}
	var lastErr error
	for attempt := 0; attempt < gcloudStartAttempts; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p, exited, err := startMotoOnce(bin, port)
		if err == nil {
			return p, nil
		}
		lastErr = err
		if !exited {
			break
		}
	}
	return nil, lastErr
}

func startMotoOnce(bin string, port int) (p *GcloudProcess, exited bool, err error) {
	host := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("sh", "-c", supervisor, "sh", bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, false, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, false, err
	}
	p = &GcloudProcess{Host: host, cmd: cmd, release: stdin.Close}
	ready := make(chan struct{})
	ended := make(chan struct{})
	var tail tailBuffer
	go func() {
		defer close(ended)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		signaled := false
		for sc.Scan() {
			// Keep draining after the ready line: moto_server logs every
			// request, and a full pipe would block it.
			if line := sc.Text(); !signaled {
				tail.add(line)
				if strings.Contains(line, motoReady+host) {
					signaled = true
					close(ready)
				}
			}
		}
	}()
	timer := time.NewTimer(motoStartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return p, false, nil
	case <-ended:
		p.Stop()
		return nil, true, fmt.Errorf("moto_server (%s) exited before it was ready; its output:\n%s", bin, tail.String())
	case <-timer.C:
		p.Stop()
		return nil, false, fmt.Errorf("moto_server (%s) did not print %q within %s; its output:\n%s", bin, motoReady+host, motoStartTimeout, tail.String())
	}
}
