// Package zipper writes Lambda deployment zips: a single executable entry
// named "bootstrap" (what the provided.al2023 runtime starts), deflated,
// with mode 0755 and a fixed timestamp so the output depends only on the
// binary's bytes.
package zipper

import (
	"archive/zip"
	"compress/flate"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// EntryName is the file the provided runtimes execute.
const EntryName = "bootstrap"

// fixedTime is every entry's modification time (reproducible zips).
var fixedTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Write writes a zip holding bin's content as an executable "bootstrap".
func Write(w io.Writer, bin io.Reader) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestCompression)
	})
	h := &zip.FileHeader{Name: EntryName, Method: zip.Deflate, Modified: fixedTime}
	h.SetMode(0o755)
	fw, err := zw.CreateHeader(h)
	if err != nil {
		return fmt.Errorf("zip entry %s: %w", EntryName, err)
	}
	if _, err := io.Copy(fw, bin); err != nil {
		return fmt.Errorf("zip entry %s: %w", EntryName, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("finish zip: %w", err)
	}
	return nil
}

// WriteFile zips the binary at binPath into outPath (created or replaced
// atomically, parent directories included).
func WriteFile(outPath, binPath string) error {
	bin, err := os.Open(binPath)
	if err != nil {
		return fmt.Errorf("open binary: %w", err)
	}
	defer bin.Close() //nolint:errcheck
	if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(outPath), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(outPath), ".lambdazip-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", outPath, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck
	if err := Write(tmp, bin); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("%s: %w", outPath, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", outPath, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", outPath, err)
	}
	if err := os.Rename(tmp.Name(), outPath); err != nil {
		return fmt.Errorf("write %s: %w", outPath, err)
	}
	return nil
}
