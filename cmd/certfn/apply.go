package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/spf13/cobra"
)

// readManifests reads FILE, every .yaml/.yml/.json file of DIR (sorted), or
// stdin for "-", and decodes all documents. Nothing is applied unless every
// document decodes.
func readManifests(path string, stdin io.Reader) ([]api.Object, error) {
	var files []string
	if path == "-" {
		b, err := readManifest(stdin, "stdin")
		if err != nil {
			return nil, err
		}
		objs, err := api.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("stdin: %w", err)
		}
		if len(objs) == 0 {
			return nil, fmt.Errorf("stdin: no resources found")
		}
		return objs, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(files)
	} else {
		files = []string{path}
	}
	var all []api.Object
	for _, f := range files {
		b, err := readManifestFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := api.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, objs...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s: no resources found", path)
	}
	return all, nil
}

// readManifest reads r whole, refusing more than api.MaxManifestSize bytes
// (rather than decoding a truncated input).
func readManifest(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, api.MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > api.MaxManifestSize {
		return nil, fmt.Errorf("%s: larger than %d bytes (8 MiB), the most one apply reads; split it into several files", name, api.MaxManifestSize)
	}
	return b, nil
}

func readManifestFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > api.MaxManifestSize {
		return nil, fmt.Errorf("%s: %d bytes, larger than %d bytes (8 MiB), the most one apply reads; split it into several files", name, fi.Size(), api.MaxManifestSize)
	}
	return readManifest(f, name)
}

func newApply(g *globals) *cobra.Command {
	var file, ns string
	c := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update resources from manifests (YAML or JSON, many documents per file)",
		Long: `Create or update resources from cert-manager manifests. Every document is decoded and
validated first; if any is invalid nothing is stored and each error names the file,
the document and the field. Fields cert-manager defines but certfn does not act on are
accepted and listed as ignored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("-f is required (a file, a directory or - for stdin)")
			}
			objs, err := readManifests(file, g.stdin)
			if err != nil {
				return err
			}
			g.mayCreate = true // apply is how a data directory is first filled
			cl, err := g.client(cmd.Context())
			if err != nil {
				return err
			}
			if ns != "" {
				for _, o := range objs {
					if info, _ := api.KindInfoFor(o.GetTypeMeta().Kind); info.Namespaced {
						o.GetObjectMeta().Namespace = ns
					}
				}
			}
			// On a failure part-way (a lost race, a store error) what was
			// applied before it is still reported.
			results, err := cl.Apply(cmd.Context(), objs)
			for _, res := range results {
				fmt.Fprintf(g.stdout, "%s %s\n", displayKey(res.Key), httpapi.Action(res))
				if len(res.Ignored) > 0 {
					fmt.Fprintf(g.stdout, "  ignored (accepted, not acted on by certfn): %s\n", strings.Join(res.Ignored, ", "))
				}
			}
			return err
		},
	}
	c.Flags().StringVarP(&file, "filename", "f", "", "file, directory or - (stdin)")
	c.Flags().StringVarP(&ns, "namespace", "n", "", "override the namespace of namespaced resources")
	return c
}

// notFound rewrites a not-found error as "<kind>/<name> (<ns>) not found".
func notFound(k api.Key, err error) error {
	if errors.Is(err, ports.ErrNotFound) {
		return fmt.Errorf("%s not found", displayKey(k))
	}
	return err
}

// displayKey renders a key kubectl-style: certificate.cert-manager.io/web (ns).
func displayKey(k api.Key) string {
	info, _ := api.KindInfoFor(k.Kind)
	group := info.APIVersion
	if i := strings.Index(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	s := strings.ToLower(k.Kind)
	if group != "" {
		s += "." + group
	}
	s += "/" + k.Name
	if k.Namespace != "" {
		s += " (" + k.Namespace + ")"
	}
	return s
}

func newDelete(g *globals) *cobra.Command {
	var file, ns string
	c := &cobra.Command{
		Use:   "delete (KIND NAME | -f FILE)",
		Short: "Delete resources (and what they own); issued secrets are kept",
		RunE: func(cmd *cobra.Command, args []string) error {
			var keys []api.Key
			switch {
			case file != "":
				objs, err := readManifests(file, g.stdin)
				if err != nil {
					return err
				}
				for _, o := range objs {
					keys = append(keys, api.KeyOf(o))
				}
			case len(args) == 2:
				k, _, err := resolveKey(args[0], args[1], ns)
				if err != nil {
					return err
				}
				keys = append(keys, k)
			default:
				return fmt.Errorf("want KIND NAME or -f FILE")
			}
			cl, err := g.client(cmd.Context())
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := cl.Delete(cmd.Context(), k); err != nil {
					return notFound(k, err)
				}
				fmt.Fprintf(g.stdout, "%s deleted\n", displayKey(k))
			}
			return nil
		},
	}
	c.Flags().StringVarP(&file, "filename", "f", "", "delete the resources named in these manifests")
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	return c
}
