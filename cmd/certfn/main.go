// Command certfn is certfn's CLI and local mode: it applies manifests,
// shows and explains resources, and (`certfn serve`) runs the worker and
// scheduler loops on an embedded SQLite state store and a file secret store
// under --data.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/core/validation"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

// run executes the CLI and returns the process exit code. Errors print one
// line on stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	t, std := &target{}, streams{in: stdin, out: stdout, err: stderr}
	root := newRoot(t, std)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	t.close()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "error: "+oneLine(err.Error()))
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func oneLine(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' {
			r = ';'
			out = append(out, r, ' ')
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// newRoot is certfn's root command: the flags every command shares bound
// to t, and the commands, each given what it uses.
func newRoot(t *target, std streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "certfn",
		Short: "cert-manager's certificate lifecycle without Kubernetes",
		Long: `certfn requests, approves, signs, stores and renews X.509 certificates declared as
cert-manager manifests (Issuer, ClusterIssuer, Certificate, CertificateRequest).

Local mode keeps state in <data>/state.db (SQLite) and keys and certificates in
<data>/secrets/<namespace>/<secretName>/{tls.crt,tls.key,ca.crt,...} (files 0600).
Run 'certfn serve' to process work; other commands may run from another terminal
against the same --data directory.

Remote mode: with --server URL (or CERTFN_SERVER) every verb but serve and
inspect works the same on certfn's HTTP API, authenticated as --auth says
(default from the URL): on AWS (the api function's Function URL) each request
is signed with SigV4 using the AWS SDK's default credentials; on Google Cloud
(the api service on Cloud Run, *.run.app) it carries a Google ID token from
Application Default Credentials (or --token); with --client-cert, a TLS client
certificate (serve --api-listen). The identity your credentials prove is yours
for the bindings. See docs/reference/api.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if msg := validation.NamespaceName(t.data.clusterNS); msg != "" {
				return fmt.Errorf("--cluster-resource-namespace (env CERTFN_CLUSTER_RESOURCE_NAMESPACE) %q: %s", t.data.clusterNS, msg)
			}
			return nil
		},
	}
	t.bind(root.PersistentFlags())
	root.AddCommand(newServe(&t.data, &t.remote, std), newApply(t, std), newDelete(t, std), newGet(t, std), newStatus(t, std),
		newRenew(t, std), newRevoke(t, std), newApprove(t, std, true), newApprove(t, std, false), newCertificateCmd(t, std),
		newInspect(t, std), newWait(t, std), newCreate(t, std), newVersion(std), newDescribe(t, std), newCheck(t, std), newKubeconfig(std))
	return root
}

// envList splits the comma-separated list in environment variable k.
func envList(k string) []string {
	var out []string
	for _, v := range strings.Split(os.Getenv(k), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
