package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

func TestSecretContract(t *testing.T) {
	porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore { return NewSecretStore(t.TempDir()) })
}

// tlsSecret builds default/web-tls whose values name gen.
func tlsSecret(gen string, extra ...string) ports.Secret {
	s := ports.Secret{Namespace: "default", Name: "web-tls", Data: map[string][]byte{
		"tls.crt": []byte("crt " + gen),
		"tls.key": []byte("key " + gen),
	}}
	for _, k := range extra {
		s.Data[k] = []byte(k + " " + gen)
	}
	return s
}

// mustPut puts sec and fails the test on error.
func mustPut(t *testing.T, s *SecretStore, sec ports.Secret) {
	t.Helper()
	if err := s.Put(context.Background(), sec); err != nil {
		t.Fatalf("Put: %v", err)
	}
}

// listDir lists a directory's entry names, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// versionDirs lists the version directories of a secret directory.
func versionDirs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range listDir(t, dir) {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.IsDir() && strings.HasPrefix(n, "..") {
			out = append(out, n)
		}
	}
	return out
}

// The layout nginx reads: <dir>/<ns>/<name>/<key> through ..data, with
// 0700 directories and 0600 files.
func TestSecretLayoutAndPermissions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "secrets")
	s := NewSecretStore(root)
	mustPut(t, s, tlsSecret("1", "ca.crt"))
	dir := filepath.Join(root, "default", "web-tls")

	// Reading the plain path gives the data.
	for k, want := range tlsSecret("1", "ca.crt").Data {
		got, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read %q, %v; want %q", k, got, err, want)
		}
		if target, err := os.Readlink(filepath.Join(dir, k)); err != nil || target != "..data/"+k {
			t.Errorf("%s: link target %q, %v; want ..data/%s", k, target, err, k)
		}
	}
	version, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "..") {
		t.Errorf("..data -> %q, want a hidden version directory", version)
	}
	perms := []struct {
		path string
		want fs.FileMode
	}{
		{root, 0o700 | fs.ModeDir},
		{filepath.Join(root, "default"), 0o700 | fs.ModeDir},
		{dir, 0o700 | fs.ModeDir},
		{filepath.Join(dir, version), 0o700 | fs.ModeDir},
		{filepath.Join(dir, version, "tls.crt"), 0o600},
		{filepath.Join(dir, version, "tls.key"), 0o600},
		{filepath.Join(dir, version, "ca.crt"), 0o600},
		{filepath.Join(dir, version, metadataFile), 0o600},
	}
	for _, p := range perms {
		fi, err := os.Lstat(p.path)
		if err != nil {
			t.Errorf("%s: %v", p.path, err)
			continue
		}
		if got := fi.Mode() & (fs.ModePerm | fs.ModeDir); got != p.want {
			t.Errorf("%s: mode %v, want %v", p.path, got, p.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "default", lockPrefix+"web-tls")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the lock file outlived the write: %v", err)
	}
	wantTop := []string{"..data", version, "ca.crt", "tls.crt", "tls.key"}
	sort.Strings(wantTop)
	if got := listDir(t, dir); strings.Join(got, " ") != strings.Join(wantTop, " ") {
		t.Errorf("secret directory holds %v, want %v", got, wantTop)
	}
}

// Each write keeps exactly one previous version; Rollback swaps back to it.
func TestSecretVersionsAndRollback(t *testing.T) {
	ctx := context.Background()
	s := NewSecretStore(t.TempDir())
	dir, err := s.SecretDir("default", "web-tls")
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, tlsSecret("1"))
	err = s.Rollback(ctx, "default", "web-tls")
	if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), "no previous version") {
		t.Errorf("Rollback with one version: %v, want a permanent 'no previous version' error", err)
	}
	mustPut(t, s, tlsSecret("2", "ca.crt"))
	mustPut(t, s, tlsSecret("3"))
	if got := versionDirs(t, dir); len(got) != 2 {
		t.Fatalf("version directories after 3 writes: %v, want 2 (current and previous)", got)
	}
	steps := []struct {
		name string
		op   func() error
		want ports.Secret
	}{
		{"rollback to 2", func() error { return s.Rollback(ctx, "default", "web-tls") }, tlsSecret("2", "ca.crt")},
		{"rollback again undoes it", func() error { return s.Rollback(ctx, "default", "web-tls") }, tlsSecret("3")},
		{"rollback to 2 then write 4", func() error {
			if err := s.Rollback(ctx, "default", "web-tls"); err != nil {
				return err
			}
			return s.Put(ctx, tlsSecret("4"))
		}, tlsSecret("4")},
		{"previous of 4 is 2", func() error { return s.Rollback(ctx, "default", "web-tls") }, tlsSecret("2", "ca.crt")},
	}
	for _, st := range steps {
		if err := st.op(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := s.Get(ctx, "default", "web-tls")
		if err != nil {
			t.Fatalf("%s: Get: %v", st.name, err)
		}
		if fmt.Sprint(got.Data) != fmt.Sprint(st.want.Data) {
			t.Errorf("%s: data %q, want %q", st.name, got.Data, st.want.Data)
		}
		// The plain files follow, including keys that come and go.
		for k, v := range st.want.Data {
			if b, err := os.ReadFile(filepath.Join(dir, k)); err != nil || !bytes.Equal(b, v) {
				t.Errorf("%s: file %s = %q, %v; want %q", st.name, k, b, err, v)
			}
		}
		if _, ok := st.want.Data["ca.crt"]; !ok {
			if _, err := os.Lstat(filepath.Join(dir, "ca.crt")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: ca.crt link still present (%v)", st.name, err)
			}
		}
	}
	if err := s.Rollback(ctx, "default", "nope"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Rollback of a missing secret: %v, want ErrNotFound", err)
	}
}

// Leftovers of an interrupted write are invisible to readers and removed by
// the next write; a half-created secret (no ..data) does not block Create.
func TestSecretInterruptedWrite(t *testing.T) {
	ctx := context.Background()
	s := NewSecretStore(t.TempDir())
	dir, _ := s.SecretDir("default", "web-tls")
	stale := filepath.Join(dir, "..2020_01_01_00_00_00.1")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "tls.crt"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2020_01_01_00_00_00.1", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	// a version a write was pruning when it stopped: renamed away, half removed
	pruned := filepath.Join(dir, prunedPrefix+"..2019_01_01_00_00_00.1")
	if err := os.MkdirAll(pruned, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pruned, "tls.crt"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Get of a half-written secret: %v, want ErrNotFound", err)
	}
	if err := s.Create(ctx, tlsSecret("1")); err != nil {
		t.Fatalf("Create over leftovers: %v", err)
	}
	got := listDir(t, dir)
	for _, n := range got {
		if n == "..data_tmp" || n == "..2020_01_01_00_00_00.1" || n == filepath.Base(pruned) {
			t.Errorf("leftover %s not removed (directory: %v)", n, got)
		}
	}
	if len(versionDirs(t, dir)) != 1 {
		t.Errorf("version directories: %v, want 1", versionDirs(t, dir))
	}
}

// Namespaces, names and keys are path elements: anything that could leave
// the store's directory is rejected with a permanent error naming the field.
func TestSecretPathTraversal(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	root := filepath.Join(parent, "secrets")
	s := NewSecretStore(root)
	withKey := func(k string) ports.Secret {
		sec := tlsSecret("1")
		sec.Data[k] = []byte("S3CRET-VALUE")
		return sec
	}
	ref := func(ns, name string) ports.Secret {
		sec := tlsSecret("1")
		sec.Namespace, sec.Name = ns, name
		return sec
	}
	tests := []struct {
		name   string
		secret ports.Secret
		want   string
	}{
		{"dot-dot namespace", ref("..", "web-tls"), `namespace: ".." is not a valid name`},
		{"escaping namespace", ref("../etc", "web-tls"), `namespace: "../etc" is not a valid name`},
		{"empty namespace", ref("", "web-tls"), `namespace: "" is not a valid name`},
		{"slash in name", ref("default", "a/b"), `name: "a/b" is not a valid name`},
		{"dot-dot name", ref("default", ".."), `name: ".." is not a valid name`},
		{"dot name", ref("default", "."), `name: "." is not a valid name`},
		{"backslash name", ref("default", `a\b`), `name: "a\\b" is not a valid name`},
		{"absolute name", ref("default", "/etc"), `name: "/etc" is not a valid name`},
		{"upper-case name", ref("default", "Web"), `name: "Web" is not a valid name`},
		{"escaping key", withKey("../../x"), `data["../../x"]: not a valid key`},
		{"slash in key", withKey("a/b"), `data["a/b"]: not a valid key`},
		{"dot-dot key", withKey(".."), `data[".."]: not a valid key`},
		{"dot key", withKey("."), `data["."]: not a valid key`},
		{"reserved key", withKey("..data"), `data["..data"]: not a valid key`},
		{"empty key", withKey(""), `data[""]: not a valid key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for op, call := range map[string]func() error{
				"Create": func() error { return s.Create(ctx, tc.secret) },
				"Put":    func() error { return s.Put(ctx, tc.secret) },
			} {
				err := call()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: error %v, want it to contain %s", op, err, tc.want)
				}
				if !errs.IsPermanent(err) {
					t.Errorf("%s: error %v is not permanent", op, err)
				}
				if strings.Contains(err.Error(), "S3CRET") || strings.Contains(err.Error(), "key 1") {
					t.Errorf("%s: error contains secret data: %v", op, err)
				}
			}
			if tc.secret.Namespace != "default" || tc.secret.Name != "web-tls" {
				if _, err := s.Get(ctx, tc.secret.Namespace, tc.secret.Name); err == nil || errors.Is(err, ports.ErrNotFound) {
					t.Errorf("Get: %v, want a validation error", err)
				}
				if err := s.Delete(ctx, tc.secret.Namespace, tc.secret.Name); err == nil {
					t.Errorf("Delete: want a validation error")
				}
			}
		})
	}
	// Nothing was written anywhere.
	if got := listDir(t, parent); len(got) != 0 {
		t.Errorf("rejected writes left %v in %s", got, parent)
	}
}

// A reader that resolves ..data once (Get does; so can nginx's reload
// script) sees tls.crt and tls.key of the same write while the secret is
// replaced again and again, also when the version it resolved is being
// pruned while it lists it (Get must never return tls.crt without tls.key).
func TestSecretConsistentPairUnderReplacement(t *testing.T) {
	ctx := context.Background()
	s := NewSecretStore(t.TempDir())
	dir, _ := s.SecretDir("default", "web-tls")
	mustPut(t, s, tlsSecret("0"))
	const writes = 40
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 1; i <= writes; i++ {
			if err := s.Put(ctx, tlsSecret(strconv.Itoa(i))); err != nil {
				t.Errorf("Put %d: %v", i, err)
				return
			}
		}
	}()
	readers := map[string]func() (crt, key []byte, err error){
		"Get": func() ([]byte, []byte, error) {
			sec, err := s.Get(ctx, "default", "web-tls")
			return sec.Data["tls.crt"], sec.Data["tls.key"], err
		},
		"files through ..data": func() ([]byte, []byte, error) {
			version, err := os.Readlink(filepath.Join(dir, "..data"))
			if err != nil {
				return nil, nil, err
			}
			crt, err := os.ReadFile(filepath.Join(dir, version, "tls.crt"))
			if err != nil {
				return nil, nil, err
			}
			key, err := os.ReadFile(filepath.Join(dir, version, "tls.key"))
			return crt, key, err
		},
	}
	for name, read := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads, retries := 0, 0
			for {
				select {
				case <-done:
					if reads == 0 {
						t.Errorf("%s: no successful read", name)
					}
					t.Logf("%s: %d consistent reads, %d retries after a version was pruned", name, reads, retries)
					return
				default:
				}
				runtime.Gosched() // leave the writer some CPU on small machines
				crt, key, err := read()
				if errors.Is(err, fs.ErrNotExist) {
					retries++ // two writes pruned the version between readlink and read
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				c, k := strings.TrimPrefix(string(crt), "crt "), strings.TrimPrefix(string(key), "key ")
				if c != k {
					t.Errorf("%s: tls.crt of write %s with tls.key of write %s", name, c, k)
					return
				}
				reads++
			}
		}()
	}
	wg.Wait()
}

// Create is exclusive across processes: of several processes creating the
// same secret at once, exactly one wins.
func TestSecretCreateExclusiveAcrossProcesses(t *testing.T) {
	root := t.TempDir()
	const procs = 4
	var ps []*helperProc
	for i := 0; i < procs; i++ {
		ps = append(ps, startHelper(t, "create-secret", root, strconv.Itoa(i)))
	}
	winner, existed := -1, 0
	for i, p := range ps {
		switch code := p.wait(t); code {
		case exitOK:
			if winner >= 0 {
				t.Errorf("processes %d and %d both created the secret", winner, i)
			}
			winner = i
		case exitExisted:
			existed++
		default:
			t.Errorf("process %d exited with %d", i, code)
		}
	}
	if winner < 0 || existed != procs-1 {
		t.Fatalf("winner %d, %d saw ErrAlreadyExists; want one winner and %d losers", winner, existed, procs-1)
	}
	got, err := NewSecretStore(root).Get(context.Background(), "default", "web-tls")
	if err != nil {
		t.Fatal(err)
	}
	if want := "crt " + strconv.Itoa(winner); string(got.Data["tls.crt"]) != want {
		t.Errorf("stored tls.crt %q, want the winner's %q", got.Data["tls.crt"], want)
	}
}

// Files the user put next to the links are left alone by writes.
func TestSecretForeignFilesKept(t *testing.T) {
	s := NewSecretStore(t.TempDir())
	dir, _ := s.SecretDir("default", "web-tls")
	mustPut(t, s, tlsSecret("1", "ca.crt"))
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("managed by certfn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "hostname")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, tlsSecret("2"))
	got := strings.Join(listDir(t, dir), " ")
	for _, want := range []string{"README", "hostname", "tls.crt", "tls.key"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s missing after Put: %s", want, got)
		}
	}
	if strings.Contains(got, "ca.crt") {
		t.Errorf("ca.crt link kept after it left the data: %s", got)
	}
}

// Delete takes the secret away in one rename and removes its files in
// the background; a deleted directory left by a process that stopped
// first is removed by the next Delete in the namespace. Neither is ever
// listed or read as a secret.
func TestSecretDeleteRemovesTrash(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s := NewSecretStore(root)
	if err := s.Create(ctx, tlsSecret("1")); err != nil {
		t.Fatal(err)
	}
	nsDir := filepath.Join(root, "default")
	left := filepath.Join(nsDir, trashPrefix+"old-tls.1")
	if err := os.MkdirAll(filepath.Join(left, "..2020_01_01_00_00_00.1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if refs, err := s.ListSecrets(ctx, "default"); err != nil || len(refs) != 1 || refs[0].Name != "web-tls" {
		t.Fatalf("ListSecrets with a deleted directory left over: %v, %v", refs, err)
	}
	if err := s.Delete(ctx, "default", "web-tls"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "default", "web-tls"); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Create(ctx, tlsSecret("2")); err != nil { // the same name again, at once
		t.Fatalf("Create after Delete: %v", err)
	}
	s.Wait()
	for _, n := range listDir(t, nsDir) {
		if strings.HasPrefix(n, trashPrefix) {
			t.Errorf("%s still in the namespace directory after Delete (%v)", n, listDir(t, nsDir))
		}
	}
	got, err := s.Get(ctx, "default", "web-tls")
	if err != nil || string(got.Data["tls.crt"]) != string(tlsSecret("2").Data["tls.crt"]) {
		t.Fatalf("Get of the secret created after Delete: %v, %v", got.Data, err)
	}
}

// A symbolic link planted under the secrets directory (for a namespace, a
// secret, a version, a data file or a lock file) is never followed: the
// file it points to outside is not read, written or chmodded, and the
// operation fails naming the path. The store's own ..data link is
// followed only to a version directory of its own.
func TestSymlinksAreNotFollowed(t *testing.T) {
	ctx := context.Background()
	sec := ports.Secret{Namespace: "team-a", Name: "web-tls", Data: map[string][]byte{"tls.key": []byte("new key")},
		Annotations: map[string]string{"certfn.io/secret-file-mode": "0640"}}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, s *SecretStore, outside string)
		read  bool // Get is refused (else: the secret is missing or unchanged)
		// writes: Put and Rollback may proceed (inside the store only: a
		// new version replaces the planted link)
		writes bool
	}{
		{"a namespace directory", func(t *testing.T, s *SecretStore, outside string) {
			mustSymlink(t, outside, filepath.Join(s.Dir(), "team-a"))
		}, false, false},
		{"a secret directory", func(t *testing.T, s *SecretStore, outside string) {
			mustMkdir(t, filepath.Join(s.Dir(), "team-a"))
			mustSymlink(t, outside, filepath.Join(s.Dir(), "team-a", "web-tls"))
		}, false, false},
		{"a version directory", func(t *testing.T, s *SecretStore, outside string) {
			dir := filepath.Join(s.Dir(), "team-a", "web-tls")
			mustMkdir(t, dir)
			mustSymlink(t, outside, filepath.Join(dir, "..2020_01_01_00_00_00.1"))
			mustSymlink(t, "..2020_01_01_00_00_00.1", filepath.Join(dir, dataLink))
		}, true, true},
		{"a data file", func(t *testing.T, s *SecretStore, outside string) {
			if err := s.Put(ctx, ports.Secret{Namespace: "team-a", Name: "web-tls", Data: map[string][]byte{"tls.crt": []byte("c")}}); err != nil {
				t.Fatal(err)
			}
			vdir, _ := filepath.EvalSymlinks(filepath.Join(s.Dir(), "team-a", "web-tls", dataLink))
			mustSymlink(t, filepath.Join(outside, "tls.key"), filepath.Join(vdir, "tls.key"))
		}, false, true},
		{"a lock file", func(t *testing.T, s *SecretStore, outside string) {
			mustMkdir(t, filepath.Join(s.Dir(), "team-a"))
			mustSymlink(t, filepath.Join(outside, "tls.key"), filepath.Join(s.Dir(), "team-a", lockPrefix+"web-tls"))
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			outside := filepath.Join(root, "outside")
			mustMkdir(t, outside)
			target := filepath.Join(outside, "tls.key")
			if err := os.WriteFile(target, []byte("host key"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := NewSecretStore(filepath.Join(root, "data", "secrets"))
			mustMkdir(t, s.Dir())
			tc.plant(t, s, outside)

			got, err := s.Get(ctx, "team-a", "web-tls")
			if string(got.Data["tls.key"]) == "host key" {
				t.Fatal("Get read a file outside the store")
			}
			if tc.read && (err == nil || !strings.Contains(err.Error(), "symbolic link")) {
				t.Fatalf("Get = %v, want a refusal naming the link", err)
			}
			if err := s.Put(ctx, sec); (err == nil) != tc.writes {
				t.Fatalf("Put = %v, want it to proceed: %v", err, tc.writes)
			}
			_ = s.Rollback(ctx, "team-a", "web-tls")
			if got, _ := s.Get(ctx, "team-a", "web-tls"); string(got.Data["tls.key"]) == "host key" {
				t.Fatal("Get read a file outside the store")
			}
			b, err := os.ReadFile(target)
			if err != nil || string(b) != "host key" {
				t.Fatalf("the file outside changed: %q %v", b, err)
			}
			if m := modeOf(t, target); m != 0o600 {
				t.Fatalf("the file outside was chmodded to %#o", m)
			}
			if m := modeOf(t, outside); m != 0o755 && m != 0o700 {
				t.Fatalf("the directory outside was chmodded to %#o", m)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Fatalf("files created outside: %v", entries)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// No ..lock.* file outlives its writer (nor the secret), and removing
// them keeps writers of one secret exclusive: of concurrent Creates of a
// name by separate stores (as separate processes), exactly one succeeds,
// round after round.
func TestLockFilesRemovedAndExclusive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stores := make([]*SecretStore, 4)
	for i := range stores {
		stores[i] = NewSecretStore(dir)
	}
	lockFiles := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "*", lockPrefix+"*"))
		return m
	}
	sec := func(name, v string) ports.Secret {
		return ports.Secret{Namespace: "team-a", Name: name, Data: map[string][]byte{"tls.key": []byte(v)}}
	}
	s := stores[0]
	for _, op := range []func() error{
		func() error { return s.Create(ctx, sec("web-tls", "1")) },
		func() error { return s.Put(ctx, sec("web-tls", "2")) },
		func() error { return s.Rollback(ctx, "team-a", "web-tls") },
		func() error { return s.Delete(ctx, "team-a", "web-tls") },
	} {
		if err := op(); err != nil {
			t.Fatal(err)
		}
		if l := lockFiles(); len(l) != 0 {
			t.Fatalf("lock files left: %v", l)
		}
	}
	for round := 0; round < 20; round++ {
		name := "race-" + strconv.Itoa(round)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := stores[i%len(stores)]
				err := st.Create(ctx, sec(name, strconv.Itoa(i)))
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, ports.ErrAlreadyExists):
					t.Error(err)
				}
				if err := st.Put(ctx, sec(name, "put-"+strconv.Itoa(i))); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d Creates succeeded, want 1", round, n)
		}
		if got, err := s.Get(ctx, "team-a", name); err != nil || !strings.HasPrefix(string(got.Data["tls.key"]), "put-") {
			t.Fatalf("round %d: Get = %q, %v", round, got.Data["tls.key"], err)
		}
	}
	s.Wait()
	if l := lockFiles(); len(l) != 0 {
		t.Fatalf("lock files left: %v", l)
	}
}
