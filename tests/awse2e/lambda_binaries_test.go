package awse2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/tools/lambdazip/zipper"
)

// The functions whose mains this package builds (functions/aws/<name>);
// the api function is another package's and does not take CERTFN_INIT_ONLY.
var mains = []string{"worker", "signer", "scheduler", "http01"}

// buildMains builds the given functions for goos/goarch with `make
// lambda`'s flags into a temporary directory and returns it.
func buildMains(tb testing.TB, goos, goarch string, names ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	args := []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "github.com/certfn/certfn/functions/aws/"+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// TestMain removes the binaries hostMains built.
func TestMain(m *testing.M) {
	code := m.Run()
	if hostDir != "" {
		_ = os.RemoveAll(hostDir)
	}
	os.Exit(code)
}

var (
	hostOnce sync.Once
	hostDir  string
	hostErr  string
)

// hostMains builds the mains for this machine once per test binary.
func hostMains(tb testing.TB) string {
	tb.Helper()
	hostOnce.Do(func() {
		dir, err := os.MkdirTemp("", "certfn-lambda-")
		if err != nil {
			hostErr = err.Error()
			return
		}
		args := []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", dir + string(filepath.Separator)}
		for _, n := range mains {
			args = append(args, "github.com/certfn/certfn/functions/aws/"+n)
		}
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			hostErr = err.Error() + "\n" + string(out)
		}
		hostDir = dir
	})
	if hostErr != "" {
		tb.Fatalf("go build: %s", hostErr)
	}
	return hostDir
}

// initEnv is a complete function environment pointing at nothing real:
// initialisation makes no network call.
func initEnv(role string) []string {
	return append(os.Environ(),
		"CERTFN_FUNCTION="+role,
		awsmode.EnvInitOnly+"=1",
		awsmode.EnvTable+"=certfn",
		awsmode.EnvQueueURL+"=https://sqs.us-east-1.amazonaws.com/123456789012/certfn-worker",
		awsmode.EnvSignerQueueURL+"=https://sqs.us-east-1.amazonaws.com/123456789012/certfn-signer",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=example",
		"AWS_EC2_METADATA_DISABLED=true")
}

// Each main starts, assembles its function and exits 0 with
// CERTFN_INIT_ONLY=1; with its table missing it exits 1 naming the variable.
func TestMainsInitialiseFromTheEnvironment(t *testing.T) {
	dir := hostMains(t)
	for _, name := range mains {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)
			cmd := exec.Command(bin)
			cmd.Env = initEnv(name)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("init-only run: %v\n%s", err, out)
			}
			var env []string
			for _, kv := range initEnv(name) {
				if !strings.HasPrefix(kv, awsmode.EnvTable+"=") {
					env = append(env, kv)
				}
			}
			cmd = exec.Command(bin)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "CERTFN_TABLE: required") {
				t.Fatalf("without CERTFN_TABLE: err %v, stderr %q; want exit 1 naming CERTFN_TABLE", err, stderr.String())
			}
		})
	}
}

// BenchmarkLambdaZipSize builds each function as `make lambda` does for
// linux/arm64, zips it and reports the zip's size (target ≤ 15 MB).
//
//	go test -run '^$' -bench LambdaZipSize -benchtime 1x ./tests/awse2e/
func BenchmarkLambdaZipSize(b *testing.B) {
	names := append([]string{"api"}, mains...)
	dir := buildMains(b, "linux", "arm64", names...)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			out := filepath.Join(b.TempDir(), name+".zip")
			for range b.N {
				if err := zipper.WriteFile(out, filepath.Join(dir, name)); err != nil {
					b.Fatal(err)
				}
			}
			zst, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			bst, _ := os.Stat(filepath.Join(dir, name))
			b.ReportMetric(float64(zst.Size())/1e6, "zip-MB")
			b.ReportMetric(float64(bst.Size())/1e6, "binary-MB")
			if zst.Size() > 15e6 {
				b.Errorf("%s.zip is %.1f MB, over the 15 MB target", name, float64(zst.Size())/1e6)
			}
		})
	}
}

// BenchmarkColdInit runs each function's binary (built for this machine)
// with CERTFN_INIT_ONLY=1 and reports the wall time from process start to
// ready for the first event (the process exits there): Go runtime start,
// package initialisation, reading the environment, building the SDK
// clients, the adapters and the engine. Lambda's own start (runtime API,
// sandbox) is not included.
//
//	go test -run '^$' -bench ColdInit -benchtime 20x ./tests/awse2e/
func BenchmarkColdInit(b *testing.B) {
	dir := hostMains(b)
	for _, name := range mains {
		b.Run(name, func(b *testing.B) {
			bin := filepath.Join(dir, name)
			env := initEnv(name)
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				cmd := exec.Command(bin)
				cmd.Env = env
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/init")
			b.ReportMetric(0, "ns/op")
		})
	}
}
