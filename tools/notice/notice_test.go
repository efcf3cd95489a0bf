package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// NOTICE lists exactly the modules the binaries link now, with their
// licenses: a dependency added, removed or upgraded without
// `go run ./tools/notice` fails here.
func TestNoticeIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	want, err := render(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("NOTICE is not current: run go run ./tools/notice\nwant:\n%s", want)
	}
}
