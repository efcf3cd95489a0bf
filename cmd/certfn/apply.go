package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/spf13/cobra"
)

// readManifests reads FILE, every .yaml/.yml/.json file of DIR (sorted), or
// stdin for "-", and decodes all documents. Nothing is applied unless every
// document decodes.
func readManifests(path string, stdin io.Reader) ([]api.Object, error) {
	var files []string
	if path == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, 8<<20))
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
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
		b, err := os.ReadFile(f)
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
			rt, err := g.runtime()
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
			if err := rt.Engine.ValidateAll(objs); err != nil {
				return err
			}
			for _, o := range objs {
				verb := "create"
				if _, err := rt.Engine.Get(cmd.Context(), api.KeyOf(o)); err == nil {
					verb = "update"
				}
				if err := rt.Engine.Authorize(cmd.Context(), g.caller(), verb, api.KeyOf(o)); err != nil {
					return err
				}
			}
			for _, o := range objs {
				res, err := rt.Engine.Apply(cmd.Context(), o, g.caller())
				if err != nil {
					return err
				}
				verb := "unchanged"
				switch {
				case res.Created:
					verb = "created"
				case res.Changed:
					verb = "configured"
				}
				fmt.Fprintf(g.stdout, "%s %s\n", displayKey(res.Key), verb)
				if len(res.Ignored) > 0 {
					fmt.Fprintf(g.stdout, "  ignored (accepted, not acted on by certfn): %s\n", strings.Join(res.Ignored, ", "))
				}
			}
			return nil
		},
	}
	c.Flags().StringVarP(&file, "filename", "f", "", "file, directory or - (stdin)")
	c.Flags().StringVarP(&ns, "namespace", "n", "", "override the namespace of namespaced resources")
	return c
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
			rt, err := g.runtime()
			if err != nil {
				return err
			}
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
			for _, k := range keys {
				if _, err := rt.Engine.Get(cmd.Context(), k); err != nil {
					return fmt.Errorf("%s not found", displayKey(k))
				}
				if err := rt.Engine.Authorize(cmd.Context(), g.caller(), "delete", k); err != nil {
					return err
				}
				if err := rt.Engine.Delete(cmd.Context(), k); err != nil {
					return err
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
