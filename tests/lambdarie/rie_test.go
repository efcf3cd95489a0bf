package lambdarie

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/certfn/certfn/tests/pebbletest"
)

// lambdaFn is one function's execution environment: its bootstrap under
// an RIE of its own (one function per RIE process), reached on a free
// loopback port. Lambda runs many environments of a function at once; the
// RIE runs one, so invocations of a function are serialized here.
type lambdaFn struct {
	fn        *function
	invokeURL string
	cmd       *exec.Cmd
	out       *tailBuffer

	mu          sync.Mutex // one invocation at a time
	invocations atomic.Int64
	failures    atomic.Int64
}

// lambdaEnv is the environment Lambda gives fn's bootstrap in the
// provided.al2023 runtime ("Defined runtime environment variables" of the
// Lambda developer guide), then fn's own variables from the Terraform
// state, then the emulator's additions: extra (the AWS endpoint) and the
// credentials of fn's role, played by moto's any-key test credentials.
// Nothing is inherited from this process. AWS_LAMBDA_FUNCTION_TIMEOUT is
// the RIE's setting of the invocation deadline.
func lambdaEnv(fn *function, taskRoot string, extra map[string]string) []string {
	env := map[string]string{
		"_HANDLER":                        fn.Handler,
		"AWS_REGION":                      region,
		"AWS_DEFAULT_REGION":              region,
		"AWS_LAMBDA_FUNCTION_NAME":        fn.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(fn.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(fn.TimeoutSeconds),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       fn.LogGroup,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]rie",
		"LAMBDA_TASK_ROOT":                taskRoot,
		"LAMBDA_RUNTIME_DIR":              "/var/runtime",
		"LANG":                            "en_US.UTF-8",
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LD_LIBRARY_PATH":                 "/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib",
		"TZ":                              ":UTC",
	}
	if fn.LogFmt == "JSON" {
		env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
	}
	for k, v := range fn.Env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"] = "test", "test", "rie-session"
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// startRIE runs rie with bootstrap (fn's, unpacked in its task root) on
// two free loopback ports (the invoke API and the Runtime API), in its own
// process group. It is stopped when t ends; so is the bootstrap, which the
// RIE starts in a process group of its own at the first invocation.
func startRIE(t *testing.T, rie, bootstrap string, fn *function, extra map[string]string) *lambdaFn {
	t.Helper()
	addr, apiAddr := freeAddr(t), freeAddr(t)
	out := &tailBuffer{max: 1 << 20, prefix: fn.Key, echo: os.Getenv("CERTFN_TEST_LOG") == "1"}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = lambdaEnv(fn, cmd.Dir, extra)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the RIE for %s: %v", fn.Name, err)
	}
	l := &lambdaFn{fn: fn, invokeURL: "http://" + addr + "/2015-03-31/functions/function/invocations", cmd: cmd, out: out}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		pid := cmd.Process.Pid
		for _, c := range childPIDs(pid) { // the bootstrap
			if pg, err := syscall.Getpgid(c); err == nil && pg != pid {
				_ = syscall.Kill(-pg, syscall.SIGKILL)
			}
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("%s (RIE and function output, last lines):\n%s", fn.Name, out.tail(60))
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return l
		}
		select {
		case <-exited:
			t.Fatalf("the RIE for %s exited: %s", fn.Name, out.tail(20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the RIE for %s does not listen on %s: %s", fn.Name, addr, out.tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// invokeError is an invocation that failed: the function returned an
// error or exited, or the invocation timed out.
type invokeError struct {
	fn, status, body string
}

func (e *invokeError) Error() string {
	return fmt.Sprintf("invoke %s: %s: %s", e.fn, e.status, e.body)
}

// invoke is Lambda's synchronous Invoke of l with payload: it returns the
// function's response payload, or an *invokeError.
func (l *lambdaFn) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.invocations.Add(1)
	// The RIE enforces the function's timeout; a little more here.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(l.fn.TimeoutSeconds+10)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.invokeURL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.failures.Add(1)
		return nil, fmt.Errorf("invoke %s: %w", l.fn.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		l.failures.Add(1)
		return nil, fmt.Errorf("invoke %s: read the response: %w", l.fn.Name, err)
	}
	var fe struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if resp.StatusCode != http.StatusOK || (json.Unmarshal(body, &fe) == nil && fe.ErrorType != "") ||
		strings.HasPrefix(string(body), "Task timed out") {
		l.failures.Add(1)
		return nil, &invokeError{fn: l.fn.Name, status: resp.Status, body: string(body)}
	}
	return body, nil
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(pebbletest.FreePort(t))
}

// childPIDs returns the processes whose parent is pid (from /proc).
func childPIDs(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// tailBuffer keeps the last max bytes written (a function's output),
// echoing lines to stderr with CERTFN_TEST_LOG=1.
type tailBuffer struct {
	mu     sync.Mutex
	b      []byte
	max    int
	prefix string
	echo   bool
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.echo {
		for _, line := range strings.SplitAfter(string(p), "\n") {
			if line != "" {
				fmt.Fprintf(os.Stderr, "[%s] %s", w.prefix, line)
			}
		}
	}
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append([]byte(nil), w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// tail returns the last n lines.
func (w *tailBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(w.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
