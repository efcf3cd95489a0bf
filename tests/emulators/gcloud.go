package emulators

// Google's official emulators, shipped with the gcloud SDK (components
// cloud-firestore-emulator and pubsub-emulator; Java). The adapter tests of
// adapters/gcp run against them.
//
// Starting one takes a few seconds (a JVM), so each test binary starts at
// most one process per emulator, on first use, and shares it between its
// tests: tests isolate themselves by project ID (NewProjectID) or by
// collection, topic or subscription name. The process lives until the test
// binary exits: it runs under a small sh supervisor in its own process
// group that holds the read end of a pipe from this process, and kills the
// whole group (the gcloud wrapper scripts do not exec Java) when the pipe
// closes — at a normal exit, a crash or a kill of the test binary alike.
//
// When the endpoint variable the client libraries read is set
// (FIRESTORE_EMULATOR_HOST, PUBSUB_EMULATOR_HOST), nothing is started and
// that host:port is used. A missing gcloud, emulator component or Java
// fails the test with a message naming what to install (never a skip).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Gcloud describes one of the gcloud SDK's emulators.
type Gcloud struct {
	// Name is the service, for messages ("Firestore").
	Name string
	// EnvVar is the variable the client libraries read for the emulator's
	// host:port; when set, nothing is started.
	EnvVar string
	// Component is the gcloud component that ships the emulator.
	Component string
	// Path is the launcher script, relative to the SDK root.
	Path string
	// Args returns the launcher's arguments for a port on 127.0.0.1.
	Args func(port int) []string
	// Ready is printed (stdout or stderr) once the emulator serves.
	Ready string
}

// The emulators. Their launchers and ready lines were checked with
// gcloud 528.
var (
	FirestoreEmulator = Gcloud{
		Name:      "Firestore",
		EnvVar:    "FIRESTORE_EMULATOR_HOST",
		Component: "cloud-firestore-emulator",
		Path:      "platform/cloud-firestore-emulator/cloud_firestore_emulator",
		Args: func(port int) []string {
			return []string{"start", "--host=127.0.0.1", "--port=" + strconv.Itoa(port)}
		},
		Ready: "Dev App Server is now running",
	}
	PubSubEmulator = Gcloud{
		Name:      "Pub/Sub",
		EnvVar:    "PUBSUB_EMULATOR_HOST",
		Component: "pubsub-emulator",
		Path:      "platform/pubsub-emulator/bin/cloud-pubsub-emulator",
		Args: func(port int) []string {
			return []string{"--host=127.0.0.1", "--port=" + strconv.Itoa(port)}
		},
		Ready: "Server started, listening on",
	}
)

// gcloudStartTimeout bounds a JVM emulator's start (about 1.5 s on an idle
// machine; CI runs other test binaries on the same two cores).
const gcloudStartTimeout = 90 * time.Second

// gcloudStartAttempts: the free port is found before the emulator binds it,
// so another process may take it first; an emulator that exits before it
// is ready is started again on another port, this many times in all.
const gcloudStartAttempts = 3

// sdkRoot is the gcloud SDK root, asked once per test binary.
var sdkRoot = sync.OnceValues(func() (string, error) {
	if _, err := exec.LookPath("gcloud"); err != nil {
		return "", fmt.Errorf("gcloud: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "gcloud", "info", "--format=value(installation.sdk_root)").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("gcloud info: %w", err)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", errors.New("gcloud info printed no installation.sdk_root")
	}
	return root, nil
})

// SDKRoot returns the gcloud SDK root (`gcloud info
// --format='value(installation.sdk_root)'`, asked once per test binary).
func SDKRoot() (string, error) { return sdkRoot() }

// Firestore returns the host:port of a Firestore emulator for t: the
// FIRESTORE_EMULATOR_HOST of the environment, else the one emulator this
// test binary shares (started on first use). Set it as
// FIRESTORE_EMULATOR_HOST for the client library, and isolate the test by
// project ID or collection.
func Firestore(t testing.TB) string { t.Helper(); return Shared(t, FirestoreEmulator) }

// PubSub returns the host:port of a Pub/Sub emulator for t, like Firestore
// (PUBSUB_EMULATOR_HOST).
func PubSub(t testing.TB) string { t.Helper(); return Shared(t, PubSubEmulator) }

// ExternalGcloud returns the host:port the environment gives for e
// (e.EnvVar), and whether there is one.
func ExternalGcloud(e Gcloud) (string, bool) {
	v := strings.TrimSpace(os.Getenv(e.EnvVar))
	return v, v != ""
}

// shared holds the emulators this test binary started: one per launcher
// path, started once. A failed start is remembered, so the tests after the
// first fail at once with the same message instead of waiting again.
var shared struct {
	mu   sync.Mutex
	emus map[string]*sharedEmu
}

type sharedEmu struct {
	once sync.Once
	host string
	err  error
	// proc stays referenced for the life of the binary: were it
	// collected, the finalizer of its stdin pipe would close the pipe,
	// and the supervisor would stop the emulator under the tests.
	proc *GcloudProcess
}

// Shared returns e's endpoint for t: the environment's (ExternalGcloud),
// else the emulator this test binary shares, started on first use and
// stopped when the binary exits. It fails t when e cannot be started.
func Shared(t testing.TB, e Gcloud) string {
	t.Helper()
	if host, ok := ExternalGcloud(e); ok {
		return host
	}
	shared.mu.Lock()
	if shared.emus == nil {
		shared.emus = map[string]*sharedEmu{}
	}
	se := shared.emus[e.Path]
	if se == nil {
		se = &sharedEmu{}
		shared.emus[e.Path] = se
	}
	shared.mu.Unlock()
	se.once.Do(func() {
		root, err := SDKRoot()
		if err != nil {
			se.err = gcloudMissing(e, err)
			return
		}
		// Never stopped explicitly: the supervisor ends the process group
		// when this test binary exits (see the package comment).
		se.proc, se.err = StartGcloudProcess(root, e)
		if se.err == nil {
			se.host = se.proc.Host
		}
	})
	if se.err != nil {
		t.Fatalf("%s emulator: %v", e.Name, se.err)
	}
	return se.host
}

// ErrGcloudMissing marks errors about a missing gcloud SDK, emulator
// component or Java.
var ErrGcloudMissing = errors.New("not installed")

// gcloudMissing explains what to install (or which variable to set) for e.
func gcloudMissing(e Gcloud, err error) error {
	return fmt.Errorf("%w: %v. The %s emulator needs the gcloud SDK with its %s component and Java 11+ "+
		"(preinstalled on certfn's CI machines; elsewhere `gcloud components install %s`, or the "+
		"google-cloud-cli-%s package), or set %s to a running emulator's host:port",
		ErrGcloudMissing, err, e.Name, e.Component, e.Component, strings.TrimPrefix(e.Component, "cloud-"), e.EnvVar)
}

// FreePort returns a port of 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// supervisor runs the emulator ("$@") in the background and kills its
// whole process group (itself, the launcher script and the JVM the script
// forked) when its own standard input closes or when the emulator exits.
// (An asynchronous list reads /dev/null unless redirected: hence fd 3.)
const supervisor = `exec 3<&0 </dev/null; "$@" 3<&- & e=$!; { read -r _ <&3; kill -KILL 0; } & wait "$e"; kill -KILL 0`

// GcloudProcess is a started emulator.
type GcloudProcess struct {
	// Host is the emulator's host:port.
	Host string
	cmd  *exec.Cmd
	// release closes the supervisor's stdin: the supervisor then kills
	// the process group (what happens when the test binary exits).
	release func() error
	once    sync.Once
}

// Pgid returns the process group of the emulator (its supervisor's pid).
func (p *GcloudProcess) Pgid() int { return p.cmd.Process.Pid }

// Stop ends the emulator's whole process group and waits for the
// supervisor. It is idempotent.
func (p *GcloudProcess) Stop() {
	p.once.Do(func() {
		_ = p.release()
		_ = syscall.Kill(-p.Pgid(), syscall.SIGKILL)
		_ = p.cmd.Wait()
	})
}

// StartGcloud starts e from the SDK at root on a free port of 127.0.0.1
// and returns its host:port, a stop function (idempotent; ends the whole
// process group) and an error if it is missing or not ready within
// gcloudStartTimeout.
func StartGcloud(root string, e Gcloud) (host string, stop func(), err error) {
	p, err := StartGcloudProcess(root, e)
	if err != nil {
		return "", nil, err
	}
	return p.Host, p.Stop, nil
}

// StartGcloudProcess is StartGcloud returning the process.
func StartGcloudProcess(root string, e Gcloud) (*GcloudProcess, error) {
	launcher := filepath.Join(root, filepath.FromSlash(e.Path))
	if fi, err := os.Stat(launcher); err != nil || fi.IsDir() {
		return nil, gcloudMissing(e, fmt.Errorf("no launcher %s in the gcloud SDK at %s", e.Path, root))
	}
	if os.Getenv("JAVA_HOME") == "" {
		if _, err := exec.LookPath("java"); err != nil {
			return nil, gcloudMissing(e, fmt.Errorf("java: %w", err))
		}
	}
	var lastErr error
	for attempt := 0; attempt < gcloudStartAttempts; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p, exited, err := startGcloudOnce(launcher, e, port)
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

// startGcloudOnce starts e on port; exited reports an emulator that ended
// before it was ready (worth another port).
func startGcloudOnce(launcher string, e Gcloud, port int) (p *GcloudProcess, exited bool, err error) {
	cmd := exec.Command("sh", append([]string{"-c", supervisor, "sh", launcher}, e.Args(port)...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, false, err
	}
	// One pipe for stdout and stderr: the ready line may be on either.
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
	p = &GcloudProcess{Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, release: stdin.Close}

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
			line := sc.Text()
			if !signaled {
				tail.add(line)
				if strings.Contains(line, e.Ready) {
					signaled = true
					close(ready)
				}
			}
			// Keep reading after the ready line: a full pipe would
			// block the emulator's logging.
		}
	}()
	timer := time.NewTimer(gcloudStartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return p, false, nil
	case <-ended:
		p.Stop()
		return nil, true, fmt.Errorf("%s emulator (%s) exited before it was ready; its output:\n%s", e.Name, launcher, tail.String())
	case <-timer.C:
		p.Stop()
		return nil, false, fmt.Errorf("%s emulator (%s) did not print %q within %s; its output:\n%s", e.Name, launcher, e.Ready, gcloudStartTimeout, tail.String())
	}
}

// tailBuffer keeps the last lines of an emulator's output for messages.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
}

const tailLines = 30

func (b *tailBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > tailLines {
		b.lines = b.lines[len(b.lines)-tailLines:]
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

var projectSeq atomic.Int64

// NewProjectID returns a project ID no other test of any test binary uses
// (process id and a counter): Firestore and Pub/Sub emulators keep one
// independent data set per project, so a test that uses its own project
// shares the emulator with nobody. The "demo-" prefix is the emulators'
// convention for projects that do not exist in Google Cloud.
func NewProjectID() string {
	return fmt.Sprintf("demo-certfn-%d-%d", os.Getpid(), projectSeq.Add(1))
}
