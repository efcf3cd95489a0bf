package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

func modeOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func gidOf(t *testing.T, p string) int {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Sys().(*syscall.Stat_t).Gid)
}

// The files of a secret get the owner, group and mode its annotations or
// the Certificate default ask for, so that a web server in that group can
// read the key; every other secret stays 0600 in 0700 directories.
func TestSecretFilePerms(t *testing.T) {
	ctx := context.Background()
	gid := strconv.Itoa(os.Getgid())
	certSecret := func(name string, extra map[string]string) ports.Secret {
		ann := map[string]string{api.AnnotationCertificateName: name}
		for k, v := range extra {
			ann[k] = v
		}
		return ports.Secret{Namespace: "web", Name: name + "-tls", Annotations: ann,
			Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}}
	}
	for _, tc := range []struct {
		name     string
		defaults FilePerms
		sec      ports.Secret
		file     fs.FileMode // tls.key's mode
		dir      fs.FileMode // the secret directory's mode
		parents  fs.FileMode // bits every directory above has
		err      string
	}{
		{"no settings: private", FilePerms{}, certSecret("a", nil), 0o600, 0o700, 0, ""},
		{"certificate default: group-readable", FilePerms{Mode: 0o640, Group: gid}, certSecret("a", nil), 0o640, 0o750, 0o010, ""},
		{"annotation over the default", FilePerms{Mode: 0o640}, certSecret("a", map[string]string{api.AnnotationSecretFileMode: "0644"}), 0o644, 0o755, 0o011, ""},
		{"a CA key pair keeps 0600 whatever the default", FilePerms{Mode: 0o640, Group: gid},
			ports.Secret{Namespace: "web", Name: "ca", Data: map[string][]byte{"tls.key": []byte("k")}}, 0o600, 0o700, 0, ""},
		{"a next private key keeps 0600", FilePerms{Mode: 0o644},
			ports.Secret{Namespace: "web", Name: "a-next-private-key", Data: map[string][]byte{"tls.key": []byte("k")},
				Annotations: map[string]string{api.AnnotationCertificateName: "a"}, Labels: map[string]string{api.LabelNextPrivateKey: "true"}}, 0o600, 0o700, 0, ""},
		{"a writable mode is refused", FilePerms{}, certSecret("a", map[string]string{api.AnnotationSecretFileMode: "0666"}), 0, 0, 0,
			"annotation certfn.io/secret-file-mode: \"0666\": no write or execute permission for group or others"},
		{"an unknown group is refused", FilePerms{}, certSecret("a", map[string]string{api.AnnotationSecretFileGroup: "no-such-group-xyz"}), 0, 0, 0,
			`secret file group "no-such-group-xyz": not found on this system`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Chmod(root, 0o700); err != nil {
				t.Fatal(err)
			}
			s := NewSecretStore(filepath.Join(root, "secrets"))
			s.SetCertificateFilePerms(tc.defaults)
			err := s.Put(ctx, tc.sec)
			if tc.err != "" {
				if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Put = %v, want a permanent error %q", err, tc.err)
				}
				if _, err := s.Get(ctx, tc.sec.Namespace, tc.sec.Name); !errors.Is(err, ports.ErrNotFound) {
					t.Fatalf("written despite the error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir, _ := s.SecretDir(tc.sec.Namespace, tc.sec.Name)
			if m := modeOf(t, filepath.Join(dir, "tls.key")); m != tc.file {
				t.Errorf("tls.key mode %#o, want %#o", m, tc.file)
			}
			if m := modeOf(t, dir); m != tc.dir {
				t.Errorf("secret directory mode %#o, want %#o", m, tc.dir)
			}
			if m := modeOf(t, filepath.Join(dir, dataLink)); m != tc.dir {
				t.Errorf("version directory mode %#o, want %#o", m, tc.dir)
			}
			vdir, _ := filepath.EvalSymlinks(filepath.Join(dir, dataLink))
			if m := modeOf(t, filepath.Join(vdir, metadataFile)); m != 0o600 {
				t.Errorf("metadata mode %#o, want 0600", m)
			}
			for _, p := range []string{filepath.Dir(dir), s.Dir(), root} {
				m := modeOf(t, p)
				if m&tc.parents != tc.parents || m&0o066 != 0 && tc.parents == 0 {
					t.Errorf("%s mode %#o, want the bits %#o and no read or write for group or others", p, m, tc.parents)
				}
				if m&0o066 != 0 {
					t.Errorf("%s mode %#o: readable or writable by group or others", p, m)
				}
			}
			if tc.defaults.Group != "" && tc.file == 0o640 {
				if g := gidOf(t, filepath.Join(dir, "tls.key")); strconv.Itoa(g) != gid {
					t.Errorf("tls.key group %d, want %s", g, gid)
				}
			}
			// Read back through the store as before.
			got, err := s.Get(ctx, tc.sec.Namespace, tc.sec.Name)
			if err != nil || string(got.Data["tls.key"]) != string(tc.sec.Data["tls.key"]) {
				t.Fatalf("Get = %v, %v", got.Data, err)
			}
		})
	}
}

// Changing the owner needs root: as root the files get that owner; as
// another user the write fails naming the path, and nothing is replaced.
func TestSecretFileOwner(t *testing.T) {
	ctx := context.Background()
	s := NewSecretStore(filepath.Join(t.TempDir(), "secrets"))
	sec := ports.Secret{Namespace: "web", Name: "a-tls", Data: map[string][]byte{"tls.key": []byte("k")},
		Annotations: map[string]string{api.AnnotationSecretFileOwner: "65534", api.AnnotationSecretFileMode: "0400"}}
	err := s.Put(ctx, sec)
	dir, _ := s.SecretDir("web", "a-tls")
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "set the owner and group of") {
			t.Fatalf("Put as uid %d = %v, want a failure to chown", os.Geteuid(), err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 65534 || st.Mode().Perm() != 0o400 {
		t.Fatalf("tls.key owner %d mode %#o, want 65534 and 0400", uid, st.Mode().Perm())
	}
}

// SetCertificateFileBounds bounds the annotations of a Certificate's
// secret (a tenant's secretTemplate): beyond them the write fails,
// naming the annotation and the bound, and nothing is written, so the
// files are never world-readable and no directory above gains a bit for
// others. The operator's defaults and secrets that are no Certificate's
// are not bounded.
func TestSecretFileBounds(t *testing.T) {
	ctx := context.Background()
	gid := strconv.Itoa(os.Getgid())
	cert := func(ann map[string]string) ports.Secret {
		a := map[string]string{api.AnnotationCertificateName: "a"}
		for k, v := range ann {
			a[k] = v
		}
		return ports.Secret{Namespace: "web", Name: "a-tls", Annotations: a, Data: map[string][]byte{"tls.key": []byte("key")}}
	}
	for _, tc := range []struct {
		name     string
		bounds   api.SecretFileBounds
		defaults FilePerms
		sec      ports.Secret
		file     fs.FileMode
		err      string
	}{
		{"0644 beyond the default bound", api.SecretFileBounds{}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileMode: "0644"}), 0,
			`metadata.annotations[certfn.io/secret-file-mode]: "0644" is more permissive than this deployment allows (at most 0640`},
		{"0640 within the default bound", api.SecretFileBounds{}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileMode: "0640"}), 0o640, ""},
		{"0644 with the bound raised", api.SecretFileBounds{MaxMode: 0o644}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileMode: "0644"}), 0o644, ""},
		{"0640 beyond a bound of 0600", api.SecretFileBounds{MaxMode: 0o600}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileMode: "0640"}), 0,
			`"0640" is more permissive than this deployment allows (at most 0600`},
		{"a group nobody allowed", api.SecretFileBounds{}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileGroup: gid}), 0,
			`metadata.annotations[certfn.io/secret-file-group]: "` + gid + `" is not one this deployment allows (allowed: none`},
		{"an allowed group", api.SecretFileBounds{Groups: []string{gid}}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileGroup: gid, api.AnnotationSecretFileMode: "0640"}), 0o640, ""},
		{"an owner nobody allowed", api.SecretFileBounds{}, FilePerms{}, cert(map[string]string{api.AnnotationSecretFileOwner: "root"}), 0,
			`metadata.annotations[certfn.io/secret-file-owner]: "root" is not one this deployment allows (allowed: none`},
		{"the operator's default is not bounded", api.SecretFileBounds{MaxMode: 0o600}, FilePerms{Mode: 0o640}, cert(nil), 0o640, ""},
		{"a secret that is no Certificate's is not bounded", api.SecretFileBounds{}, FilePerms{},
			ports.Secret{Namespace: "web", Name: "shared", Annotations: map[string]string{api.AnnotationSecretFileMode: "0644"}, Data: map[string][]byte{"k": []byte("v")}}, 0o644, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Chmod(root, 0o700); err != nil {
				t.Fatal(err)
			}
			s := NewSecretStore(filepath.Join(root, "secrets"))
			s.SetCertificateFilePerms(tc.defaults)
			s.SetCertificateFileBounds(tc.bounds)
			err := s.Put(ctx, tc.sec)
			if tc.err != "" {
				if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Put = %v, want a permanent error %q", err, tc.err)
				}
				if _, err := s.Get(ctx, tc.sec.Namespace, tc.sec.Name); !errors.Is(err, ports.ErrNotFound) {
					t.Fatalf("written despite the error: %v", err)
				}
				for _, p := range []string{s.Dir(), root} {
					if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
						continue // refused before anything was created
					}
					if m := modeOf(t, p); m&0o007 != 0 {
						t.Errorf("%s mode %#o: gained bits for others", p, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir, _ := s.SecretDir(tc.sec.Namespace, tc.sec.Name)
			for k := range tc.sec.Data {
				if m := modeOf(t, filepath.Join(dir, k)); m != tc.file {
					t.Errorf("%s mode %#o, want %#o", k, m, tc.file)
				}
			}
		})
	}
}
