// Package emulators starts the AWS emulators that the adapter tests of
// adapters/aws run against: dynalite for DynamoDB and local-aws-sqs for SQS
// (npm packages pinned by package.json and package-lock.json in this
// directory, installed into its node_modules by `make emulators`).
//
// Each emulator runs as a child process (server.js in this directory) on a
// free port of 127.0.0.1, for the lifetime of the test that asked for it.
// When an endpoint is given in the environment — AWS_ENDPOINT_URL_<SERVICE>
// or AWS_ENDPOINT_URL, as aws-sdk-go-v2 reads them, e.g. LocalStack's
// http://localhost:4566 — nothing is started and that endpoint is used.
//
// A missing emulator fails the test (never skips it): in CI (CI=true) the
// Makefile must have installed it, and locally the message says to run
// `make emulators`.
//
// Google's official Firestore and Pub/Sub emulators (gcloud SDK) are in
// gcloud.go, and moto (moto_server: Secrets Manager, ACM and more behind
// one endpoint) in moto.go: one process per test binary, shared by its
// tests.
package emulators

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Service names an AWS service the helpers know about.
type Service string

// Services. The value is the suffix of the service's AWS_ENDPOINT_URL_
// variable (the SDK's service id in upper case with '_' for spaces).
const (
	DynamoDB       Service = "DYNAMODB"
	SQS            Service = "SQS"
	SecretsManager Service = "SECRETS_MANAGER"
)

// launcherArg maps a service to server.js's argument; services missing
// here have no emulator on this machine.
var launcherArg = map[Service]string{DynamoDB: "dynamodb", SQS: "sqs"}

// startTimeout bounds how long an emulator may take to print its endpoint.
const startTimeout = 30 * time.Second

// endpointPrefix starts the line server.js prints once it listens.
const endpointPrefix = "CERTFN_EMULATOR_ENDPOINT="

// External returns the endpoint the environment gives for svc
// (AWS_ENDPOINT_URL_<svc>, else AWS_ENDPOINT_URL), and whether there is one.
func External(svc Service) (string, bool) {
	for _, name := range []string{"AWS_ENDPOINT_URL_" + string(svc), "AWS_ENDPOINT_URL"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			return v, true
		}
	}
	return "", false
}

// Dir returns this package's source directory, where package.json,
// server.js and node_modules live.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "tests/emulators"
	}
	return filepath.Dir(file)
}

// Endpoint returns the endpoint to test svc against: the external one if
// the environment names one (see External), else a freshly started local
// emulator that is stopped when t's test ends. It fails t when svc has no
// emulator here and no external endpoint, or when the emulator is not
// installed or does not start.
func Endpoint(t testing.TB, svc Service) string {
	t.Helper()
	if ep, ok := External(svc); ok {
		return ep
	}
	arg, ok := launcherArg[svc]
	if !ok {
		t.Fatalf("no emulator for %s on this machine: set AWS_ENDPOINT_URL_%s or AWS_ENDPOINT_URL (e.g. LocalStack)", svc, svc)
	}
	if err := Installed(); err != nil {
		t.Fatal(missingMessage(err))
	}
	ep, stop, err := Start(arg)
	if err != nil {
		t.Fatalf("start %s emulator: %v", svc, err)
	}
	t.Cleanup(stop)
	return ep
}

// missingMessage explains a missing installation; CI=true says that the
// build is broken rather than asking a person to run make.
func missingMessage(err error) string {
	if os.Getenv("CI") == "true" {
		return fmt.Sprintf("AWS emulators missing in CI (make test depends on `make emulators`, which must have installed them): %v", err)
	}
	return fmt.Sprintf("AWS emulators not installed: run `make emulators` (npm ci in tests/emulators): %v", err)
}

// Installed reports why the emulators cannot run (node missing, packages
// not installed), or nil.
func Installed() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	for _, pkg := range []string{"dynalite", "local-aws-sqs"} {
		p := filepath.Join(Dir(), "node_modules", pkg, "package.json")
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("npm package %s: %w", pkg, err)
		}
	}
	return nil
}

// Start runs `node server.js arg` and returns its endpoint and a stop
// function (idempotent) that ends the process and waits for it. The child
// also exits by itself when this process dies (its stdin closes).
func Start(arg string) (endpoint string, stop func(), err error) {
	cmd := exec.Command("node", filepath.Join(Dir(), "server.js"), arg)
	cmd.Dir = Dir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = stdin.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), endpointPrefix); ok {
				lines <- v
				break
			}
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout) // keep the pipe drained
	}()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	select {
	case ep, ok := <-lines:
		if ok {
			return ep, stop, nil
		}
		stop()
		return "", nil, fmt.Errorf("%s emulator exited before listening: %s", arg, strings.TrimSpace(stderr.String()))
	case <-ctx.Done():
		stop()
		return "", nil, errors.New(arg + " emulator did not print its endpoint within " + startTimeout.String())
	}
}

// lockedBuffer collects the emulator's stderr (exec copies it from a
// goroutine) for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
