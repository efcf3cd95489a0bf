package localmode

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Options.MustExist refuses a data directory without state.db and creates
// nothing; without it Open creates the directory as before.
func TestOpenMustExist(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "missing")
	_, err := Open(Options{DataDir: missing, MustExist: true})
	var nd *NoDataError
	if !errors.As(err, &nd) || !nd.Missing || nd.Dir != missing {
		t.Fatalf("Open(missing, MustExist) = %v, want a NoDataError for a missing directory", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("MustExist created %s", missing)
	}
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{DataDir: empty, MustExist: true}); !errors.As(err, &nd) || nd.Missing {
		t.Fatalf("Open(empty, MustExist) = %v, want a NoDataError", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("MustExist wrote %v", ents)
	}
	rt, err := Open(Options{DataDir: empty})
	if err != nil {
		t.Fatal(err)
	}
	_ = rt.Close()
	rt, err = Open(Options{DataDir: empty, MustExist: true})
	if err != nil {
		t.Fatalf("Open(MustExist) after a creating Open: %v", err)
	}
	_ = rt.Close()
}
