package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dpkg-deb reads the .deb: its control fields, its files with owners and
// modes, /etc/default/certfn as the only conffile, md5sums that match the
// extracted files, and the maintainer scripts of packaging/deb.
func TestDebPackage(t *testing.T) {
	dpkgDeb := requireTool(t, "dpkg-deb", "dpkg")
	root, out := fixtureRoot(t, "the license\n"), t.TempDir()
	bins := fakeBinaries(t, "amd64", "arm64")
	if _, err := writeRelease(newRelease(root, out).build(), bins); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			debPath := filepath.Join(out, debName("1.2.3~rc.1", arch))
			runCmd(t, "", dpkgDeb, "--info", debPath)

			fields := map[string]string{
				"Package": "certfn", "Version": "1.2.3~rc.1", "Architecture": arch, "Maintainer": defaultMaintainer,
				"Depends": "passwd", "Section": "admin", "Priority": "optional",
				"Description": "cert-manager's certificate lifecycle without Kubernetes",
			}
			for f, want := range fields {
				got := strings.TrimSpace(runCmd(t, "", dpkgDeb, "--field", debPath, f))
				if f == "Description" {
					got, _, _ = strings.Cut(got, "\n")
				}
				if got != want {
					t.Errorf("field %s = %q, want %q", f, got, want)
				}
			}
			size, err := strconv.Atoi(strings.TrimSpace(runCmd(t, "", dpkgDeb, "--field", debPath, "Installed-Size")))
			if err != nil || size < len(fakeBinary(arch))/1024 {
				t.Errorf("Installed-Size %d (%v): want at least the binary's %d KiB", size, err, len(fakeBinary(arch))/1024)
			}

			// dpkg-deb --contents: "drwxr-xr-x root/root 0 2024-05-06 07:08 ./usr/".
			wantContents := map[string]string{
				"./": "drwxr-xr-x", "./etc/": "drwxr-xr-x", "./etc/default/": "drwxr-xr-x", "./etc/default/certfn": "-rw-------",
				"./usr/": "drwxr-xr-x", "./usr/bin/": "drwxr-xr-x", "./usr/bin/certfn": "-rwxr-xr-x",
				"./usr/lib/": "drwxr-xr-x", "./usr/lib/systemd/": "drwxr-xr-x", "./usr/lib/systemd/system/": "drwxr-xr-x",
				"./usr/lib/systemd/system/certfn.service": "-rw-r--r--", "./usr/lib/systemd/system/certfn.socket": "-rw-r--r--",
				"./usr/share/": "drwxr-xr-x", "./usr/share/doc/": "drwxr-xr-x", "./usr/share/doc/certfn/": "drwxr-xr-x",
				"./usr/share/doc/certfn/README.md": "-rw-r--r--", "./usr/share/doc/certfn/install.md": "-rw-r--r--",
				"./usr/share/doc/certfn/copyright": "-rw-r--r--",
			}
			line := regexp.MustCompile(`^(\S{10}) (\S+)\s+\d+ 2024-05-06 07:08 (\S+)$`)
			var paths []string
			for _, l := range strings.Split(strings.TrimSpace(runCmd(t, "", dpkgDeb, "--contents", debPath)), "\n") {
				m := line.FindStringSubmatch(l)
				if m == nil {
					t.Errorf("--contents line %q: want <mode> root/root <size> 2024-05-06 07:08 <path>", l)
					continue
				}
				paths = append(paths, m[3])
				if want, ok := wantContents[m[3]]; !ok || m[1] != want || m[2] != "root/root" {
					t.Errorf("%s: %s %s, want %s root/root", m[3], m[1], m[2], want)
				}
			}
			if len(paths) != len(wantContents) {
				t.Errorf("contents %q, want the %d paths of %v", paths, len(wantContents), wantContents)
			}

			ctrl, data := t.TempDir(), t.TempDir()
			runCmd(t, "", dpkgDeb, "--control", debPath, ctrl)
			runCmd(t, "", dpkgDeb, "--extract", debPath, data)
			if got := string(readFile(t, filepath.Join(ctrl, "conffiles"))); got != "/etc/default/certfn\n" {
				t.Errorf("conffiles %q, want /etc/default/certfn", got)
			}
			md5sums := readFile(t, filepath.Join(ctrl, "md5sums"))
			if bytes.Contains(md5sums, []byte("etc/default/certfn")) {
				t.Error("md5sums lists the conffile")
			}
			checked := runCmd(t, data, requireTool(t, "md5sum", "coreutils"), "--check", "--strict", filepath.Join(ctrl, "md5sums"))
			if n := strings.Count(checked, ": OK\n"); n != 6 {
				t.Errorf("md5sum --check verified %d files, want 6 (binary, unit, socket, README.md, install.md, copyright):\n%s", n, checked)
			}
			for _, s := range []string{"postinst", "prerm", "postrm"} {
				st, err := os.Stat(filepath.Join(ctrl, s))
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o755 || !bytes.Equal(readFile(t, filepath.Join(ctrl, s)), readFile(t, filepath.Join(root, "packaging/deb", s))) {
					t.Errorf("%s: mode %v or content differs from packaging/deb/%s", s, st.Mode().Perm(), s)
				}
			}
			for p, want := range map[string][]byte{
				"usr/bin/certfn":                        fakeBinary(arch),
				"usr/lib/systemd/system/certfn.service": readFile(t, filepath.Join(root, "packaging/systemd/certfn.service")),
				"usr/lib/systemd/system/certfn.socket":  readFile(t, filepath.Join(root, "packaging/systemd/certfn.socket")),
				"etc/default/certfn":                    readFile(t, filepath.Join(root, "packaging/default/certfn")),
				"usr/share/doc/certfn/copyright":        []byte("the license\n"),
			} {
				if !bytes.Equal(readFile(t, filepath.Join(data, p)), want) {
					t.Errorf("extracted %s differs from its source", p)
				}
			}
		})
	}
}

// The maintainer scripts, run with stand-ins for the commands they call
// (each logs its arguments), create the user, group and data directory
// on a first configure only, restart on an upgrade, stop and disable on
// removal, and refuse an unknown action. Whether systemd runs on this
// machine (/run/systemd/system) decides the systemctl calls, as in the
// scripts.
func TestMaintainerScripts(t *testing.T) {
	sh := requireTool(t, "sh", "dash")
	systemdRuns := dirExists("/run/systemd/system")
	dataDirExists := dirExists("/var/lib/certfn")
	ifSystemd := func(calls ...string) []string {
		if systemdRuns {
			return calls
		}
		return nil
	}
	createUser := []string{
		"groupadd --system certfn",
		"useradd --system --gid certfn --home-dir /var/lib/certfn --no-create-home --shell /usr/sbin/nologin --comment certfn certificate manager certfn",
	}
	if !dataDirExists {
		createUser = append(createUser, "install -d -o certfn -g certfn -m 0750 /var/lib/certfn")
	}
	for _, tc := range []struct {
		name       string
		script     string
		args       []string
		userExists bool
		wantCalls  []string
		wantExit   int
	}{
		{"first install", "postinst", []string{"configure", ""}, false, append(slices.Clone(createUser), ifSystemd("systemctl daemon-reload")...), 0},
		{"reinstall with the user present", "postinst", []string{"configure", ""}, true,
			append(condCall(!dataDirExists, "install -d -o certfn -g certfn -m 0750 /var/lib/certfn"), ifSystemd("systemctl daemon-reload")...), 0},
		{"upgrade", "postinst", []string{"configure", "1.2.2"}, true,
			append(condCall(!dataDirExists, "install -d -o certfn -g certfn -m 0750 /var/lib/certfn"), ifSystemd("systemctl daemon-reload", "systemctl try-restart certfn.service")...), 0},
		{"postinst abort-upgrade", "postinst", []string{"abort-upgrade", "1.2.2"}, true, nil, 0},
		{"postinst unknown action", "postinst", []string{"frobnicate"}, true, nil, 1},
		{"removal", "prerm", []string{"remove"}, true, append(ifSystemd("systemctl stop certfn.service"), "systemctl disable certfn.service"), 0},
		{"prerm before an upgrade", "prerm", []string{"upgrade", "1.2.4"}, true, nil, 0},
		{"prerm unknown action", "prerm", []string{"frobnicate"}, true, nil, 1},
		{"postrm remove", "postrm", []string{"remove"}, true, ifSystemd("systemctl daemon-reload"), 0},
		{"purge", "postrm", []string{"purge"}, true, ifSystemd("systemctl daemon-reload"), 0},
		{"postrm upgrade", "postrm", []string{"upgrade", "1.2.4"}, true, nil, 0},
		{"postrm unknown action", "postrm", []string{"frobnicate"}, true, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stubs, log := t.TempDir(), filepath.Join(t.TempDir(), "calls")
			found := "2"
			if tc.userExists {
				found = "0"
			}
			for _, name := range []string{"groupadd", "useradd", "install", "systemctl"} {
				writeFile(t, filepath.Join(stubs, name), []byte("#!/bin/sh\necho \""+name+" $*\" >>\""+log+"\"\n"), 0o755)
			}
			// getent: the certfn user and group exist or not.
			writeFile(t, filepath.Join(stubs, "getent"), []byte("#!/bin/sh\nexit "+found+"\n"), 0o755)
			cmd := exec.Command(sh, append([]string{filepath.Join(repoRoot(t), "packaging/deb", tc.script)}, tc.args...)...)
			cmd.Env = append(os.Environ(), "PATH="+stubs+":/usr/sbin:/usr/bin:/sbin:/bin")
			outb, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantExit {
				t.Fatalf("exit %d (%v), want %d; output:\n%s", code, err, tc.wantExit, outb)
			}
			var calls []string
			if b, err := os.ReadFile(log); err == nil {
				calls = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			}
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls\n%q\nwant\n%q", calls, tc.wantCalls)
			}
			if tc.wantExit != 0 && !strings.Contains(string(outb), "unknown argument 'frobnicate'") {
				t.Errorf("output %q does not name the unknown argument", outb)
			}
		})
	}
}

func condCall(cond bool, call string) []string {
	if cond {
		return []string{call}
	}
	return nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
