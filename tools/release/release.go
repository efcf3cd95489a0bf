package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/certfn/certfn/tools/notice/licenses"
)

// defaultMaintainer is the .deb's Maintainer field unless -maintainer
// (make's DEB_MAINTAINER) says otherwise: a placeholder (.invalid is
// reserved), since the project publishes no contact address yet.
const defaultMaintainer = "certfn maintainers <maintainers@certfn.invalid>"

// options are one release's settings.
type options struct {
	// Version goes into file names, the .deb's Version field and the
	// binary (main.version); see validVersion.
	Version string
	// OutDir receives the archives, the .debs and SHA256SUMS; the binaries
	// are built under OutDir/build/linux_<arch>/.
	OutDir string
	// Root is the repository root: the sources of the binary and of the
	// packaged files (README.md, LICENSE, docs/deploy/local.md, packaging/).
	Root string
	// Archs are GOARCH values: amd64 and arm64 (the same names in Debian).
	Archs []string
	// ModTime is every archive entry's time (required).
	ModTime time.Time
	// Maintainer is the .deb's Maintainer field.
	Maintainer string
	// Go is the go command.
	Go string
	// ThirdParty are the license and notice texts of the Go modules the
	// binary links (licenses.Linked), packaged under licenses/<module
	// path>/ of the archive and the .deb's doc directory; release fills
	// them in.
	ThirdParty []thirdPartyText
}

// thirdPartyText is one license or notice file of a linked module.
type thirdPartyText struct {
	// Path is the file's path under licenses/: <module path>/<file name>.
	Path string
	Data []byte
}

// thirdPartyTexts reads the license and notice files of the modules
// ./cmd/certfn links (for linux, without cgo: the release build), sorted
// by path. A module without a recognised, allowed license fails the
// release.
func thirdPartyTexts(ctx context.Context, goCmd, root string) ([]thirdPartyText, error) {
	mods, err := licenses.Linked(ctx, goCmd, root, "./cmd/certfn")
	if err != nil {
		return nil, fmt.Errorf("licenses of the linked modules: %w", err)
	}
	var out []thirdPartyText
	for _, m := range mods {
		for _, name := range m.Files {
			b, err := os.ReadFile(filepath.Join(m.Dir, name))
			if err != nil {
				return nil, fmt.Errorf("licenses of the linked modules: %w", err)
			}
			out = append(out, thirdPartyText{Path: m.Path + "/" + name, Data: b})
		}
	}
	return out, nil
}

// versionRE is what a version may look like: it starts with a digit (as
// dpkg requires) and holds only characters valid in a Debian version and
// a file name.
var versionRE = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~-]*$`)

// supportedArchs are the architectures a release may hold.
var supportedArchs = []string{"amd64", "arm64"}

// validate reports the first invalid option, naming its flag and rule.
func (o options) validate() error {
	switch {
	case o.Version == "":
		return errors.New("-version is required (e.g. 1.2.3)")
	case !versionRE.MatchString(o.Version) || strings.HasSuffix(o.Version, "-"):
		return fmt.Errorf("-version %q: must start with a digit and hold only letters, digits and . + ~ - (not ending with -), as a Debian version", o.Version)
	case o.ModTime.IsZero():
		return errors.New("-mtime (or SOURCE_DATE_EPOCH) is required: the time of every archive entry, in seconds since 1970")
	case len(o.Archs) == 0:
		return errors.New("-arch: at least one architecture is required (amd64, arm64)")
	case o.OutDir == "":
		return errors.New("-o: an output directory is required")
	case strings.ContainsAny(o.Maintainer, "\n") || strings.TrimSpace(o.Maintainer) == "":
		return fmt.Errorf("-maintainer %q: must be one non-empty line (Name <email>)", o.Maintainer)
	}
	seen := map[string]bool{}
	for _, a := range o.Archs {
		if !slices.Contains(supportedArchs, a) {
			return fmt.Errorf("-arch %q: want amd64 or arm64", a)
		}
		if seen[a] {
			return fmt.Errorf("-arch %q: given twice", a)
		}
		seen[a] = true
	}
	return nil
}

// release builds the binaries, then writes the archives, .debs and
// SHA256SUMS; it returns the paths it wrote.
func release(ctx context.Context, o options) ([]string, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	bins := map[string]string{}
	for _, arch := range o.Archs {
		out := filepath.Join(o.OutDir, "build", "linux_"+arch, "certfn")
		if err := buildBinary(ctx, o.Go, o.Root, o.Version, arch, out); err != nil {
			return nil, err
		}
		bins[arch] = out
	}
	texts, err := thirdPartyTexts(ctx, o.Go, o.Root)
	if err != nil {
		return nil, err
	}
	o.ThirdParty = texts
	return writeRelease(o, bins)
}

// ldflags are the linker flags of a release binary: no symbol table or
// DWARF, and main.version set.
func ldflags(version string) string { return "-s -w -X main.version=" + version }

// buildBinary builds ./cmd/certfn of root for linux/arch into out: static
// (CGO_ENABLED=0), -trimpath, ldflags(version), and -buildvcs=auto so that
// the commit is recorded (`certfn version` prints it) even where GOFLAGS
// turns it off, when root is a git checkout.
func buildBinary(ctx context.Context, goCmd, root, version, arch, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("build linux/%s: %w", arch, err)
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=auto", "-ldflags", ldflags(version), "-o", abs, "./cmd/certfn")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build linux/%s: %s: %w\n%s", arch, strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return nil
}

// sources are the repository files a release packages.
type sources struct {
	readme, license, install []byte // license is nil when the repository has none
	notice                   []byte // nil when the repository has none
	unit, socket, defaults   []byte
	postinst, prerm, postrm  []byte
}

// unitBinary is the binary path in packaging/systemd/certfn.service's
// ExecStart: the .deb's; the tarball's unit (and make install's) replace it.
const unitBinary = "/usr/bin/certfn"

// tarballBinary is where docs/deploy/local.md has a release archive's binary
// installed, and its unit's ExecStart.
const tarballBinary = "/usr/local/bin/certfn"

// readSources reads the packaged files from root.
func readSources(root string) (sources, error) {
	var s sources
	for _, f := range []struct {
		path     string
		dst      *[]byte
		optional bool
	}{
		{"README.md", &s.readme, false},
		{"LICENSE", &s.license, true},
		{"NOTICE", &s.notice, true},
		{"docs/deploy/local.md", &s.install, false},
		{"packaging/systemd/certfn.service", &s.unit, false},
		{"packaging/systemd/certfn.socket", &s.socket, false},
		{"packaging/default/certfn", &s.defaults, false},
		{"packaging/deb/postinst", &s.postinst, false},
		{"packaging/deb/prerm", &s.prerm, false},
		{"packaging/deb/postrm", &s.postrm, false},
	} {
		b, err := os.ReadFile(filepath.Join(root, f.path))
		if f.optional && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return s, fmt.Errorf("read packaged file: %w", err)
		}
		*f.dst = b
	}
	if n := bytes.Count(s.unit, []byte(unitBinary)); n != 1 {
		return s, fmt.Errorf("packaging/systemd/certfn.service: names %s %d times, want once (in ExecStart)", unitBinary, n)
	}
	return s, nil
}

// writeRelease writes, for each architecture of bins (arch → binary
// path), the tarball and the .deb into o.OutDir, then SHA256SUMS; it
// returns the paths written, SHA256SUMS last.
func writeRelease(o options, bins map[string]string) ([]string, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	src, err := readSources(o.Root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", o.OutDir, err)
	}
	var written []string
	sums := map[string][sha256.Size]byte{}
	for _, arch := range o.Archs {
		binPath, ok := bins[arch]
		if !ok {
			return nil, fmt.Errorf("no binary for linux/%s", arch)
		}
		bin, err := os.ReadFile(binPath)
		if err != nil {
			return nil, fmt.Errorf("read linux/%s binary: %w", arch, err)
		}
		for _, a := range []struct {
			name  string
			build func() ([]byte, error)
		}{
			{tarballName(o.Version, arch), func() ([]byte, error) { return tarball(o, arch, bin, src) }},
			{debName(o.Version, arch), func() ([]byte, error) { return deb(o, arch, bin, src) }},
		} {
			data, err := a.build()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.name, err)
			}
			p := filepath.Join(o.OutDir, a.name)
			if err := writeFileAtomic(p, data); err != nil {
				return nil, err
			}
			sums[a.name] = sha256.Sum256(data)
			written = append(written, p)
		}
	}
	modules, err := terraformModules(o, src)
	if err != nil {
		return nil, err
	}
	if modules != nil {
		name := modulesName(o.Version)
		p := filepath.Join(o.OutDir, name)
		if err := writeFileAtomic(p, modules); err != nil {
			return nil, err
		}
		sums[name] = sha256.Sum256(modules)
		written = append(written, p)
	}
	p := filepath.Join(o.OutDir, "SHA256SUMS")
	if err := writeFileAtomic(p, checksums(sums)); err != nil {
		return nil, err
	}
	return append(written, p), nil
}

// modulesName is the Terraform modules' archive name.
func modulesName(version string) string { return fmt.Sprintf("certfn_%s_terraform.tar.gz", version) }

// terraformModules is the archive of the Terraform modules of
// infra/terraform (aws/, gcp/, their examples and READMEs, under
// certfn_<version>_terraform/, with LICENSE), so that a configuration can
// name a released module without the repository (docs/deploy/terraform.md);
// nil when root has no infra/terraform. Files git ignores there (a local
// .terraform directory, state, plans) are not the module's: only *.tf,
// *.md and *.tftpl files are packaged.
func terraformModules(o options, s sources) ([]byte, error) {
	base := filepath.Join(o.Root, "infra", "terraform")
	if _, err := os.Stat(base); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	dir := strings.TrimSuffix(modulesName(o.Version), ".tar.gz") + "/"
	var files []file
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != base {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(d.Name()) {
		case ".tf", ".md", ".tftpl":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, path)
		if err != nil {
			return err
		}
		files = append(files, file{dir + filepath.ToSlash(rel), 0o644, b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("terraform modules: %w", err)
	}
	if s.license != nil {
		files = append(files, file{dir + "LICENSE", 0o644, s.license})
	}
	return tarGz(files, o.ModTime)
}

// tarballName and debName are the artifacts' file names.
func tarballName(version, arch string) string {
	return fmt.Sprintf("certfn_%s_linux_%s.tar.gz", version, arch)
}

func debName(version, arch string) string { return fmt.Sprintf("certfn_%s_%s.deb", version, arch) }

// tarball is the release archive of one architecture.
func tarball(o options, arch string, bin []byte, s sources) ([]byte, error) {
	dir := strings.TrimSuffix(tarballName(o.Version, arch), ".tar.gz") + "/"
	files := []file{
		{dir + "certfn", 0o755, bin},
		{dir + "README.md", 0o644, s.readme},
		{dir + "install.md", 0o644, s.install},
		{dir + "systemd/certfn.service", 0o644, bytes.Replace(s.unit, []byte(unitBinary), []byte(tarballBinary), 1)},
		{dir + "systemd/certfn.socket", 0o644, s.socket},
		{dir + "default/certfn", 0o644, s.defaults},
	}
	if s.license != nil {
		files = append(files, file{dir + "LICENSE", 0o644, s.license})
	}
	if s.notice != nil {
		files = append(files, file{dir + "NOTICE", 0o644, s.notice})
	}
	for _, t := range o.ThirdParty {
		files = append(files, file{dir + "licenses/" + t.Path, 0o644, t.Data})
	}
	return tarGz(files, o.ModTime)
}

// checksums is SHA256SUMS: one "<hex>  <name>" line per file, sorted by
// name, as `sha256sum -c` reads it.
func checksums(sums map[string][sha256.Size]byte) []byte {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%x  %s\n", sums[n], n)
	}
	return b.Bytes()
}

// writeFileAtomic writes data to path (mode 0644) through a temporary
// file renamed into place.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".release-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
