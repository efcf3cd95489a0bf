// Command ociimage writes certfn's Cloud Run container image without
// Docker: a scratch image holding one static binary as its entrypoint and
// the system's CA bundle, as an OCI image tarball (`docker load`, `crane
// push`, `gcloud artifacts docker images ...` take it). The image is
// reproducible: file times are zero and the config has no creation time.
//
//	go run ./tools/ociimage -o dist/gcp/certfn.tar -binary dist/gcp/certfn -ref certfn:latest
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	out := flag.String("o", "", "output image tarball (required)")
	bin := flag.String("binary", "", "static linux binary, installed as /certfn and the entrypoint (required)")
	ref := flag.String("ref", "certfn:latest", "image reference recorded in the tarball")
	arch := flag.String("arch", "amd64", "image architecture (amd64 or arm64)")
	cas := flag.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle installed as /etc/ssl/certs/ca-certificates.crt")
	flag.Parse()
	if err := build(*out, *bin, *ref, *arch, *cas); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func build(out, bin, ref, arch, cas string) error {
	if out == "" || bin == "" {
		return errors.New("-o and -binary are required")
	}
	if arch != "amd64" && arch != "arm64" {
		return fmt.Errorf("-arch %q: want amd64 or arm64", arch)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("-ref %q: %w", ref, err)
	}
	binData, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	caData, err := os.ReadFile(cas)
	if err != nil {
		return fmt.Errorf("-ca-bundle: %w", err)
	}
	layer, err := tarLayer([]file{{"etc/ssl/certs/ca-certificates.crt", 0o644, caData}, {"certfn", 0o755, binData}})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.Entrypoint = []string{"/certfn"}
	cfg.Config.User = "65532:65532"
	cfg.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

type file struct {
	path string
	mode int64
	data []byte
}

// tarLayer is one uncompressed-then-gzipped layer of files with zero times.
func tarLayer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := parentDirs(f.path); len(d) > 0; d = d[1:] {
			if !dirs[d[0]] {
				dirs[d[0]] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[0] + "/", Mode: 0o755}); err != nil {
					return nil, err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// parentDirs lists p's parent directories, outermost first.
func parentDirs(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}
