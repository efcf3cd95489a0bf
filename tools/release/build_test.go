package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// A real release (the one test that builds: certfn for linux/amd64 and
// linux/arm64): static, stripped binaries of the right machine, built with
// -trimpath and main.version set; the host's one prints that version; the
// .deb holds the tarball's binary; SHA256SUMS checks.
func TestReleaseBuildsStaticBinaries(t *testing.T) {
	dpkgDeb := requireTool(t, "dpkg-deb", "dpkg")
	requireTool(t, "go", "golang")
	out := t.TempDir()
	o := newRelease(repoRoot(t), out).version("1.2.3~test").build()
	if _, err := release(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	// The Terraform modules, as a configuration names them
	// (certfn_<version>_terraform/aws), with the license.
	mods, _ := readTarGz(t, readFile(t, filepath.Join(out, modulesName(o.Version))))
	modNames := map[string]bool{}
	for _, e := range mods {
		modNames[e.hdr.Name] = true
		if strings.Contains(e.hdr.Name, "/.") || strings.HasSuffix(e.hdr.Name, ".tfstate") {
			t.Errorf("terraform archive: %s is not part of a module", e.hdr.Name)
		}
	}
	for _, want := range []string{"aws/main.tf", "aws/variables.tf", "gcp/main.tf", "aws/examples/basic/main.tf", "LICENSE"} {
		if !modNames["certfn_1.2.3~test_terraform/"+want] {
			t.Errorf("terraform archive has no %s", want)
		}
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, arch := range o.Archs {
		t.Run(arch, func(t *testing.T) {
			entries, _ := readTarGz(t, readFile(t, filepath.Join(out, tarballName(o.Version, arch))))
			var bin []byte
			for _, e := range entries {
				if e.hdr.Name == "certfn_1.2.3~test_linux_"+arch+"/certfn" {
					bin = e.data
				}
			}
			if bin == nil {
				t.Fatal("no certfn binary in the tarball")
			}
			// The repository's LICENSE and NOTICE, and the license texts of
			// what the binary links (cobra's, Apache-2.0, and x/crypto's).
			names := map[string]bool{}
			for _, e := range entries {
				names[strings.TrimPrefix(e.hdr.Name, "certfn_1.2.3~test_linux_"+arch+"/")] = true
			}
			for _, want := range []string{"LICENSE", "NOTICE", "licenses/github.com/spf13/cobra/LICENSE.txt", "licenses/golang.org/x/crypto/LICENSE"} {
				if !names[want] {
					t.Errorf("the tarball has no %s", want)
				}
			}
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatal(err)
			}
			if f.Machine != machines[arch] {
				t.Errorf("ELF machine %v, want %v", f.Machine, machines[arch])
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("program header %v: the binary is dynamically linked", p.Type)
				}
			}
			for _, s := range f.Sections {
				if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug") || strings.HasPrefix(s.Name, ".zdebug") {
					t.Errorf("section %s: the binary is not stripped (-s -w)", s.Name)
				}
			}
			bi, err := buildinfo.Read(bytes.NewReader(bin))
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, s := range bi.Settings {
				settings[s.Key] = s.Value
			}
			// (-trimpath leaves -ldflags out of the build information: the
			// version is checked in the binary's data below.)
			for k, want := range map[string]string{"CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": arch, "-trimpath": "true"} {
				if settings[k] != want {
					t.Errorf("build setting %s = %q, want %q", k, settings[k], want)
				}
			}
			if bi.Path != "github.com/certfn/certfn/cmd/certfn" {
				t.Errorf("main package %s", bi.Path)
			}
			// The commit is recorded (-buildvcs=auto, whatever GOFLAGS says)
			// when the sources are a git checkout.
			if _, err := os.Stat(filepath.Join(repoRoot(t), ".git")); err == nil && (settings["vcs"] != "git" || len(settings["vcs.revision"]) != 40) {
				t.Errorf("build settings vcs %q vcs.revision %q, want git and a commit", settings["vcs"], settings["vcs.revision"])
			}
			if !bytes.Contains(bin, []byte("1.2.3~test")) {
				t.Error("the binary does not hold its version 1.2.3~test: -X main.version had no variable to set")
			}

			ctrl := t.TempDir()
			runCmd(t, "", dpkgDeb, "--extract", filepath.Join(out, debName(o.Version, arch)), ctrl)
			if !bytes.Equal(readFile(t, filepath.Join(ctrl, "usr/bin/certfn")), bin) {
				t.Error("the .deb's /usr/bin/certfn differs from the tarball's binary")
			}
			if arch == runtime.GOARCH && runtime.GOOS == "linux" {
				got := runCmd(t, "", filepath.Join(ctrl, "usr/bin/certfn"), "version")
				if !strings.HasPrefix(got, "certfn 1.2.3~test (") || !strings.Contains(got, "linux/"+arch+")") {
					t.Errorf("certfn version: %q, want certfn 1.2.3~test (... linux/%s)", got, arch)
				}
			}
		})
	}
	got := runCmd(t, out, requireTool(t, "sha256sum", "coreutils"), "--check", "--strict", "SHA256SUMS")
	if strings.Count(got, ": OK\n") != 5 { // two archives, two .debs, the Terraform modules
		t.Errorf("sha256sum --check:\n%s", got)
	}
}

// `make build` stamps what it built: `certfn version` says the version
// make release would give (the last v* tag, or 0.0.0~git<date>.<commit>
// without one), never "dev", and the commit when the sources are a git
// checkout, whatever GOFLAGS says about VCS stamping.
func TestMakeBuildStampsVersion(t *testing.T) {
	mk := requireTool(t, "make", "make")
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "certfn")
	env := append(os.Environ(), "GOFLAGS=-buildvcs=false")
	runCmdEnv(t, env, root, mk, "-s", "build", "BIN="+bin)
	version := strings.TrimSpace(runCmdEnv(t, env, root, mk, "-s", "print-version"))
	if version == "" || version == "dev" {
		t.Fatalf("make print-version: %q", version)
	}
	got := runCmd(t, "", bin, "version")
	if !strings.HasPrefix(got, "certfn "+version+" (") {
		t.Errorf("certfn version: %q, want certfn %s (...)", got, version)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil && !regexp.MustCompile(`revision [0-9a-f]{40}`).MatchString(got) {
		t.Errorf("certfn version: %q, want the commit", got)
	}
}
