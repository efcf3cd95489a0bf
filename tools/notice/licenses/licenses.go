// Package licenses finds and names the licenses of the Go modules that
// certfn's binaries link: the modules come from `go list -deps` of the
// binaries' main packages (what a build links, test code excluded), the
// license texts from each module's root directory in the module cache,
// and the names from github.com/google/licensecheck, as SPDX identifiers.
// A module whose license cannot be found or named, or is not one of
// Allowed, is an error naming it: nothing is shipped under an unknown
// license.
package licenses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// Binaries are the main packages of everything certfn ships: the CLI
// (local mode), the Lambda functions, the Cloud Run binary and the
// Terraform provider.
var Binaries = []string{"./cmd/certfn", "./functions/...", "./cmd/terraform-provider-certfn"}

// Allowed are the licenses certfn may link and ship under Apache-2.0:
// permissive ones, and MPL-2.0 (file-level copyleft: the modules are
// shipped unmodified, with their source available from the module proxy).
var Allowed = []string{"Apache-2.0", "MIT", "MIT-0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "MPL-2.0", "Unlicense", "CC0-1.0"}

// Module is one linked module with its license.
type Module struct {
	Path, Version string
	// Dir is the module's directory in the module cache.
	Dir string
	// License is the SPDX expression of its license files ("A AND B"
	// when several licenses apply).
	License string
	// Files are the license and notice files of the module's root, by
	// name (LICENSE, NOTICE, COPYING…), sorted.
	Files []string
}

// Linked lists the modules linked by the packages pkgs of the module in
// root (other than root's own module and the standard library), sorted by
// path, with their licenses.
func Linked(ctx context.Context, goCmd, root string, pkgs ...string) ([]Module, error) {
	args := append([]string{"list", "-deps", "-json=Module"}, pkgs...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w: %s", strings.Join(pkgs, " "), err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]Module{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Module *struct {
				Path, Version, Dir string
				Main               bool
				Replace            *struct{ Path, Version, Dir string }
			}
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: decode: %w", err)
		}
		m := p.Module
		if m == nil || m.Main {
			continue
		}
		mod := Module{Path: m.Path, Version: m.Version, Dir: m.Dir}
		if m.Replace != nil {
			mod.Version, mod.Dir = m.Replace.Version, m.Replace.Dir
		}
		seen[mod.Path] = mod
	}
	mods := make([]Module, 0, len(seen))
	for _, m := range seen {
		if err := m.classify(); err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}

// licenseFile reports a file name that holds a license or notice text.
func licenseFile(name string) bool {
	n := strings.ToUpper(name)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "NOTICE", "UNLICENSE"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// classify finds m's license files and names their licenses.
func (m *Module) classify() error {
	if m.Dir == "" {
		return fmt.Errorf("module %s@%s: not in the module cache (go mod download)", m.Path, m.Version)
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
	}
	ids := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !licenseFile(e.Name()) {
			continue
		}
		m.Files = append(m.Files, e.Name())
		if strings.HasPrefix(strings.ToUpper(e.Name()), "NOTICE") {
			continue // a notice, not a license
		}
		b, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return fmt.Errorf("module %s@%s: %w", m.Path, m.Version, err)
		}
		for _, match := range licensecheck.Scan(b).Match {
			ids[match.ID] = true
		}
	}
	slices.Sort(m.Files)
	if len(ids) == 0 {
		return fmt.Errorf("module %s@%s: no license found in %v (its root holds no LICENSE file licensecheck recognises)", m.Path, m.Version, m.Files)
	}
	var names []string
	for id := range ids {
		if !slices.Contains(Allowed, id) {
			return fmt.Errorf("module %s@%s: license %s is not one certfn ships under (allowed: %s)", m.Path, m.Version, id, strings.Join(Allowed, ", "))
		}
		names = append(names, id)
	}
	slices.Sort(names)
	m.License = strings.Join(names, " AND ")
	return nil
}
