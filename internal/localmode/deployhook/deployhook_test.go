package deployhook

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// counts is a ports.Metrics that counts Inc calls by name and labels.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) Inc(name string, labels ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[name+"{"+strings.Join(labels, "=")+"}"]++
}
func (c *counts) Observe(string, float64, ...string) {}
func (c *counts) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuf) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type rig struct {
	t       *testing.T
	dir     string
	log     *syncBuf
	metrics *counts
}

func newRig(t *testing.T) *rig {
	return &rig{t: t, dir: t.TempDir(), log: &syncBuf{}, metrics: &counts{}}
}

// runner builds a Runner whose command appends a line to <dir>/runs.
func (r *rig) runner(command string, timeout time.Duration) *Runner {
	r.t.Helper()
	if command == "" {
		command = `echo "$CERTFN_NAMESPACE/$CERTFN_CERTIFICATE rev=$CERTFN_REVISION secret=$CERTFN_SECRET_NAME dir=$CERTFN_SECRET_DIR lineage=$RENEWED_LINEAGE domains=$RENEWED_DOMAINS names=$CERTFN_DNS_NAMES notAfter=$CERTFN_NOT_AFTER" >> runs`
	}
	run, err := New(Config{Command: command, Timeout: timeout, StateFile: filepath.Join(r.dir, "deploy-hooks.json"),
		SecretDir: func(ns, name string) (string, error) { return filepath.Join(r.dir, "secrets", ns, name), nil },
		Log:       slog.New(slog.NewTextHandler(r.log, nil)), Metrics: r.metrics})
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

func (r *rig) runs() []string {
	b, err := os.ReadFile(filepath.Join(r.dir, "runs"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// cert builds default/web with the given revision and conditions.
func cert(rev int, ready, issuing bool) *api.Certificate {
	c := &api.Certificate{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"},
		Spec: api.CertificateSpec{SecretName: "web-tls", DNSNames: []string{"web.example.com", "www.example.com"}}}
	if rev > 0 {
		c.Status.Revision = &rev
	}
	na := api.Time{Time: time.Date(2027, 2, 20, 12, 0, 0, 0, time.UTC)}
	c.Status.NotAfter = &na
	status := func(b bool) api.ConditionStatus {
		if b {
			return api.ConditionTrue
		}
		return api.ConditionFalse
	}
	c.Status.Conditions = []api.Condition{{Type: "Ready", Status: status(ready)}, {Type: "Issuing", Status: status(issuing)}}
	return c
}

func TestRunsOncePerRevision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		observed []*api.Certificate
		want     []string // revisions run, in order
	}{
		{"not ready yet", []*api.Certificate{cert(0, false, true), cert(1, false, true)}, nil},
		{"issued", []*api.Certificate{cert(1, true, false)}, []string{"1"}},
		{"seen again", []*api.Certificate{cert(1, true, false), cert(1, true, false), cert(1, true, false)}, []string{"1"}},
		{"renewing, then renewed", []*api.Certificate{cert(1, true, false), cert(1, true, true), cert(2, true, false)}, []string{"1", "2"}},
		{"ready but no revision", []*api.Certificate{cert(0, true, false)}, nil},
		{"not ready after a failed renewal", []*api.Certificate{cert(2, false, false)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			run := r.runner("", 0)
			for _, c := range tc.observed {
				run.Observe(c)
				run.Wait()
			}
			var revs []string
			for _, l := range r.runs() {
				_, rest, _ := strings.Cut(l, "rev=")
				rev, _, _ := strings.Cut(rest, " ")
				revs = append(revs, rev)
			}
			if strings.Join(revs, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("ran for revisions %v, want %v", revs, tc.want)
			}
			if n := r.metrics.get(MetricRuns + "{result=ok}"); n != len(tc.want) {
				t.Fatalf("%s ok = %d, want %d", MetricRuns, n, len(tc.want))
			}
		})
	}
}

func TestEnvironment(t *testing.T) {
	r := newRig(t)
	run := r.runner("", 0)
	run.Observe(cert(3, true, false))
	run.Wait()
	runs := r.runs()
	secretDir := filepath.Join(r.dir, "secrets", "default", "web-tls")
	want := "default/web rev=3 secret=web-tls dir=" + secretDir + " lineage=" + secretDir +
		" domains=web.example.com www.example.com names=web.example.com www.example.com notAfter=2027-02-20T12:00:00Z"
	if len(runs) != 1 || runs[0] != want {
		t.Fatalf("hook saw\n%q\nwant\n%q", runs, want)
	}
}

// The state file makes a new Runner (a restart) skip what already ran and
// run what did not.
func TestStateSurvivesARestart(t *testing.T) {
	r := newRig(t)
	first := r.runner("", 0)
	first.Observe(cert(1, true, false))
	first.Wait()
	second := r.runner("", 0)
	second.Observe(cert(1, true, false))
	second.Wait()
	if n := len(r.runs()); n != 1 {
		t.Fatalf("revision 1 ran %d times across a restart, want 1", n)
	}
	second.Observe(cert(2, true, false))
	second.Wait()
	if n := len(r.runs()); n != 2 {
		t.Fatalf("%d runs after revision 2, want 2", n)
	}
	// A corrupt state file is refused, naming the file, rather than
	// running every hook again silently.
	if err := os.WriteFile(filepath.Join(r.dir, "deploy-hooks.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Command: "true", StateFile: filepath.Join(r.dir, "deploy-hooks.json"), SecretDir: func(string, string) (string, error) { return "", nil }})
	if err == nil || !strings.Contains(err.Error(), "deploy-hooks.json") {
		t.Fatalf("corrupt state file: %v", err)
	}
}

// A failing hook is logged and counted and not run again for the same
// revision (certbot's behaviour); a hook that outlives its timeout is killed.
func TestFailuresAndTimeouts(t *testing.T) {
	t.Run("failure", func(t *testing.T) {
		r := newRig(t)
		run := r.runner(`echo "reload failed" >&2; echo x >> runs; exit 3`, 0)
		run.Observe(cert(1, true, false))
		run.Wait()
		run.Observe(cert(1, true, false))
		run.Wait()
		if n := len(r.runs()); n != 1 {
			t.Fatalf("a failed hook ran %d times for one revision, want 1", n)
		}
		if r.metrics.get(MetricRuns+"{result=failed}") != 1 || !strings.Contains(r.log.String(), "reload failed") ||
			!strings.Contains(r.log.String(), "exit status 3") {
			t.Fatalf("failure not counted or logged: %v\n%s", r.metrics.m, r.log.String())
		}
	})
	t.Run("timeout", func(t *testing.T) {
		r := newRig(t)
		run := r.runner(`sleep 30`, 200*time.Millisecond)
		run.Observe(cert(1, true, false))
		run.Wait()
		if r.metrics.get(MetricRuns+"{result=timeout}") != 1 || !strings.Contains(r.log.String(), "timed out") {
			t.Fatalf("timeout not counted or logged: %v\n%s", r.metrics.m, r.log.String())
		}
	})
}

// A revision observed while the hook runs for the previous one runs after
// it, not concurrently.
func TestOneRunAtATimePerCertificate(t *testing.T) {
	r := newRig(t)
	gate := filepath.Join(r.dir, "gate")
	run := r.runner(`while [ ! -e gate ]; do sleep 0.01; done; echo "start $CERTFN_REVISION" >> runs; sleep 0.05; echo "end $CERTFN_REVISION" >> runs`, 0)
	run.Observe(cert(1, true, false))
	run.Observe(cert(2, true, false))
	run.Observe(cert(3, true, false)) // replaces 2: only the latest waits
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run.Wait()
	if got := strings.Join(r.runs(), ","); got != "start 1,end 1,start 3,end 3" {
		t.Fatalf("runs %s", got)
	}
}

// Key material that a hook prints is not logged.
func TestOutputIsRedacted(t *testing.T) {
	r := newRig(t)
	run := r.runner(`printf -- '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIO\n-----END EC PRIVATE KEY-----\nreloaded\n-----BEGIN PRIVATE KEY-----\nMIGHAgEAMB'`, 0)
	run.Observe(cert(1, true, false))
	run.Wait()
	out := r.log.String()
	if strings.Contains(out, "MHcCAQEEIO") || strings.Contains(out, "MIGHAgEAMB") || !strings.Contains(out, "reloaded") ||
		!strings.Contains(out, "[private key redacted]") {
		t.Fatalf("log:\n%s", out)
	}
}

func TestConfigErrors(t *testing.T) {
	dirFn := func(string, string) (string, error) { return "", nil }
	for _, tc := range []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"empty command", Config{Command: "  ", StateFile: "x", SecretDir: dirFn}, "command is empty"},
		{"no state file", Config{Command: "true", SecretDir: dirFn}, "state file"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
}

// A Certificate deleted and created again under the same name (a new UID)
// starts at revision 1 again: the hook runs for it.
func TestRecreatedCertificate(t *testing.T) {
	r := newRig(t)
	run := r.runner("", 0)
	run.Observe(cert(1, true, false))
	run.Wait()
	again := cert(1, true, false)
	again.UID = "uid-2"
	run.Observe(again)
	run.Wait()
	if n := len(r.runs()); n != 2 {
		t.Fatalf("%d runs, want 2 (the re-created Certificate's revision 1 too)", n)
	}
}

// A hook that leaves a process in the background finishes when the shell
// does (no pipe to wait on) and counts as ok; one that times out is killed
// with what it started.
func TestBackgroundAndTimeoutKillsTheGroup(t *testing.T) {
	r := newRig(t)
	start := time.Now()
	run := r.runner(`sleep 5 & echo reloaded`, 0)
	run.Observe(cert(1, true, false))
	run.Wait()
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("the hook waited for its background process (%s)", d)
	}
	if r.metrics.get(MetricRuns+"{result=ok}") != 1 || !strings.Contains(r.log.String(), "reloaded") {
		t.Fatalf("background hook: %v\n%s", r.metrics.m, r.log.String())
	}

	r2 := newRig(t)
	marker := filepath.Join(r2.dir, "child-survived")
	run2 := r2.runner(`(sleep 1; touch `+marker+`) & sleep 30`, 200*time.Millisecond)
	run2.Observe(cert(1, true, false))
	run2.Wait()
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a process started by a timed-out hook survived the kill")
	}
	if r2.metrics.get(MetricRuns+"{result=timeout}") != 1 {
		t.Fatalf("timeout not counted: %v", r2.metrics.m)
	}
}

// A hook that could not start (no secret directory) is not recorded as
// run: the next observation tries again.
func TestNotStartedIsRetried(t *testing.T) {
	r := newRig(t)
	fail := true
	run, err := New(Config{Command: `echo x >> runs`, StateFile: filepath.Join(r.dir, "deploy-hooks.json"),
		SecretDir: func(ns, name string) (string, error) {
			if fail {
				return "", os.ErrNotExist
			}
			return filepath.Join(r.dir, ns, name), nil
		}, Log: slog.New(slog.NewTextHandler(r.log, nil)), Metrics: r.metrics})
	if err != nil {
		t.Fatal(err)
	}
	run.Observe(cert(1, true, false))
	run.Wait()
	fail = false
	run.Observe(cert(1, true, false))
	run.Wait()
	if n := len(r.runs()); n != 1 {
		t.Fatalf("%d runs, want 1 after the directory became available", n)
	}
}
