package localmode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// ServeLockFile is the file in the data directory that one `certfn serve`
// holds locked while it runs; it contains that process's PID.
const ServeLockFile = "serve.lock"

// ErrServeRunning is wrapped by the error of a second Serve on a data
// directory another serve holds.
var ErrServeRunning = errors.New("another certfn serve is running on this data directory")

// lockServe takes the data directory's serve lock (an advisory lock the
// kernel drops when the process ends, however it ends), or reports the PID
// of the serve that holds it. Two serves on one directory would run the
// same loops twice; one-shot commands (apply, get, renew, …) need no lock.
func (r *Runtime) lockServe() (unlock func(), err error) {
	path := filepath.Join(r.Opts.DataDir, ServeLockFile)
	l := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		pid := "unknown"
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			pid = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("%w: %s (PID %s holds %s); stop it first, or use another --data directory", ErrServeRunning, r.Opts.DataDir, pid, path)
	}
	// The PID is for the message above; the lock itself is the flock.
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = l.Unlock()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return func() { _ = l.Unlock() }, nil
}

// ServeRunning reports whether a `certfn serve` holds dataDir's serve lock,
// and its PID when known ("unknown" otherwise). It takes the lock for an
// instant when it is free (nothing then runs the loops anyway), and
// creates nothing: a directory without a lock file has no serve.
func ServeRunning(dataDir string) (pid string, running bool, err error) {
	path := filepath.Join(dataDir, ServeLockFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	l := flock.New(path, flock.SetFlag(os.O_RDWR))
	ok, err := l.TryLock()
	if err != nil {
		return "", false, fmt.Errorf("check %s: %w", path, err)
	}
	if ok {
		_ = l.Unlock()
		return "", false, nil
	}
	pid = "unknown"
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
		pid = strings.TrimSpace(string(b))
	}
	return pid, true, nil
}
