// Package deployhook runs a user's command after a Certificate's secret
// receives a new certificate in local mode: certbot's --deploy-hook for
// `certfn serve --deploy-hook`, so that a web server can be reloaded after
// each issuance and renewal.
//
// Contract:
//   - The hook runs once per revision of a Certificate (status.revision) once
//     the Certificate is Ready and not Issuing: after the first issuance,
//     after each renewal or re-issuance. A rewrite of the secret's outputs
//     without a new certificate (e.g. a secretTemplate change) does not run
//     it.
//   - At least once: the revision is recorded in the state file after the
//     command exits (whatever its exit status: a failing hook is logged and
//     counted, not retried, as certbot does); a crash while it runs runs it
//     again at the next start. The first time a Certificate is seen with no
//     record, the hook runs for its current revision.
//   - One run at a time per Certificate; runs for different Certificates may
//     overlap (up to MaxParallel). A command that outlives Timeout is killed
//     with every process it started (its process group). Processes it
//     leaves in the background when it exits in time are left alone.
//   - A Certificate deleted and created again (a new UID) runs the hook for
//     its first revision again.
//   - The command runs with /bin/sh -c and gets the certificate's facts in
//     its environment (certbot's names too): CERTFN_NAMESPACE,
//     CERTFN_CERTIFICATE, CERTFN_SECRET_NAME, CERTFN_SECRET_DIR (tls.crt,
//     tls.key, ca.crt... inside), CERTFN_REVISION, CERTFN_NOT_AFTER
//     (RFC 3339), CERTFN_DNS_NAMES (space-separated), RENEWED_LINEAGE (the
//     secret directory) and RENEWED_DOMAINS (the DNS names, space-separated).
//     No key material is passed in the environment or logged.
package deployhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Metric names (labels: result = ok | failed | timeout).
const MetricRuns = "certfn_deploy_hook_runs_total"

// Config configures a Runner.
type Config struct {
	// Command is run with /bin/sh -c.
	Command string
	// Timeout bounds one run (default 5 minutes).
	Timeout time.Duration
	// StateFile records the revision each Certificate's hook last ran for.
	StateFile string
	// SecretDir returns the directory of a secret (local secret store).
	SecretDir func(namespace, name string) (string, error)
	// MaxParallel bounds concurrent runs (default 4).
	MaxParallel int
	// Log receives one line per run; Metrics counts runs (both optional).
	Log     *slog.Logger
	Metrics ports.Metrics
}

// Runner runs the hook; see the package comment for its contract.
type Runner struct {
	cfg  Config
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	done map[string]deployed // "namespace/name" -> what the hook ran for
	busy map[string]bool
	// again holds a Certificate observed while its hook was running.
	again map[string]*api.Certificate
}

// New returns a Runner, reading the state file when it exists. An
// unreadable state file is an error (it would run every hook again).
func New(cfg Config) (*Runner, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("deploy hook: the command is empty")
	}
	if cfg.StateFile == "" || cfg.SecretDir == nil {
		return nil, errors.New("deploy hook: a state file and a secret directory function are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = 4
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	r := &Runner{cfg: cfg, sem: make(chan struct{}, cfg.MaxParallel), done: map[string]deployed{},
		busy: map[string]bool{}, again: map[string]*api.Certificate{}}
	b, err := os.ReadFile(cfg.StateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("deploy hook: read state file: %w", err)
	default:
		var st state
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("deploy hook: state file %s is not valid JSON (%v); move it away to run every hook once", cfg.StateFile, err)
		}
		for k, v := range st.Deployed {
			r.done[k] = v
		}
	}
	return r, nil
}

// state is the state file's JSON.
type state struct {
	Deployed map[string]deployed `json:"deployed"`
}

// deployed is the Certificate (by UID: a re-created one starts again at
// revision 1) and revision the hook last ran for.
type deployed struct {
	UID      string `json:"uid"`
	Revision int    `json:"revision"`
}

// Observe is called with a Certificate as it is after a reconcile; it
// starts the hook when the contract says so and returns at once.
func (r *Runner) Observe(c *api.Certificate) {
	rev, ok := due(c)
	if !ok {
		return
	}
	key := c.Namespace + "/" + c.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done[key] == (deployed{UID: c.UID, Revision: rev}) {
		return
	}
	if r.busy[key] {
		r.again[key] = c
		return
	}
	r.busy[key] = true
	r.wg.Add(1)
	go r.run(key, c, rev)
}

// due returns the revision to deploy when c is Ready, not Issuing, and
// has one.
func due(c *api.Certificate) (int, bool) {
	if c == nil || c.Status.Revision == nil || !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) ||
		api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) {
		return 0, false
	}
	return *c.Status.Revision, true
}

// Wait blocks until every started run has finished.
func (r *Runner) Wait() { r.wg.Wait() }

func (r *Runner) run(key string, c *api.Certificate, rev int) {
	defer r.wg.Done()
	r.sem <- struct{}{}
	result, ran := r.exec(c, rev)
	<-r.sem
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.Inc(MetricRuns, "result", result)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ran {
		r.done[key] = deployed{UID: c.UID, Revision: rev}
		if err := r.save(); err != nil {
			r.cfg.Log.Warn("deploy hook", "certificate", key, "err", err)
		}
	}
	delete(r.busy, key)
	if next, ok := r.again[key]; ok {
		delete(r.again, key)
		if nrev, ok := due(next); ok && r.done[key] != (deployed{UID: next.UID, Revision: nrev}) {
			r.busy[key] = true
			r.wg.Add(1)
			go r.run(key, next, nrev)
		}
	}
}

// exec runs the command for c and logs the outcome; it returns the
// result label and whether the command ran (a run that could not start
// is tried again at the next observation).
func (r *Runner) exec(c *api.Certificate, rev int) (string, bool) {
	log := r.cfg.Log.With("certificate", c.Namespace+"/"+c.Name, "revision", rev)
	dir, err := r.cfg.SecretDir(c.Namespace, c.Spec.SecretName)
	if err != nil {
		log.Warn("deploy hook not run", "err", err)
		return "failed", false
	}
	// Output goes to a file, not a pipe: a hook that starts a background
	// process (a reload that forks) must not keep Wait waiting for the
	// pipe to close, nor lose its stdout when it does.
	out, err := os.CreateTemp("", "certfn-deploy-hook-*.log")
	if err != nil {
		log.Warn("deploy hook not run", "err", err)
		return "failed", false
	}
	defer os.Remove(out.Name())
	defer out.Close()
	names := strings.Join(c.Spec.DNSNames, " ")
	notAfter := ""
	if c.Status.NotAfter != nil {
		notAfter = c.Status.NotAfter.Time.UTC().Format(time.RFC3339)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", r.cfg.Command)
	cmd.Env = append(os.Environ(),
		"CERTFN_NAMESPACE="+c.Namespace,
		"CERTFN_CERTIFICATE="+c.Name,
		"CERTFN_SECRET_NAME="+c.Spec.SecretName,
		"CERTFN_SECRET_DIR="+dir,
		"CERTFN_REVISION="+strconv.Itoa(rev),
		"CERTFN_NOT_AFTER="+notAfter,
		"CERTFN_DNS_NAMES="+names,
		"RENEWED_LINEAGE="+dir,
		"RENEWED_DOMAINS="+names,
	)
	cmd.Dir = filepath.Dir(r.cfg.StateFile)
	cmd.Stdout, cmd.Stderr = out, out
	killGroupOnCancel(cmd) // a timeout kills the shell and what it started
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	tail := lastBytes(redact(readTail(out.Name(), 64<<10)), 2048)
	switch {
	case ctx.Err() != nil:
		log.Warn("deploy hook timed out and was killed", "timeout", r.cfg.Timeout, "output", tail)
		return "timeout", true
	case err != nil:
		log.Warn("deploy hook failed", "err", err, "took", took, "output", tail)
		return "failed", true
	}
	log.Info("deploy hook ran", "took", took, "output", tail)
	return "ok", true
}

// readTail returns the last n bytes of the file at path (nil on error).
func readTail(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}

// save writes the state file atomically (temporary file, fsync, rename).
func (r *Runner) save() error {
	b, err := json.MarshalIndent(state{Deployed: r.done}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.cfg.StateFile), ".deploy-hooks-*.json")
	if err != nil {
		return fmt.Errorf("write state file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write state file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), r.cfg.StateFile); err != nil {
		return fmt.Errorf("write state file: %w", err)
	}
	return nil
}

// privateKeyBlock matches a PEM private key block, or the start of one
// that the output cut short.
var privateKeyBlock = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)

// redact replaces private key blocks in a hook's output: it is logged,
// and key material never is.
func redact(b []byte) []byte {
	return privateKeyBlock.ReplaceAll(b, []byte("[private key redacted]"))
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
