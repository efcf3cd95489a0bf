package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// file is one regular file of an archive; a path ending in "/" is not
// allowed (directories are derived from the files' paths).
type file struct {
	path string
	mode int64
	data []byte
}

// tarGz is a gzipped tar of files and their parent directories (0755),
// sorted by name, owned by root (0/0), every entry's time mtime. The
// gzip header has no name and no time, so the same files give the same
// bytes.
func tarGz(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if err := writeTar(zw, files, mtime); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// entry is a tar entry: a directory when data is nil and the name ends
// in "/".
type entry struct {
	name string
	mode int64
	data []byte
}

// writeTar writes files and their parent directories to w as a tar
// (see tarGz); a file given twice is an error.
func writeTar(w io.Writer, files []file, mtime time.Time) error {
	var entries []entry
	seen := map[string]bool{}
	for _, f := range files {
		if f.path == "" || strings.HasSuffix(f.path, "/") || strings.HasPrefix(f.path, "/") {
			return fmt.Errorf("archive path %q: want a relative file path", f.path)
		}
		if seen[f.path] {
			return fmt.Errorf("archive path %q: given twice", f.path)
		}
		seen[f.path] = true
		entries = append(entries, entry{f.path, f.mode, f.data})
		for _, d := range parentDirs(f.path) {
			if !seen[d] {
				seen[d] = true
				entries = append(entries, entry{name: d, mode: 0o755})
			}
		}
	}
	// A parent sorts before its children: its name is their prefix.
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatGNU}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("tar entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("tar: %w", err)
	}
	return nil
}

// parentDirs lists p's parent directories with a trailing "/", outermost
// first ("./" included for a path starting with "./").
func parentDirs(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i+1])
		}
	}
	return out
}

// arMember is one member of an ar archive.
type arMember struct {
	name string // at most 16 bytes
	data []byte
}

// arArchive is an ar archive as dpkg reads .deb files: the "!<arch>"
// magic, then each member's 60-byte header (name, time mtime, owner 0/0,
// mode 100644, size) and data, padded to an even length with "\n".
func arArchive(members []arMember, mtime time.Time) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("!<arch>\n")
	for _, m := range members {
		if len(m.name) > 16 || m.name == "" || strings.ContainsAny(m.name, " /") {
			return nil, fmt.Errorf("ar member name %q: want 1 to 16 characters without spaces or slashes", m.name)
		}
		hdr := fmt.Sprintf("%-16s%-12d%-6d%-6d%-8o%-10d`\n", m.name, mtime.Unix(), 0, 0, 0o100644, len(m.data))
		if len(hdr) != 60 {
			return nil, fmt.Errorf("ar member %s: header of %d bytes, want 60", m.name, len(hdr))
		}
		b.WriteString(hdr)
		b.Write(m.data)
		if len(m.data)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}
