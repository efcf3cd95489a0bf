package local

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// FilePerms are the owner, group and mode of a secret's data files. The
// zero value is the store's own default: the process's user and group,
// mode 0600.
type FilePerms struct {
	// Mode of the data files (0: 0600).
	Mode fs.FileMode
	// Owner and Group are user and group names or numbers ("": unchanged,
	// the process's). Changing the owner needs root; the group, root or
	// membership of it.
	Owner, Group string
}

// IsZero reports whether p keeps the store's defaults.
func (p FilePerms) IsZero() bool { return p.Mode == 0 && p.Owner == "" && p.Group == "" }

// SetCertificateFilePerms sets the default FilePerms of the secrets issued
// for Certificates (those annotated cert-manager.io/certificate-name,
// except the next-private-key secrets, which only certfn reads). Other
// secrets (CA key pairs, ACME account keys, credentials) keep 0600 unless
// their own annotations say otherwise. Call it before the store is used.
func (s *SecretStore) SetCertificateFilePerms(p FilePerms) { s.certPerms = p }

// SetCertificateFileBounds bounds what the annotations of a Certificate's
// secret (copied from the tenant's spec.secretTemplate) may ask for: a
// write of a Certificate's secret whose certfn.io/secret-file-*
// annotations go beyond b fails with a permanent error naming the
// annotation and the bound (never clamped). The defaults of
// SetCertificateFilePerms are the operator's and are not bounded. Without
// a call, nothing is bounded. Call it before the store is used.
func (s *SecretStore) SetCertificateFileBounds(b api.SecretFileBounds) { s.certBounds = &b }

// filePerms resolves the FilePerms of sec: its annotations
// (api.AnnotationSecretFile*) over the Certificate default. An invalid
// value is a permanent error naming the annotation.
func (s *SecretStore) filePerms(sec ports.Secret) (perms resolvedPerms, err error) {
	p := FilePerms{}
	if sec.Annotations[api.AnnotationCertificateName] != "" && sec.Labels[api.LabelNextPrivateKey] != "true" {
		p = s.certPerms
		if s.certBounds != nil {
			if err := s.certBounds.Check("metadata.annotations", sec.Annotations); err != nil {
				return perms, errs.Permanent(err)
			}
		}
	}
	if v, ok := sec.Annotations[api.AnnotationSecretFileMode]; ok {
		m, err := api.ParseSecretFileMode(v)
		if err != nil {
			return perms, errs.Permanentf("annotation %s: %v", api.AnnotationSecretFileMode, err)
		}
		p.Mode = fs.FileMode(m)
	}
	if v, ok := sec.Annotations[api.AnnotationSecretFileOwner]; ok {
		p.Owner = v
	}
	if v, ok := sec.Annotations[api.AnnotationSecretFileGroup]; ok {
		p.Group = v
	}
	return resolve(p)
}

// resolvedPerms is FilePerms with ids looked up (-1: unchanged).
type resolvedPerms struct {
	mode     fs.FileMode
	uid, gid int
}

func (r resolvedPerms) isDefault() bool { return r.mode == 0o600 && r.uid < 0 && r.gid < 0 }

func resolve(p FilePerms) (resolvedPerms, error) {
	r := resolvedPerms{mode: p.Mode, uid: -1, gid: -1}
	if r.mode == 0 {
		r.mode = 0o600
	}
	if _, err := api.ParseSecretFileMode(fmt.Sprintf("%04o", uint32(r.mode))); err != nil {
		return r, errs.Permanentf("secret file mode: %v", err)
	}
	if p.Owner != "" {
		id, err := lookupID(p.Owner, func(n string) (string, error) {
			u, err := user.Lookup(n)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		})
		if err != nil {
			return r, errs.Permanentf("secret file owner %q: %v (annotation %s or --secret-file-owner)", p.Owner, err, api.AnnotationSecretFileOwner)
		}
		r.uid = id
	}
	if p.Group != "" {
		id, err := lookupID(p.Group, func(n string) (string, error) {
			g, err := user.LookupGroup(n)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		})
		if err != nil {
			return r, errs.Permanentf("secret file group %q: %v (annotation %s or --secret-file-group)", p.Group, err, api.AnnotationSecretFileGroup)
		}
		r.gid = id
	}
	return r, nil
}

// lookupID returns a numeric value as is, else the id look finds for the name.
func lookupID(v string, look func(string) (string, error)) (int, error) {
	if err := api.CheckSecretFileOwner(v); err != nil {
		return 0, err
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n, nil
	}
	id, err := look(v)
	if err != nil {
		return 0, fmt.Errorf("not found on this system")
	}
	return strconv.Atoi(id)
}

// applyPerms sets the data files of the version directory vdir to r, the
// version and secret directories to the matching directory mode (read and
// traverse where the files are readable) and group, and gives the
// directories above them (the namespace's, the secrets root and the data
// directory) the traverse-only bits the readers need, never read or write.
// The metadata file stays 0600. Errors name paths, never contents.
func (s *SecretStore) applyPerms(dir, vdir string, keys []string, r resolvedPerms) error {
	if r.isDefault() {
		return nil
	}
	for _, k := range keys {
		p := filepath.Join(vdir, k)
		if err := os.Chown(p, r.uid, r.gid); err != nil {
			return fmt.Errorf("set the owner and group of %s: %w", p, err)
		}
		if err := os.Chmod(p, r.mode); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	dirMode := fs.FileMode(0o700)
	if r.mode&0o040 != 0 {
		dirMode |= 0o050
	}
	if r.mode&0o004 != 0 {
		dirMode |= 0o005
	}
	for _, d := range []string{vdir, dir} {
		if err := os.Chown(d, -1, r.gid); err != nil {
			return fmt.Errorf("set the group of %s: %w", d, err)
		}
		if err := os.Chmod(d, dirMode); err != nil {
			return fmt.Errorf("chmod %s: %w", d, err)
		}
	}
	for _, d := range []string{filepath.Dir(dir), s.dir, filepath.Dir(s.dir)} {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		traverse := traverseBits(r, st)
		if st.Mode().Perm()&traverse == traverse {
			continue
		}
		if err := os.Chmod(d, st.Mode().Perm()|traverse); err != nil {
			return fmt.Errorf("chmod %s: %w", d, err)
		}
	}
	return nil
}

// traverseBits is what a directory above a secret needs so that the
// readers r allows reach the files: x for others when others may read; x
// for the group when the group may read and owns the directory, else x for
// others (a directory of another group is crossed through its "others"
// bit: traverse only, nothing listed).
func traverseBits(r resolvedPerms, st fs.FileInfo) fs.FileMode {
	switch {
	case r.mode&0o004 != 0:
		return 0o011
	case r.mode&0o040 == 0:
		return 0
	case r.gid < 0:
		return 0o010
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Gid) == r.gid {
		return 0o010
	}
	return 0o001
}
