package localmode

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A data directory, secrets/ directory or state database that every
// local user may write to is refused at Open, naming the path and mode;
// group-writable ones and private ones open.
func TestOpenRefusesWorldWritableData(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	for _, tc := range []struct {
		name  string
		path  string // relative to the data directory; "" = itself
		mode  os.FileMode
		isDir bool
		want  string // "" = opens
	}{
		{name: "private", path: "", mode: 0o700, isDir: true},
		{name: "group-writable directory", path: "", mode: 0o770, isDir: true},
		{name: "world-writable data directory", path: "", mode: 0o777, isDir: true, want: "data directory %s is world-writable (mode 0777)"},
		{name: "world-writable with sticky bit", path: "", mode: 0o777 | os.ModeSticky, isDir: true, want: "data directory %s is world-writable (mode 0777)"},
		{name: "world-writable secrets directory", path: "secrets", mode: 0o777, isDir: true, want: "secrets directory %s is world-writable (mode 0777)"},
		{name: "world-writable state database", path: "state.db", mode: 0o666, want: "state database %s is world-writable (mode 0666)"},
		{name: "world-writable journal", path: "state.db-wal", mode: 0o646, want: "state database journal %s is world-writable (mode 0646)"},
		{name: "world-readable state database", path: "state.db", mode: 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, tc.path)
			switch {
			case tc.path == "":
			case tc.isDir:
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// Chmod, not the create mode: the umask does not apply.
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			rt, err := Open(Options{DataDir: dir})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				_ = rt.Close()
				return
			}
			if err == nil {
				_ = rt.Close()
				t.Fatal("Open accepted it")
			}
			if want := strings.Replace(tc.want, "%s", p, 1); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "chmod o-w") {
				t.Fatalf("Open: %v\nwant it to contain %q and the fix", err, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "state.db")); tc.path == "" && err == nil {
				t.Fatal("state.db created in a refused directory")
			}
		})
	}
}
