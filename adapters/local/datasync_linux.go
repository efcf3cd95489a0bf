package local

import (
	"os"
	"syscall"
)

// dataSync flushes f's data and the metadata needed to read it back (its
// size), not its timestamps: fdatasync(2). Rewriting a WAL that SQLite
// reuses after a checkpoint then needs no file system journal commit.
func dataSync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
