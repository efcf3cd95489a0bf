package localmode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// checkDataPermissions refuses a data directory, secrets/ directory or
// state database (with SQLite's journal files) that every local user may
// write to. certfn creates them 0700 and 0600; a world-writable one was
// made so by someone else.
//
// It refuses rather than fixing the mode: while the path was
// world-writable any local user could have replaced state.db, planted
// or swapped a secret (a CA key pair, an ACME account key) or put a
// symlink in place of a file, and a silent chmod would keep trusting
// whatever is there now. The operator has to look, then run chmod o-w.
// Missing paths are fine (Open creates them with private modes).
// Group-writable paths are accepted: a group may share a data directory.
func checkDataPermissions(dataDir string) error {
	if runtime.GOOS == "windows" {
		return nil // no Unix mode bits; ACLs are the administrator's
	}
	db := filepath.Join(dataDir, "state.db")
	for _, p := range []struct{ path, what string }{
		{dataDir, "data directory"},
		{filepath.Join(dataDir, "secrets"), "secrets directory"},
		{db, "state database"},
		{db + "-wal", "state database journal"},
		{db + "-shm", "state database journal"},
	} {
		// Stat follows symlinks: what matters is who can write the target.
		st, err := os.Stat(p.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check %s %s: %w", p.what, p.path, err)
		}
		if mode := st.Mode().Perm(); mode&0o002 != 0 {
			return fmt.Errorf("%s %s is world-writable (mode %#o): any local user could replace certfn's state or keys; "+
				"check its contents, then run chmod o-w %s (certfn creates directories 0700 and files 0600)", p.what, p.path, uint32(mode), p.path)
		}
	}
	return nil
}
