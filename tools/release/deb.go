package main

import (
	"bytes"
	"crypto/md5" //nolint:gosec // dpkg's md5sums file format, not a security check
	"fmt"
	"slices"
	"strings"
)

// Paths the .deb installs.
const (
	debBinary   = "usr/bin/certfn"
	debUnit     = "usr/lib/systemd/system/certfn.service"
	debSocket   = "usr/lib/systemd/system/certfn.socket"
	debDefaults = "etc/default/certfn"
	debDocDir   = "usr/share/doc/certfn/"
)

// debDescription is the control file's Description: the synopsis, then
// the extended description (each line indented by one space).
const debDescription = `cert-manager's certificate lifecycle without Kubernetes
 certfn requests, approves, signs, stores and renews X.509 certificates
 declared in cert-manager's own YAML (Issuers, ClusterIssuers,
 Certificates, CertificateRequestPolicies): ACME (Let's Encrypt and other
 CAs, HTTP-01 and DNS-01), CA and self-signed issuers.
 .
 This package runs it as certfn.service, under the certfn system user,
 with its data in /var/lib/certfn: a replacement for a certbot timer.`

// deb is the Debian package of one architecture (format 2.0: an ar
// archive of debian-binary, control.tar.gz and data.tar.gz).
//
// Data: /usr/bin/certfn (0755), the unit and the optional certfn.socket
// (not enabled) in /usr/lib/systemd/system (on
// the system unit path of every merged-/usr Debian, bookworm included),
// /etc/default/certfn (0600, root's: it may hold credentials; a conffile)
// and README.md, install.md, copyright (LICENSE), NOTICE and the linked
// modules' licenses/ in /usr/share/doc/certfn. Control:
// control, conffiles, md5sums and the maintainer scripts of packaging/deb.
func deb(o options, arch string, bin []byte, s sources) ([]byte, error) {
	data := []file{
		{"./" + debBinary, 0o755, bin},
		{"./" + debUnit, 0o644, s.unit},
		{"./" + debSocket, 0o644, s.socket},
		{"./" + debDefaults, 0o600, s.defaults},
		{"./" + debDocDir + "README.md", 0o644, s.readme},
		{"./" + debDocDir + "install.md", 0o644, s.install},
	}
	if s.license != nil {
		data = append(data, file{"./" + debDocDir + "copyright", 0o644, s.license})
	}
	if s.notice != nil {
		data = append(data, file{"./" + debDocDir + "NOTICE", 0o644, s.notice})
	}
	for _, t := range o.ThirdParty {
		data = append(data, file{"./" + debDocDir + "licenses/" + t.Path, 0o644, t.Data})
	}
	conffiles := []string{"/" + debDefaults}
	dataTar, err := tarGz(data, o.ModTime)
	if err != nil {
		return nil, fmt.Errorf("data.tar.gz: %w", err)
	}
	control := []file{
		{"./control", 0o644, []byte(debControl(o, arch, data))},
		{"./conffiles", 0o644, []byte(strings.Join(conffiles, "\n") + "\n")},
		{"./md5sums", 0o644, debMD5sums(data, conffiles)},
		{"./postinst", 0o755, s.postinst},
		{"./prerm", 0o755, s.prerm},
		{"./postrm", 0o755, s.postrm},
	}
	controlTar, err := tarGz(control, o.ModTime)
	if err != nil {
		return nil, fmt.Errorf("control.tar.gz: %w", err)
	}
	return arArchive([]arMember{
		{"debian-binary", []byte("2.0\n")},
		{"control.tar.gz", controlTar},
		{"data.tar.gz", dataTar},
	}, o.ModTime)
}

// debControl is the control file. Installed-Size is in KiB, counted as
// dpkg-gencontrol does: each file's size rounded up to 1 KiB, plus 1 KiB
// per directory.
func debControl(o options, arch string, data []file) string {
	var kib int64
	dirs := map[string]bool{}
	for _, f := range data {
		kib += (int64(len(f.data)) + 1023) / 1024
		for _, d := range parentDirs(f.path) {
			dirs[d] = true
		}
	}
	kib += int64(len(dirs))
	return fmt.Sprintf(`Package: certfn
Version: %s
Architecture: %s
Maintainer: %s
Installed-Size: %d
Depends: passwd
Section: admin
Priority: optional
Description: %s
`, o.Version, arch, o.Maintainer, kib, debDescription)
}

// debMD5sums is the md5sums control file: "<md5>  <path>" (no leading
// "./") for every installed file but the conffiles (dpkg keeps their
// sums itself), sorted by path.
func debMD5sums(data []file, conffiles []string) []byte {
	sorted := slices.Clone(data)
	slices.SortFunc(sorted, func(a, b file) int { return strings.Compare(a.path, b.path) })
	var b bytes.Buffer
	for _, f := range sorted {
		p := strings.TrimPrefix(f.path, "./")
		if slices.Contains(conffiles, "/"+p) {
			continue
		}
		fmt.Fprintf(&b, "%x  %s\n", md5.Sum(f.data), p) //nolint:gosec // see import
	}
	return b.Bytes()
}
