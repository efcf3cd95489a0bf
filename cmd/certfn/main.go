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

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/validation"
	"github.com/certfn/certfn/internal/apiclient"
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
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if g.closer != nil {
		g.closer()
	}
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

func newRoot(g *globals) *cobra.Command {
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
for the bindings. See docs/api.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if msg := validation.NamespaceName(g.clusterNS); msg != "" {
				return fmt.Errorf("--cluster-resource-namespace (env CERTFN_CLUSTER_RESOURCE_NAMESPACE) %q: %s", g.clusterNS, msg)
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data", envOr("CERTFN_DATA", defaultDataDir()), dataDirHelp)
	root.PersistentFlags().StringVar(&g.clusterNS, "cluster-resource-namespace", envOr("CERTFN_CLUSTER_RESOURCE_NAMESPACE", api.DefaultClusterResourceNamespace),
		"namespace holding ClusterIssuer secrets (env CERTFN_CLUSTER_RESOURCE_NAMESPACE)")
	g.flags = root.PersistentFlags()
	root.PersistentFlags().IntVar(&g.quotas.ObjectsPerNamespace, flagQuotaObjects, g.envQuota(flagQuotaObjects, envQuotaObjects),
		"local mode: the most Certificates, CertificateRequests, Issuers, Roles and RoleBindings one namespace may hold; an apply that would create more is refused; "+
			"0: unlimited (env "+envQuotaObjects+"; with --server the deployment's quota applies)")
	root.PersistentFlags().IntVar(&g.quotas.IssuancesPerHourPerNamespace, flagQuotaIssuances, g.envQuota(flagQuotaIssuances, envQuotaIssuances),
		"local mode: the most certificates signed per namespace in any rolling hour; further requests wait (Pending) until the oldest issuance is an hour old; "+
			"0: unlimited (env "+envQuotaIssuances+")")
	root.PersistentFlags().StringVar(&g.as, "as", "", "act as this identity (a user name, an IAM ARN, system:serviceaccount:NS:NAME); permissions then come from the bindings")
	root.PersistentFlags().StringSliceVar(&g.asGroups, "as-group", nil, "with --as: groups of that identity (repeatable)")
	root.PersistentFlags().StringVar(&g.server, "server", os.Getenv("CERTFN_SERVER"),
		"remote mode: certfn's HTTP API base URL, e.g. https://<url-id>.lambda-url.<region>.on.aws or https://<service>-<hash>-<region>.a.run.app (env CERTFN_SERVER)")
	root.PersistentFlags().StringVar(&g.auth, "auth", os.Getenv("CERTFN_AUTH"),
		"with --server: how to authenticate: "+strings.Join(apiclient.AuthModes, ", ")+" (env CERTFN_AUTH); default: client-cert with --client-cert/--client-key, "+
			"google-id-token with --token/--audience or a *.run.app URL, aws-sigv4 for a *.lambda-url.<region>.on.aws URL, client-cert with --server-ca, else aws-sigv4")
	root.PersistentFlags().StringVar(&g.audience, "audience", os.Getenv("CERTFN_AUDIENCE"),
		"with --auth google-id-token: the ID token's audience, as the api's CERTFN_API_AUDIENCE (env CERTFN_AUDIENCE; default https://<server host>)")
	root.PersistentFlags().StringVar(&g.token, "token", "",
		"with --auth google-id-token: send this Google ID token instead of one from Application Default Credentials, e.g. "+
			"\"$(gcloud auth print-identity-token --impersonate-service-account=SA --audiences=URL --include-email)\" (env CERTFN_TOKEN, which other users cannot see in the process list)")
	root.PersistentFlags().StringVar(&g.clientCert, "client-cert", os.Getenv("CERTFN_CLIENT_CERT"),
		"with --server: authenticate with this TLS client certificate (PEM), for 'certfn serve --api-listen' (env CERTFN_CLIENT_CERT)")
	root.PersistentFlags().StringVar(&g.clientKey, "client-key", os.Getenv("CERTFN_CLIENT_KEY"), "with --client-cert: its private key (PEM) (env CERTFN_CLIENT_KEY)")
	root.PersistentFlags().StringVar(&g.serverCA, "server-ca", os.Getenv("CERTFN_SERVER_CA"), "with --server: CA certificates (PEM) the server's certificate must chain to (env CERTFN_SERVER_CA)")
	root.PersistentFlags().StringVar(&g.region, "region", "",
		"with --auth aws-sigv4: AWS region to sign for (default: the Function URL's region, else AWS_REGION or the profile's)")
	root.AddCommand(newServe(g), newApply(g), newDelete(g), newGet(g), newStatus(g), newRenew(g), newRevoke(g),
		newApprove(g, true), newApprove(g, false), newCertificateCmd(g), newInspect(g), newWait(g), newCreate(g), newVersion(g), newDescribe(g), newCheck(g))
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
