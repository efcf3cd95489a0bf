package main

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// unitDirectives parses a systemd unit file into section → key → values
// (in order; a key may repeat).
func unitDirectives(t *testing.T, data []byte) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = strings.Trim(l, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" || strings.HasSuffix(l, "\\") {
				t.Fatalf("unit line %d %q: want Key=value inside a [Section], on one line", n, l)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

// The unit runs `certfn serve` as the certfn user on /var/lib/certfn,
// reads /etc/default/certfn, and has the sandbox docs/deploy/local.md
// describes.
func TestSystemdUnitDirectives(t *testing.T) {
	unit := unitDirectives(t, readFile(t, filepath.Join(repoRoot(t), "packaging/systemd/certfn.service")))
	for _, tc := range []struct {
		section, key string
		want         []string
	}{
		{"Unit", "After", []string{"network-online.target"}},
		{"Unit", "Wants", []string{"network-online.target"}},
		{"Service", "User", []string{"certfn"}},
		{"Service", "Group", []string{"certfn"}},
		{"Service", "StateDirectory", []string{"certfn"}},
		{"Service", "StateDirectoryMode", []string{"0750"}},
		{"Service", "Environment", []string{"CERTFN_DATA=/var/lib/certfn"}},
		{"Service", "EnvironmentFile", []string{"-/etc/default/certfn"}},
		{"Service", "ExecStart", []string{"/usr/bin/certfn serve $CERTFN_SERVE_ARGS"}},
		{"Service", "Restart", []string{"on-failure"}},
		{"Service", "UMask", []string{"0027"}},
		{"Service", "CapabilityBoundingSet", []string{"CAP_NET_BIND_SERVICE"}},
		{"Service", "AmbientCapabilities", []string{"CAP_NET_BIND_SERVICE"}},
		{"Service", "NoNewPrivileges", []string{"yes"}},
		{"Service", "ProtectSystem", []string{"strict"}},
		{"Service", "ProtectHome", []string{"yes"}},
		{"Service", "PrivateTmp", []string{"yes"}},
		{"Service", "PrivateDevices", []string{"yes"}},
		{"Service", "ProtectKernelTunables", []string{"yes"}},
		{"Service", "ProtectKernelModules", []string{"yes"}},
		{"Service", "ProtectKernelLogs", []string{"yes"}},
		{"Service", "ProtectControlGroups", []string{"yes"}},
		{"Service", "RestrictAddressFamilies", []string{"AF_UNIX AF_INET AF_INET6"}},
		{"Service", "RestrictNamespaces", []string{"yes"}},
		{"Service", "LockPersonality", []string{"yes"}},
		{"Service", "MemoryDenyWriteExecute", []string{"yes"}},
		{"Service", "SystemCallArchitectures", []string{"native"}},
		{"Service", "SystemCallFilter", []string{"@system-service", "~@privileged", "@chown"}},
		{"Service", "DynamicUser", nil},
		{"Service", "ReadWritePaths", nil},
		{"Service", "PrivateUsers", nil},
		{"Install", "WantedBy", []string{"multi-user.target"}},
	} {
		if got := unit[tc.section][tc.key]; !slices.Equal(got, tc.want) {
			t.Errorf("[%s] %s = %q, want %q", tc.section, tc.key, got, tc.want)
		}
	}
}

// systemd-analyze verify accepts the unit and the optional socket unit
// without a warning, and
// systemd-analyze security rates its exposure at most 2.0 ("OK"; 1.6
// with systemd 252, see docs/deploy/local.md).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	// verify needs ExecStart's binary: a stand-in, where the unit names
	// /usr/bin/certfn.
	bin := filepath.Join(dir, "certfn")
	writeFile(t, bin, []byte("#!/bin/sh\n"), 0o755)
	unit := bytes.Replace(readFile(t, filepath.Join(repoRoot(t), "packaging/systemd/certfn.service")), []byte(unitBinary), []byte(bin), 1)
	path := filepath.Join(dir, "certfn.service")
	writeFile(t, path, unit, 0o644)

	socket := filepath.Join(dir, "certfn.socket")
	writeFile(t, socket, readFile(t, filepath.Join(repoRoot(t), "packaging/systemd/certfn.socket")), 0o644)
	cmd := exec.Command(analyze, "verify", path, socket)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	cmd = exec.Command(analyze, "security", "--offline=yes", "--no-pager", path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for certfn\.service: (\d+\.\d) `).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: no overall exposure level in\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Errorf("exposure level %s, want at most 2.0:\n%s", m[1], out)
	}
	t.Logf("systemd-analyze security: exposure level %s", m[1])
}

// Every CERTFN_ variable of the example environment file is one certfn
// reads (named in cmd/certfn), or CERTFN_SERVE_ARGS, which the unit's
// ExecStart expands; every line is a comment, blank or VARIABLE=value.
func TestDefaultFile(t *testing.T) {
	root := repoRoot(t)
	defaults := readFile(t, filepath.Join(root, "packaging/default/certfn"))
	var src bytes.Buffer
	files, err := filepath.Glob(filepath.Join(root, "cmd/certfn/*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			src.Write(readFile(t, f))
		}
	}
	assignment := regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=\S`)
	var names []string
	for i, l := range strings.Split(string(defaults), "\n") {
		if m := assignment.FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
			continue
		}
		if l != "" && !strings.HasPrefix(l, "# ") && l != "#" {
			t.Errorf("line %d %q: want a comment (\"# ...\"), a blank line or [#]VARIABLE=value", i+1, l)
		}
	}
	if len(names) < 5 {
		t.Fatalf("only %d example variables: %q", len(names), names)
	}
	unit := readFile(t, filepath.Join(root, "packaging/systemd/certfn.service"))
	for _, n := range names {
		if n == "CERTFN_SERVE_ARGS" {
			if !bytes.Contains(unit, []byte("ExecStart=/usr/bin/certfn serve $CERTFN_SERVE_ARGS\n")) {
				t.Errorf("%s: the unit's ExecStart does not expand it", n)
			}
			continue
		}
		if !strings.HasPrefix(n, "CERTFN_") || !bytes.Contains(src.Bytes(), []byte(`"`+n+`"`)) {
			t.Errorf("%s: cmd/certfn does not read it", n)
		}
	}
}

// make install copies the binary, the unit (ExecStart at the installed
// binary), the optional socket unit and the example /etc/default/certfn under DESTDIR and nothing
// else; it keeps an existing /etc/default/certfn; make uninstall removes
// what it installed, and /etc/default/certfn only when unchanged.
func TestMakeInstall(t *testing.T) {
	makeCmd := requireTool(t, "make", "make")
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "certfn")
	writeFile(t, bin, []byte("#!/bin/sh\necho stand-in certfn\n"), 0o755)
	unit := readFile(t, filepath.Join(root, "packaging/systemd/certfn.service"))
	defaults := readFile(t, filepath.Join(root, "packaging/default/certfn"))
	// Not the make flags of a `make test` running this test (-j, jobserver).
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			env = append(env, kv)
		}
	}
	for _, tc := range []struct {
		name             string
		vars             []string
		binPath, unitDir string
	}{
		{"default prefix", nil, "usr/local/bin/certfn", "usr/local/lib/systemd/system"},
		{"PREFIX=/usr", []string{"PREFIX=/usr"}, "usr/bin/certfn", "usr/lib/systemd/system"},
		{"PREFIX=/opt/certfn, units in /etc", []string{"PREFIX=/opt/certfn", "SYSTEMD_UNIT_DIR=/etc/systemd/system"}, "opt/certfn/bin/certfn", "etc/systemd/system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			makeArgs := append([]string{"-s", "-C", root, "DESTDIR=" + dest, "BIN=" + bin}, tc.vars...)
			runMake := func(target string) { runCmdEnv(t, env, "", makeCmd, append(makeArgs, target)...) }
			runMake("install")
			unitPath := tc.unitDir + "/certfn.service"
			want := map[string]os.FileMode{tc.binPath: 0o755, unitPath: 0o644, tc.unitDir + "/certfn.socket": 0o644, "etc/default/certfn": 0o600}
			if got := regularFiles(t, dest); !maps.Equal(got, want) {
				t.Fatalf("installed %v, want %v", got, want)
			}
			if !bytes.Equal(readFile(t, filepath.Join(dest, tc.binPath)), readFile(t, bin)) {
				t.Error("installed binary differs from BIN")
			}
			wantUnit := bytes.Replace(unit, []byte("ExecStart=/usr/bin/certfn "), []byte("ExecStart=/"+tc.binPath+" "), 1)
			if got := readFile(t, filepath.Join(dest, unitPath)); !bytes.Equal(got, wantUnit) {
				t.Errorf("installed unit's ExecStart: %q", regexp.MustCompile(`(?m)^ExecStart=.*$`).Find(got))
			}
			if !bytes.Equal(readFile(t, filepath.Join(dest, "etc/default/certfn")), defaults) {
				t.Error("installed /etc/default/certfn differs from packaging/default/certfn")
			}

			// A changed /etc/default/certfn survives a reinstall and an uninstall.
			changed := append(slices.Clone(defaults), "CERTFN_HTTP01_LISTEN=:80\n"...)
			writeFile(t, filepath.Join(dest, "etc/default/certfn"), changed, 0o600)
			runMake("install")
			runMake("uninstall")
			if got := regularFiles(t, dest); !maps.Equal(got, map[string]os.FileMode{"etc/default/certfn": 0o600}) {
				t.Errorf("after uninstall: %v, want the changed etc/default/certfn only", got)
			}
			if !bytes.Equal(readFile(t, filepath.Join(dest, "etc/default/certfn")), changed) {
				t.Error("reinstall or uninstall replaced a changed /etc/default/certfn")
			}

			// An unchanged one goes with the rest.
			writeFile(t, filepath.Join(dest, "etc/default/certfn"), defaults, 0o600)
			runMake("uninstall")
			if got := regularFiles(t, dest); len(got) != 0 {
				t.Errorf("after uninstall: %v, want no files", got)
			}
		})
	}
}

// regularFiles maps every non-directory under dir (slash-separated,
// relative) to its permissions; a symlink or other special file is an
// error.
func regularFiles(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !info.Mode().IsRegular() {
			t.Errorf("%s: not a regular file (%v)", rel, info.Mode())
		}
		out[filepath.ToSlash(rel)] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
