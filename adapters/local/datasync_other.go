//go:build !linux

package local

import "os"

// dataSync is f.Sync where fdatasync(2) is not available.
func dataSync(f *os.File) error { return f.Sync() }
