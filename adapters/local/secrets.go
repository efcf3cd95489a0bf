package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// File names inside a secret directory. User keys never start with "..",
// so these cannot collide with them (the Kubernetes atomic-writer layout).
const (
	dataLink     = "..data"          // symlink to the current version directory
	dataLinkTmp  = "..data_tmp"      // new ..data before the rename
	prevLink     = "..previous"      // symlink to the version ..data pointed at before
	prevLinkTmp  = "..previous_tmp"  // new ..previous before the rename
	keyLinkTmp   = "..key_tmp"       // new <key> symlink before the rename
	metadataFile = "..metadata.json" // labels and annotations, inside a version directory
	lockPrefix   = "..lock."         // "..lock.<name>" in the namespace directory while a writer of that secret holds it
	versionStamp = "2006_01_02_15_04_05."
	prunedPrefix = "..pruned" // "..pruned<version>": a pruned version while its files are removed (no link names it; a stopped write leaves it to the next prune)
)

// getAttempts bounds the retries of Get when two writes replace a secret
// while it is being read (the version it resolved was removed).
const getAttempts = 5

// SecretStore keeps secrets as files for local mode:
//
//	<dir>/<namespace>/<name>/..2025_01_02_03_04_05.123/tls.crt   the data (0600)
//	<dir>/<namespace>/<name>/..2025_01_02_03_04_05.123/..metadata.json
//	<dir>/<namespace>/<name>/..data -> ..2025_01_02_03_04_05.123
//	<dir>/<namespace>/<name>/..previous -> ..2025_01_01_00_00_00.456  (kept for Rollback)
//	<dir>/<namespace>/<name>/tls.crt -> ..data/tls.crt
//
// so nginx or haproxy can point at <dir>/<namespace>/<name>/tls.crt. A write
// creates a new version directory and swaps ..data with rename(2): a reader
// that resolves ..data once sees the whole old or the whole new secret,
// never a new tls.crt with an old tls.key. The previous version directory is
// kept for rollback; older ones are removed. Directories are 0700, files
// 0600, unless FilePerms say otherwise (fileperms.go: a group or mode that
// lets a web server read a certificate's key).
// Writers of one secret are serialised by a lock file (flock on
// <namespace>/..lock.<name>, removed when the writer is done), which also
// makes Create exclusive across processes; writers of different secrets
// run in parallel.
type SecretStore struct {
	dir string
	// certPerms are the FilePerms of Certificates' secrets
	// (SetCertificateFilePerms).
	certPerms FilePerms
	// certBounds bound the annotations of Certificates' secrets
	// (SetCertificateFileBounds; nil: not bounded).
	certBounds *api.SecretFileBounds
	// trash counts the background removals of deleted secrets;
	// trashSwept the namespace directories swept of older ones.
	trash      sync.WaitGroup
	trashSwept sync.Map
}

var _ ports.SecretStore = (*SecretStore)(nil)

// NewSecretStore returns a store rooted at dir (created on first write).
func NewSecretStore(dir string) *SecretStore { return &SecretStore{dir: dir} }

// Dir returns the root directory.
func (s *SecretStore) Dir() string { return s.dir }

// SecretDir returns the directory of one secret (its files are
// <SecretDir>/<key>), after validating namespace and name.
func (s *SecretStore) SecretDir(namespace, name string) (string, error) {
	if err := checkSecretRef(namespace, name); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, namespace, name), nil
}

// dnsSubdomain is Kubernetes' DNS-1123 subdomain: what a namespace and a
// secret name may be. It excludes "", ".", "..", '/' and '\\'.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// secretKey is Kubernetes' rule for a secret data key.
var secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// checkName validates a namespace or secret name used as a path element.
func checkName(field, v string) error {
	if len(v) > 253 || !dnsSubdomain.MatchString(v) {
		return errs.Permanentf("%s: %q is not a valid name: want a DNS subdomain (lower-case letters, digits, '-' and '.', "+
			"at most 253 characters), which rules out path separators, \"..\" and \"\"", field, v)
	}
	return nil
}

// checkSecretRef validates the namespace and name of a secret.
func checkSecretRef(namespace, name string) error {
	if err := checkName("namespace", namespace); err != nil {
		return fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	if err := checkName("name", name); err != nil {
		return fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// checkDataKey validates a data key used as a file name: Kubernetes' secret
// key rule, and no leading ".." (reserved for the layout's own files).
func checkDataKey(k string) error {
	if len(k) > 253 || !secretKey.MatchString(k) || k == "." || strings.HasPrefix(k, "..") {
		return errs.Permanentf("data[%q]: not a valid key: want letters, digits, '-', '_' and '.', "+
			"not \".\" and not starting with \"..\", at most 253 characters", k)
	}
	return nil
}

// realDir checks that path, a directory inside the store, is a directory
// and not a symbolic link (Lstat): the store never follows a link it did
// not make, so a link planted under the secrets directory can make it
// read, write or chmod nothing outside. A missing path is fs.ErrNotExist.
func realDir(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSymlink != 0 || !st.IsDir() {
		return errs.Permanentf("%s is a symbolic link or not a directory: the secret store follows no link it did not make "+
			"(remove it; only an administrator of the data directory can have put it there)", path)
	}
	return nil
}

// secretDirs checks the namespace and secret directories of dir with
// realDir (fs.ErrNotExist when one is missing).
func secretDirs(dir string) error {
	if err := realDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return realDir(dir)
}

// metadata is the content of metadataFile.
type metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Get returns the secret, or ports.ErrNotFound. It resolves ..data once and
// reads every file from that version, so the result is one consistent
// version even while a writer replaces the secret.
func (s *SecretStore) Get(ctx context.Context, namespace, name string) (ports.Secret, error) {
	dir, err := s.SecretDir(namespace, name)
	if err != nil {
		return ports.Secret{}, err
	}
	var lastErr error
	for range getAttempts {
		if err := ctx.Err(); err != nil {
			return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
		}
		err := secretDirs(dir)
		version := ""
		if err == nil {
			version, err = currentVersion(dir)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return ports.Secret{}, fmt.Errorf("secret %s/%s: %w", namespace, name, ports.ErrNotFound)
		}
		if err != nil {
			return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
		}
		sec, err := readVersion(filepath.Join(dir, version))
		if errors.Is(err, fs.ErrNotExist) {
			lastErr = err // removed by two writes meanwhile: resolve again
			continue
		}
		if err != nil {
			return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
		}
		sec.Namespace, sec.Name = namespace, name
		return sec, nil
	}
	return ports.Secret{}, fmt.Errorf("secret %s/%s: get: replaced faster than it could be read: %w", namespace, name, lastErr)
}

// currentVersion reads the ..data symlink of a secret directory.
func currentVersion(dir string) (string, error) { return readVersionLink(dir, dataLink) }

// readVersionLink reads a symlink that names a version directory.
func readVersionLink(dir, link string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, link))
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(target, "..") || strings.ContainsAny(target, `/\`) {
		return "", fmt.Errorf("%s: unexpected target %q", filepath.Join(dir, link), target)
	}
	return target, nil
}

// readVersion reads the data and metadata of one version directory.
func readVersion(vdir string) (ports.Secret, error) {
	if err := realDir(vdir); err != nil {
		return ports.Secret{}, err
	}
	entries, err := os.ReadDir(vdir)
	if err != nil {
		return ports.Secret{}, err
	}
	sec := ports.Secret{Data: map[string][]byte{}}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := readNoFollow(filepath.Join(vdir, e.Name()))
		if err != nil {
			return ports.Secret{}, err
		}
		if e.Name() == metadataFile {
			var m metadata
			if err := json.Unmarshal(b, &m); err != nil {
				return ports.Secret{}, fmt.Errorf("%s: %w", filepath.Join(vdir, metadataFile), err)
			}
			sec.Labels, sec.Annotations = m.Labels, m.Annotations
			continue
		}
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		sec.Data[e.Name()] = b
	}
	return sec, nil
}

// readNoFollow reads a regular file without following a symbolic link
// put in its place (O_NOFOLLOW: ELOOP).
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Create writes a new secret; ports.ErrAlreadyExists if it exists, even if
// another process creates it at the same moment.
func (s *SecretStore) Create(ctx context.Context, sec ports.Secret) error {
	return s.write(ctx, sec, true)
}

// Put creates the secret or replaces it as a whole (data and metadata),
// atomically for readers that resolve ..data once.
func (s *SecretStore) Put(ctx context.Context, sec ports.Secret) error {
	return s.write(ctx, sec, false)
}

// Delete removes the secret and all its versions; nil if it is missing.
func (s *SecretStore) Delete(ctx context.Context, namespace, name string) error {
	dir, err := s.SecretDir(namespace, name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := s.lock(namespace, name)
	if err != nil {
		return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
	}
	defer unlock()
	// One rename takes the whole secret away: readers see "not found" from
	// then on, never a partial secret, and a writer of the same name starts
	// a new directory. The files are removed in the background (removing
	// them one by one waits for the file system's journal at each step);
	// a process that stops first leaves the directory to the next Delete
	// in the namespace (removeTrash).
	nsDir := filepath.Dir(dir)
	trash := filepath.Join(nsDir, fmt.Sprintf("%s%s.%d", trashPrefix, name, time.Now().UnixNano()))
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
	}
	s.trash.Add(1)
	go func() {
		defer s.trash.Done()
		_ = os.RemoveAll(trash)
		if _, done := s.trashSwept.LoadOrStore(nsDir, true); !done {
			removeTrash(nsDir)
		}
	}()
	return nil
}

// trashPrefix starts the names of deleted secret directories awaiting
// removal ("..deleted.<name>.<nanoseconds>" in the namespace directory:
// not a valid secret name, so listings skip them).
// The next Delete in the namespace after a restart removes leftovers.
const trashPrefix = "..deleted."

// removeTrash removes the deleted secret directories left in nsDir by a
// process that stopped before removing them (once per namespace and
// process: only a stopped process leaves any). Errors are ignored.
func removeTrash(nsDir string) {
	entries, err := os.ReadDir(nsDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), trashPrefix) {
			_ = os.RemoveAll(filepath.Join(nsDir, e.Name()))
		}
	}
}

// Wait waits for the background removals of deleted secrets to finish
// (tests and a clean shutdown call it; leftovers are harmless otherwise).
func (s *SecretStore) Wait() { s.trash.Wait() }

// Rollback makes the kept previous version of a secret current again (and
// the current one the previous: a second Rollback undoes the first). It
// fails if the secret is missing or has no previous version.
func (s *SecretStore) Rollback(ctx context.Context, namespace, name string) error {
	dir, err := s.SecretDir(namespace, name)
	if err != nil {
		return err
	}
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: rollback: %w", namespace, name, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	unlock, err := s.lock(namespace, name)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if err := realDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	current, err := currentVersion(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(ports.ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	previous, err := readVersionLink(dir, prevLink)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(errs.Permanentf("no previous version kept"))
	}
	if err != nil {
		return fail(err)
	}
	old, err := readVersion(filepath.Join(dir, previous))
	if err != nil {
		return fail(err)
	}
	if err := swapLink(dir, dataLink, dataLinkTmp, previous); err != nil {
		return fail(err)
	}
	if err := swapLink(dir, prevLink, prevLinkTmp, current); err != nil {
		return fail(err)
	}
	if err := linkKeys(dir, old.Data); err != nil {
		return fail(err)
	}
	if err := syncDir(dir); err != nil {
		return fail(err)
	}
	return nil
}

// lock takes one secret's writer lock (creating the directories) and
// returns its release. Writers of different secrets never wait for each
// other. The lock is flock(2) on <namespace>/..lock.<name>, and the file
// is removed by its release, so no lock file outlives its writer (nor
// the secret). Removing a lock file others may wait on is safe because
// the holder unlinks it before it unlocks, and a writer that gets the
// lock checks that the path still names the file it locked (same device
// and inode): a writer that locked a file already unlinked, or replaced
// by a newer one, starts again on the current file. So at most one
// writer at a time holds the lock of the file the path names.
func (s *SecretStore) lock(namespace, name string) (func(), error) {
	if err := realDir(s.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	nsDir := filepath.Join(s.dir, namespace)
	if err := realDir(nsDir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(nsDir, 0o700); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if err := realDir(nsDir); err != nil {
		return nil, err
	}
	path := filepath.Join(nsDir, lockPrefix+name)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if errors.Is(err, syscall.ELOOP) {
			return nil, errs.Permanentf("%s is a symbolic link: the secret store follows no link it did not make", path)
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if err := flockRetry(f, syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		cur, err := os.Lstat(path)
		if err == nil && os.SameFile(held, cur) {
			return func() {
				// Unlink first: a waiter that gets this file next sees it
				// is no longer the path's and starts again.
				_ = os.Remove(path)
				_ = f.Close() // releases the flock
			}, nil
		}
		// Unlinked (or replaced) by the writer before us: try again.
		_ = f.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
}

// flockRetry is flock(2) retried when a signal interrupts it.
func flockRetry(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// write implements Create (exclusive) and Put.
func (s *SecretStore) write(ctx context.Context, sec ports.Secret, exclusive bool) error {
	op := "put"
	if exclusive {
		op = "create"
	}
	dir, err := s.SecretDir(sec.Namespace, sec.Name)
	if err != nil {
		return err
	}
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: %s: %w", sec.Namespace, sec.Name, op, err) }
	for k := range sec.Data {
		if err := checkDataKey(k); err != nil {
			return fail(err)
		}
	}
	perms, err := s.filePerms(sec)
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	unlock, err := s.lock(sec.Namespace, sec.Name)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	if err := realDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	previous, err := currentVersion(dir)
	switch {
	case err == nil && exclusive:
		return fail(ports.ErrAlreadyExists)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fail(err)
	}
	newDir := true
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		newDir = false
	} else if err != nil {
		return fail(err)
	}
	vdir, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format(versionStamp))
	if err != nil {
		return fail(err)
	}
	files, err := writeVersion(vdir, sec)
	defer closeAll(files)
	if err != nil {
		_ = os.RemoveAll(vdir)
		return fail(err)
	}
	if err := s.applyPerms(dir, vdir, keysOf(sec.Data), perms); err != nil {
		_ = os.RemoveAll(vdir)
		return fail(err)
	}
	// The first barrier: the version's files (content, mode, owner), its
	// directory, and for a new secret the namespace directory's entry of
	// dir, durable before ..data may name the version. One fsync each, all
	// at once: the file system commits concurrent fsyncs together, so this
	// costs about one fsync's latency, not one per file.
	if newDir {
		nsDir, err := os.Open(filepath.Dir(dir))
		if err != nil {
			_ = os.RemoveAll(vdir)
			return fail(err)
		}
		files = append(files, nsDir)
	}
	if err := syncAll(files); err != nil {
		_ = os.RemoveAll(vdir)
		return fail(err)
	}
	version := filepath.Base(vdir)
	if err := swapLink(dir, dataLink, dataLinkTmp, version); err != nil {
		_ = os.RemoveAll(vdir)
		return fail(err)
	}
	// The second barrier: the swap durable before the write is reported
	// done (and before pruning: after a crash ..data points at the new
	// version or at the previous one, which is still kept).
	if err := syncDir(dir); err != nil {
		return fail(err)
	}
	// From here on the new version is live; what follows tidies up.
	if newDir {
		// A directory this write created holds nothing else: no previous
		// version, no key links to replace, nothing to prune.
		for k := range sec.Data {
			if err := os.Symlink(dataLink+"/"+k, filepath.Join(dir, k)); err != nil {
				return fail(err)
			}
		}
		return nil
	}
	if previous != "" {
		err = swapLink(dir, prevLink, prevLinkTmp, previous)
	} else if err = os.Remove(filepath.Join(dir, prevLink)); errors.Is(err, fs.ErrNotExist) {
		err = nil // the usual case: a new secret has no previous version
	}
	if err != nil {
		return fail(err)
	}
	if err := linkKeys(dir, sec.Data); err != nil {
		return fail(err)
	}
	if err := prune(dir, version, previous); err != nil {
		return fail(err)
	}
	return nil
}

// writeVersion writes the data files and metadata into vdir and returns
// them, and vdir, open and not yet synced (the caller syncs them at once
// with syncAll and closes them, also on error). Errors name the path,
// never the content.
func writeVersion(vdir string, sec ports.Secret) ([]*os.File, error) {
	var files []*os.File
	create := func(name string, b []byte) error {
		f, err := os.OpenFile(filepath.Join(vdir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		files = append(files, f)
		_, err = f.Write(b) // *fs.PathError: path and cause only
		return err
	}
	for k, v := range sec.Data {
		if err := create(k, v); err != nil {
			return files, err
		}
	}
	meta, err := json.Marshal(metadata{Labels: sec.Labels, Annotations: sec.Annotations})
	if err != nil {
		return files, fmt.Errorf("metadata: %w", err)
	}
	if err := create(metadataFile, meta); err != nil {
		return files, err
	}
	d, err := os.Open(vdir)
	if err != nil {
		return files, err
	}
	return append(files, d), nil
}

// syncAll fsyncs every file (or directory) of files concurrently and
// returns the first error. Concurrent fsyncs on one file system share
// journal commits, so n of them cost about one fsync's latency.
func syncAll(files []*os.File) error {
	if len(files) == 1 {
		return files[0].Sync()
	}
	errc := make(chan error, len(files))
	for _, f := range files {
		go func() { errc <- f.Sync() }()
	}
	var first error
	for range files {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// syncDir flushes a directory's entries (a rename or new file) to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// swapLink points dir/name at target atomically: a symlink under tmp, then
// rename(2) over name. The caller syncs dir.
func swapLink(dir, name, tmp, target string) error {
	tmpPath := filepath.Join(dir, tmp)
	if err := os.Symlink(target, tmpPath); errors.Is(err, fs.ErrExist) {
		// left by an interrupted write: replace it
		if err := os.Remove(tmpPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Symlink(target, tmpPath); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if err := os.Rename(tmpPath, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmpPath)
		return err
	}
	return nil
}

// linkKeys makes <key> -> ..data/<key> for every key in data and removes
// the links of keys no longer present (other files are left alone).
func linkKeys(dir string, data map[string][]byte) error {
	for k := range data {
		target := dataLink + "/" + k
		if cur, err := os.Readlink(filepath.Join(dir, k)); err == nil && cur == target {
			continue
		}
		if err := swapLink(dir, k, keyLinkTmp, target); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "..") || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if _, keep := data[n]; keep {
			continue
		}
		if cur, err := os.Readlink(filepath.Join(dir, n)); err == nil && strings.HasPrefix(cur, dataLink+"/") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// prune removes version directories other than current and previous, and
// leftovers of interrupted writes (temporary links, never-live versions).
//
// A version directory is renamed away (to prunedPrefix + its name) before
// its files are removed. A reader that resolved ..data to that version just
// before the swap then either lists it whole or finds it gone (and resolves
// again, see Get); it never lists a directory whose files are half removed,
// which would read as a secret with tls.crt and no tls.key.
func prune(dir, current, previous string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "..") || n == dataLink || n == prevLink || n == current || n == previous {
			continue
		}
		path := filepath.Join(dir, n)
		if e.IsDir() && !strings.HasPrefix(n, prunedPrefix) {
			gone := filepath.Join(dir, prunedPrefix+n)
			if err := os.Rename(path, gone); err != nil {
				return err
			}
			path = gone
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	return nil
}

func keysOf(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ListSecrets implements ports.SecretLister: the secret directories (those
// with a current version) under namespace ("" = every namespace).
func (s *SecretStore) ListSecrets(ctx context.Context, namespace string) ([]ports.SecretRef, error) {
	var namespaces []string
	if namespace != "" {
		if err := checkName("namespace", namespace); err != nil {
			return nil, err
		}
		namespaces = []string{namespace}
	} else {
		entries, err := os.ReadDir(s.dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && checkName("namespace", e.Name()) == nil {
				namespaces = append(namespaces, e.Name())
			}
		}
	}
	var out []ports.SecretRef
	for _, ns := range namespaces {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(filepath.Join(s.dir, ns))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list secrets of namespace %s: %w", ns, err)
		}
		for _, e := range entries {
			if !e.IsDir() || checkName("name", e.Name()) != nil {
				continue
			}
			if _, err := currentVersion(filepath.Join(s.dir, ns, e.Name())); err == nil {
				out = append(out, ports.SecretRef{Namespace: ns, Name: e.Name()})
			}
		}
	}
	return out, nil // ReadDir sorts by name
}
