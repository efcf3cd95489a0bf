package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tarball of each architecture holds, under one directory named after
// it, the binary, README.md, install.md, the unit (ExecStart pointed at
// /usr/local/bin/certfn), the example environment file and LICENSE when
// the repository has one: sorted, owned by root, all at the given time.
func TestWriteReleaseTarballs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		license string
	}{
		{"without a LICENSE", ""},
		{"with a LICENSE", "Some license text\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, out := fixtureRoot(t, tc.license), t.TempDir()
			bins := fakeBinaries(t, "amd64", "arm64")
			written, err := writeRelease(newRelease(root, out).build(), bins)
			if err != nil {
				t.Fatal(err)
			}
			wantWritten := []string{"certfn_1.2.3~rc.1_linux_amd64.tar.gz", "certfn_1.2.3~rc.1_amd64.deb",
				"certfn_1.2.3~rc.1_linux_arm64.tar.gz", "certfn_1.2.3~rc.1_arm64.deb", "SHA256SUMS"}
			for i := range wantWritten {
				wantWritten[i] = filepath.Join(out, wantWritten[i])
			}
			if !slices.Equal(written, wantWritten) {
				t.Fatalf("written %q, want %q", written, wantWritten)
			}
			unit := readFile(t, filepath.Join(root, "packaging/systemd/certfn.service"))
			for _, arch := range []string{"amd64", "arm64"} {
				dir := "certfn_1.2.3~rc.1_linux_" + arch + "/"
				want := map[string]struct {
					mode int64
					data []byte
				}{
					dir:                            {0o755, nil},
					dir + "certfn":                 {0o755, fakeBinary(arch)},
					dir + "README.md":              {0o644, readFile(t, filepath.Join(root, "README.md"))},
					dir + "install.md":             {0o644, readFile(t, filepath.Join(root, "docs/deploy/local.md"))},
					dir + "systemd/":               {0o755, nil},
					dir + "systemd/certfn.service": {0o644, bytes.Replace(unit, []byte("ExecStart=/usr/bin/certfn "), []byte("ExecStart=/usr/local/bin/certfn "), 1)},
					dir + "systemd/certfn.socket":  {0o644, readFile(t, filepath.Join(root, "packaging/systemd/certfn.socket"))},
					dir + "default/":               {0o755, nil},
					dir + "default/certfn":         {0o644, readFile(t, filepath.Join(root, "packaging/default/certfn"))},
				}
				if tc.license != "" {
					want[dir+"LICENSE"] = struct {
						mode int64
						data []byte
					}{0o644, []byte(tc.license)}
				}
				entries, _ := readTarGz(t, readFile(t, filepath.Join(out, tarballName("1.2.3~rc.1", arch))))
				var names []string
				for _, e := range entries {
					names = append(names, e.hdr.Name)
					w, ok := want[e.hdr.Name]
					if !ok {
						t.Errorf("%s: unexpected entry %s", arch, e.hdr.Name)
						continue
					}
					isDir := strings.HasSuffix(e.hdr.Name, "/")
					if isDir && e.hdr.Typeflag != tar.TypeDir || !isDir && e.hdr.Typeflag != tar.TypeReg {
						t.Errorf("%s: %s has type %q", arch, e.hdr.Name, e.hdr.Typeflag)
					}
					if e.hdr.Mode != w.mode || e.hdr.Uid != 0 || e.hdr.Gid != 0 || e.hdr.Uname != "root" || e.hdr.Gname != "root" {
						t.Errorf("%s: %s mode %o owner %d:%d (%s:%s), want %o 0:0 (root:root)", arch, e.hdr.Name, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, e.hdr.Uname, e.hdr.Gname, w.mode)
					}
					if !e.hdr.ModTime.Equal(testMTime) {
						t.Errorf("%s: %s time %v, want %v", arch, e.hdr.Name, e.hdr.ModTime, testMTime)
					}
					if !bytes.Equal(e.data, w.data) {
						t.Errorf("%s: %s content differs from its source", arch, e.hdr.Name)
					}
				}
				if len(names) != len(want) {
					t.Errorf("%s: entries %q, want the %d of %v", arch, names, len(want), want)
				}
				if !slices.IsSorted(names) || names[0] != dir {
					t.Errorf("%s: entries %q are not sorted under %s", arch, names, dir)
				}
			}
		})
	}
}

// The same inputs give the same bytes; only the given time (not the
// clock) decides the entries' times; the gzip headers carry no name or
// time.
func TestWriteReleaseIsReproducible(t *testing.T) {
	root, bins := fixtureRoot(t, "license\n"), fakeBinaries(t, "amd64", "arm64")
	outs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for i, out := range outs {
		r := newRelease(root, out)
		if i == 2 {
			r.mtime(testMTime.Add(time.Second))
		}
		if _, err := writeRelease(r.build(), bins); err != nil {
			t.Fatal(err)
		}
	}
	names := listDir(t, outs[0])
	if len(names) != 5 || !slices.Equal(names, listDir(t, outs[1])) {
		t.Fatalf("outputs %q and %q", names, listDir(t, outs[1]))
	}
	for _, n := range names {
		if !bytes.Equal(readFile(t, filepath.Join(outs[0], n)), readFile(t, filepath.Join(outs[1], n))) {
			t.Errorf("%s differs between two releases of the same inputs", n)
		}
		if n != "SHA256SUMS" && bytes.Equal(readFile(t, filepath.Join(outs[0], n)), readFile(t, filepath.Join(outs[2], n))) {
			t.Errorf("%s is the same with another -mtime: the entries' time is not the one given", n)
		}
	}
	_, zh := readTarGz(t, readFile(t, filepath.Join(outs[0], tarballName("1.2.3~rc.1", "amd64"))))
	if zh.Name != "" || !zh.ModTime.IsZero() || zh.Comment != "" {
		t.Errorf("gzip header name %q time %v comment %q, want none", zh.Name, zh.ModTime, zh.Comment)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// SHA256SUMS has one "<sha256>  <name>" line per archive and .deb, sorted
// by name, and sha256sum -c accepts it.
func TestChecksumsFile(t *testing.T) {
	out := t.TempDir()
	if _, err := writeRelease(newRelease(fixtureRoot(t, ""), out).build(), fakeBinaries(t, "amd64", "arm64")); err != nil {
		t.Fatal(err)
	}
	sums := string(readFile(t, filepath.Join(out, "SHA256SUMS")))
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	var names []string
	for _, l := range strings.Split(strings.TrimSuffix(sums, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("SHA256SUMS line %q: want <64 hex digits><2 spaces><name>", l)
		}
		sum := sha256.Sum256(readFile(t, filepath.Join(out, m[2])))
		if m[1] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: listed %s, file has %x", m[2], m[1], sum)
		}
		names = append(names, m[2])
	}
	want := []string{"certfn_1.2.3~rc.1_amd64.deb", "certfn_1.2.3~rc.1_arm64.deb", "certfn_1.2.3~rc.1_linux_amd64.tar.gz", "certfn_1.2.3~rc.1_linux_arm64.tar.gz"}
	if !slices.Equal(names, want) {
		t.Errorf("SHA256SUMS names %q, want %q", names, want)
	}
	if !strings.HasSuffix(sums, "\n") {
		t.Error("SHA256SUMS does not end with a newline")
	}
	got := runCmd(t, out, requireTool(t, "sha256sum", "coreutils"), "--check", "--strict", "SHA256SUMS")
	if strings.Count(got, ": OK\n") != len(want) {
		t.Errorf("sha256sum --check:\n%s", got)
	}
}

// Invalid options are refused before anything is written, naming the
// flag and the rule.
func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*releaseOptions)
		wantErr string
	}{
		{"no version", func(r *releaseOptions) { r.version("") }, "-version is required"},
		{"v prefix", func(r *releaseOptions) { r.version("v1.2.3") }, `-version "v1.2.3": must start with a digit`},
		{"space", func(r *releaseOptions) { r.version("1.2 3") }, "hold only letters, digits and . + ~ -"},
		{"slash", func(r *releaseOptions) { r.version("1.2/3") }, "hold only letters, digits and . + ~ -"},
		{"trailing hyphen", func(r *releaseOptions) { r.version("1.2.3-") }, "not ending with -"},
		{"no time", func(r *releaseOptions) { r.mtime(time.Time{}) }, "-mtime (or SOURCE_DATE_EPOCH) is required"},
		{"no architecture", func(r *releaseOptions) { r.archs() }, "-arch: at least one architecture"},
		{"unknown architecture", func(r *releaseOptions) { r.archs("amd64", "386") }, `-arch "386": want amd64 or arm64`},
		{"architecture twice", func(r *releaseOptions) { r.archs("arm64", "arm64") }, `-arch "arm64": given twice`},
		{"maintainer on two lines", func(r *releaseOptions) { r.maintainer("a\nb") }, "-maintainer"},
		{"no output directory", func(r *releaseOptions) { r.outDir("") }, "-o: an output directory is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			r := newRelease(fixtureRoot(t, ""), out)
			tc.change(r)
			_, err := writeRelease(r.build(), fakeBinaries(t, "amd64", "arm64"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if names := listDir(t, out); len(names) != 0 {
				t.Errorf("wrote %q before refusing", names)
			}
		})
	}
}

// A release refuses a missing packaged file or binary, and a unit whose
// ExecStart binary cannot be rewritten unambiguously.
func TestWriteReleaseMissingInputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, root string, bins map[string]string)
		wantErr string
	}{
		{"no install.md", func(t *testing.T, root string, _ map[string]string) {
			_ = os.Remove(filepath.Join(root, "docs/deploy/local.md"))
		}, "docs/deploy/local.md"},
		{"no postinst", func(t *testing.T, root string, _ map[string]string) {
			_ = os.Remove(filepath.Join(root, "packaging/deb/postinst"))
		}, "packaging/deb/postinst"},
		{"no arm64 binary", func(t *testing.T, _ string, bins map[string]string) { delete(bins, "arm64") }, "no binary for linux/arm64"},
		{"unreadable binary", func(t *testing.T, _ string, bins map[string]string) { bins["amd64"] += ".missing" }, "read linux/amd64 binary"},
		{"unit naming the binary twice", func(t *testing.T, root string, _ map[string]string) {
			p := filepath.Join(root, "packaging/systemd/certfn.service")
			writeFile(t, p, append(readFile(t, p), "ExecReload=/usr/bin/certfn check\n"...), 0o644)
		}, "names /usr/bin/certfn 2 times, want once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, bins := fixtureRoot(t, ""), fakeBinaries(t, "amd64", "arm64")
			tc.prepare(t, root, bins)
			_, err := writeRelease(newRelease(root, t.TempDir()).build(), bins)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// ar members are padded to an even length; names must fit the header.
func TestArArchive(t *testing.T) {
	got, err := arArchive([]arMember{{"odd", []byte("abc")}, {"even", []byte("de")}}, testMTime)
	if err != nil {
		t.Fatal(err)
	}
	want := "!<arch>\n" +
		"odd             1714979289  0     0     100644  3         `\nabc\n" +
		"even            1714979289  0     0     100644  2         `\nde"
	if string(got) != want {
		t.Errorf("ar archive\n%q\nwant\n%q", got, want)
	}
	for _, name := range []string{"", "seventeen-chars-x", "a b", "a/b"} {
		if _, err := arArchive([]arMember{{name, nil}}, testMTime); err == nil || !strings.Contains(err.Error(), "ar member name") {
			t.Errorf("name %q: error %v, want one about the member name", name, err)
		}
	}
}
