package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/adapters/kubeapi"
)

// newKubeconfig is `certfn kubeconfig`: a kubeconfig for kubectl and
// client-go tools against `serve --api-listen` (the Kubernetes API of
// adapters/kubeapi), authenticating with a client certificate.
func newKubeconfig(std streams) *cobra.Command {
	var o kubeapi.KubeconfigOptions
	var out string
	c := &cobra.Command{
		Use:   "kubeconfig --server https://HOST:PORT --certificate-authority CA --client-certificate CRT --client-key KEY",
		Short: "Write a kubeconfig for kubectl against serve --api-listen",
		Long: "Writes a kubeconfig whose cluster is certfn's API (serve --api-listen) and whose user authenticates with\n" +
			"the client certificate and key given (CN = user, O = groups). Files are referenced by absolute path, not embedded.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, p := range []*string{&o.CAFile, &o.CertFile, &o.KeyFile} {
				if *p == "" {
					continue
				}
				abs, err := filepath.Abs(*p)
				if err != nil {
					return err
				}
				if _, err := os.Stat(abs); err != nil {
					return fmt.Errorf("kubeconfig: %w", err)
				}
				*p = abs
			}
			b, err := kubeapi.Kubeconfig(o)
			if err != nil {
				return fmt.Errorf("kubeconfig: --%w", err)
			}
			if out == "" || out == "-" {
				_, err = std.out.Write(b)
				return err
			}
			return os.WriteFile(out, b, 0o600)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Server, "server", "", "the API's URL, https://host:port (serve --api-listen)")
	f.StringVar(&o.CAFile, "certificate-authority", "", "CA bundle that verifies the API's server certificate")
	f.StringVar(&o.CertFile, "client-certificate", "", "client certificate (PEM; CN = user, O = groups)")
	f.StringVar(&o.KeyFile, "client-key", "", "the client certificate's key (PEM)")
	f.StringVar(&o.User, "user", "", "name of the kubeconfig's user entry (default certfn)")
	f.StringVar(&o.Namespace, "namespace", "", "the context's namespace (default default)")
	f.StringVar(&o.Name, "name", "", "name of the cluster and context (default certfn)")
	f.StringVarP(&out, "output", "o", "", "file to write (mode 0600; default: standard output)")
	return c
}
