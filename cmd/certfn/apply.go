package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/spf13/cobra"
)

// readManifests reads each of paths in order — a FILE, every
// .yaml/.yml/.json file of a DIR (sorted), or stdin for "-" — and decodes
// all documents, as kubectl does with repeated -f. Nothing is applied
// unless every document decodes. Decoding warnings (a cluster-scoped
// object's namespace, ignored as the Kubernetes API server does) go to
// warn, prefixed "Warning: " and the input's name.
func readManifests(paths []string, stdin io.Reader, warn io.Writer) ([]api.Object, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("-f is required (a file, a directory or - for stdin; repeatable)")
	}
	var all []api.Object
	for _, p := range paths {
		objs, err := readManifestPath(p, stdin, warn)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}

// readManifestPath reads one -f argument (see readManifests).
func readManifestPath(path string, stdin io.Reader, warn io.Writer) ([]api.Object, error) {
	decode := func(name string, b []byte) ([]api.Object, error) {
		objs, warns, err := api.DecodeWarnings(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, w := range warns {
			fmt.Fprintf(warn, "Warning: %s: %s\n", name, w)
		}
		return objs, nil
	}
	var files []string
	if path == "-" {
		b, err := readManifest(stdin, "stdin")
		if err != nil {
			return nil, err
		}
		objs, err := decode("stdin", b)
		if err != nil {
			return nil, err
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
		objs, err := decode(f, b)
		if err != nil {
			return nil, err
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

func newApply(t *target, std streams) *cobra.Command {
	var files []string
	var ns, dryRun string
	c := &cobra.Command{
		Use:   "apply -f FILE|DIR|- [-f ...] [--dry-run]",
		Short: "Create or update resources from manifests (YAML or JSON, many documents per file)",
		Long: `Create or update resources from cert-manager manifests. Every document is decoded and
validated first; if any is invalid nothing is stored and each error names the file,
the document and the field. Fields cert-manager defines but certfn does not act on are
accepted and listed as ignored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := readManifests(files, std.in, std.err)
			if err != nil {
				return err
			}
			cl, err := t.client(cmd.Context(), createsData) // apply is how a data directory is first filled
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
			switch dryRun {
			case "none", "":
			case "client", "server":
				return printDryRun(std, cl, cmd.Context(), objs)
			default:
				return fmt.Errorf("--dry-run=%q: want none, client or server", dryRun)
			}
			// On a failure part-way (a lost race, a store error) what was
			// applied before it is still reported.
			results, err := cl.Apply(cmd.Context(), objs)
			for _, res := range results {
				fmt.Fprintf(std.out, "%s %s\n", displayKey(res.Key), httpapi.Action(res))
				if len(res.Ignored) > 0 {
					fmt.Fprintf(std.out, "  ignored (accepted, not acted on by certfn): %s\n", strings.Join(res.Ignored, ", "))
				}
			}
			return err
		},
	}
	c.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory or - (stdin); repeatable, applied in order")
	c.Flags().StringVarP(&ns, "namespace", "n", "", "override the namespace of namespaced resources")
	c.Flags().StringVar(&dryRun, "dry-run", "none",
		"client or server (the same here): make every check (permissions, validation, quotas), store nothing, and say what the "+
			"CertificateRequestPolicies would decide about each Certificate's request; --dry-run alone means server")
	c.Flags().Lookup("dry-run").NoOptDefVal = "server"
	return c
}

// printDryRun prints what apply would do with objs, and the policies'
// verdict on each request, writing nothing.
func printDryRun(std streams, cl client, ctx context.Context, objs []api.Object) error {
	res, err := cl.DryRun(ctx, objs)
	if err != nil {
		return err
	}
	for _, r := range res {
		fmt.Fprintf(std.out, "%s %s (dry run)\n", displayKey(r.Key), r.Action)
		if len(r.Ignored) > 0 {
			fmt.Fprintf(std.out, "  ignored (accepted, not acted on by certfn): %s\n", strings.Join(r.Ignored, ", "))
		}
		if a := r.Approval; a != nil {
			switch a.Result {
			case "Approved":
				fmt.Fprintf(std.out, "  request: would be approved by CertificateRequestPolicy %q\n", a.Policy)
			case "Denied":
				fmt.Fprintf(std.out, "  request: would be denied: %s\n", a.Message)
			default:
				fmt.Fprintf(std.out, "  request: no CertificateRequestPolicy applies (%s): it waits under --approver policy, "+
					"and is approved by the built-in approver (--approver cert-manager, the local default) or an auto-approve list\n", a.Message)
			}
		}
	}
	return nil
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

func newDelete(t *target, std streams) *cobra.Command {
	var files []string
	var ns, labels, fieldSel, dryRun string
	c := &cobra.Command{
		Use:   "delete (KIND NAME [NAME...] | KIND/NAME... | KIND -l SELECTOR | -f FILE [-f ...])",
		Short: "Delete resources (and what they own); issued secrets are kept",
		Long: `Delete resources and what they own, as kubectl delete does: several names of one kind,
KIND/NAME pairs, the objects of KIND that -l (labels) and --field-selector select (the server
selects; nothing selected deletes nothing), or the objects named in manifests (-f,
repeatable). A name that is not found is reported and the others are still deleted; the
exit status is then 1. --dry-run=server makes every check on the server and deletes nothing;
--dry-run=client only reads the objects.
A Certificate's issued secret is kept (cert-manager's default); "delete secret NAME"
removes a secret from the secret store.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts app.DeleteOptions
			switch dryRun {
			case "none":
			case "server":
				opts.DryRun = true
			case "client":
			default:
				return fmt.Errorf("--dry-run %q: want none, server or client", dryRun)
			}
			sel := app.ListOptions{LabelSelector: labels, FieldSelector: fieldSel}
			var keys []api.Key
			// preconditions of selected objects: the uid listed, so an
			// object re-created meanwhile under the name is not deleted.
			uids := map[api.Key]string{}
			switch {
			case sel != (app.ListOptions{}):
				if len(files) > 0 || len(args) != 1 || strings.Contains(args[0], "/") {
					return fmt.Errorf("-l/--selector and --field-selector take one KIND and no names or -f")
				}
				info, ok := api.KindForName(args[0])
				if !ok {
					return fmt.Errorf("unknown resource type %q", args[0])
				}
				cl, err := t.client(cmd.Context(), readsData)
				if err != nil {
					return err
				}
				listNS := ns
				if !info.Namespaced {
					listNS = ""
				}
				objs, err := cl.List(cmd.Context(), info.Kind, listNS, sel)
				if err != nil {
					return err
				}
				for _, o := range objs {
					k := api.KeyOf(o)
					keys = append(keys, k)
					uids[k] = o.GetObjectMeta().UID
				}
				if len(keys) == 0 {
					fmt.Fprintln(std.err, "No resources found")
					return nil
				}
			case len(files) > 0:
				if len(args) > 0 {
					return fmt.Errorf("give either -f or names, not both")
				}
				objs, err := readManifests(files, std.in, std.err)
				if err != nil {
					return err
				}
				for _, o := range objs {
					keys = append(keys, api.KeyOf(o))
				}
			case len(args) >= 1 && strings.Contains(args[0], "/"):
				for _, a := range args {
					kind, name, ok := strings.Cut(a, "/")
					if !ok || kind == "" || name == "" {
						return fmt.Errorf("%q: want KIND/NAME (every argument, once the first is KIND/NAME)", a)
					}
					k, _, err := resolveKey(kind, name, ns)
					if err != nil {
						return err
					}
					keys = append(keys, k)
				}
			case len(args) >= 2:
				for _, name := range args[1:] {
					k, _, err := resolveKey(args[0], name, ns)
					if err != nil {
						return err
					}
					keys = append(keys, k)
				}
			default:
				return fmt.Errorf("want KIND NAME [NAME...], KIND/NAME... or -f FILE")
			}
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			suffix := ""
			if dryRun != "none" {
				suffix = " (" + dryRun + " dry run)"
			}
			var failed []error
			for _, k := range keys {
				o := opts
				if uid := uids[k]; uid != "" {
					o.Preconditions.UID = &uid
				}
				var err error
				if dryRun == "client" {
					_, err = cl.Get(cmd.Context(), k)
				} else {
					err = cl.Delete(cmd.Context(), k, o)
				}
				if err != nil {
					if !errors.Is(err, ports.ErrNotFound) {
						return err
					}
					failed = append(failed, notFound(k, err))
					continue
				}
				fmt.Fprintf(std.out, "%s deleted%s\n", displayKey(k), suffix)
			}
			if len(failed) > 0 {
				return errors.Join(failed...)
			}
			return nil
		},
	}
	c.Flags().StringArrayVarP(&files, "filename", "f", nil, "delete the resources named in these manifests (repeatable)")
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().StringVarP(&labels, "selector", "l", "", "delete the objects of KIND these labels select, e.g. 'app=web'")
	c.Flags().StringVar(&fieldSel, "field-selector", "", "delete the objects of KIND this selects (metadata.name, metadata.namespace)")
	c.Flags().StringVar(&dryRun, "dry-run", "none", "none, server (every check on the server, nothing deleted) or client (read only)")
	return c
}
