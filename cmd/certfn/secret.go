package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/spf13/cobra"
)

// newCreate is `certfn create secret`, kubectl's `create secret generic`
// for the local secret store: CA key pairs for `ca` issuers, TSIG keys,
// EAB keys and keystore passwords. Values are never printed.
func newCreate(t *target, std streams) *cobra.Command {
	create := &cobra.Command{Use: "create", Short: "Create objects that are not manifests (secrets, CertificateSigningRequests from a key you keep)"}
	var ns string
	var files, literals []string
	var overwrite bool
	sec := &cobra.Command{
		Use:   "secret NAME (--from-file KEY=PATH | --from-literal KEY=VALUE)...",
		Short: "Store a secret in the local secret store (e.g. a CA key pair, a TSIG key, a keystore password)",
		Long: `Store a secret in the local secret store, as kubectl create secret generic does:

  certfn create secret my-ca -n cert-manager --from-file tls.crt=ca.pem --from-file tls.key=ca-key.pem
  certfn create secret tsig-secret -n cert-manager --from-literal secret=$TSIG_SECRET

ClusterIssuer secrets (CA key pairs, ACME account and EAB keys, TSIG keys) belong in the
cluster resource namespace (default cert-manager). Local only: on a cloud deployment use the
cloud's secret store. Needs system:masters (the local user, unless --as is given).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := t.remote.localOnly("create secret", "write the cloud secret store with the cloud's own tools"); err != nil {
				return err
			}
			if !hasGroup(t.as.caller(), app.SuperuserGroup) {
				return fmt.Errorf("%w: %s may not create secrets (local secrets need %s)", app.ErrForbidden, t.as.caller().Username, app.SuperuserGroup)
			}
			data := map[string][]byte{}
			for _, f := range files {
				k, path, ok := strings.Cut(f, "=")
				if !ok || k == "" || path == "" {
					return fmt.Errorf("--from-file %q: want KEY=PATH", f)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return fmt.Errorf("--from-file %s: %w", k, err)
				}
				data[k] = b
			}
			for _, l := range literals {
				k, v, ok := strings.Cut(l, "=")
				if !ok || k == "" {
					return fmt.Errorf("--from-literal: want KEY=VALUE (the value is not shown)")
				}
				data[k] = []byte(v)
			}
			if len(data) == 0 {
				return fmt.Errorf("give at least one --from-file or --from-literal")
			}
			lc, err := t.localClient(createsData) // a secret is often the first thing stored (a CA key pair)
			if err != nil {
				return err
			}
			s := ports.Secret{Namespace: ns, Name: args[0], Data: data}
			if err = lc.StoreSecret(cmd.Context(), s, overwrite); !overwrite && errors.Is(err, ports.ErrAlreadyExists) {
				return fmt.Errorf("secret %s/%s already exists (use --overwrite to replace it)", ns, args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(std.out, "secret %s/%s created with keys %s\n", ns, args[0], strings.Join(sortedKeys(data), ", "))
			return nil
		},
	}
	sec.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	sec.Flags().StringArrayVar(&files, "from-file", nil, "KEY=PATH: a key whose value is the file's content (repeatable)")
	sec.Flags().StringArrayVar(&literals, "from-literal", nil, "KEY=VALUE: a key with a literal value (repeatable)")
	sec.Flags().BoolVar(&overwrite, "overwrite", false, "replace an existing secret (the previous version is kept for rollback)")
	create.AddCommand(sec, newCreateCSR(t, std))
	return create
}

func hasGroup(c app.Caller, g string) bool {
	for _, x := range c.Groups {
		if x == g {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
