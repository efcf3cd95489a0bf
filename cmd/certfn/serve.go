package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/spf13/cobra"
)

func newServe(g *globals) *cobra.Command {
	var o localmode.ServeOptions
	var autoApprove, ctrlUser, selfCheckAddr string
	var ctrlGroups []string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the worker and scheduler loops on the local data directory",
		Long: `Run certfn's worker and scheduler loops until interrupted: requests are approved,
signed and stored, and certificates renewed on time. Commands run from another terminal
against the same --data directory are picked up within a second.

With --until-idle, process everything that is due and exit (for cron and CI).
Local only: on a cloud deployment the worker, signer and scheduler functions do
this work, so --server is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.localOnly("serve", "on a cloud deployment the worker, signer and scheduler functions process the work"); err != nil {
				return err
			}
			var signers []string
			for _, s := range strings.Split(autoApprove, ",") {
				if s = strings.TrimSpace(s); s != "" {
					signers = append(signers, s)
				}
			}
			opts := localmode.Options{DataDir: g.dataDir, ClusterResourceNamespace: g.clusterNS, AutoApprove: signers}
			if ctrlUser != "" {
				opts.Identity = engine.Identity{Username: ctrlUser, Groups: append([]string{"system:authenticated"}, ctrlGroups...)}
			}
			opts.ACME.HTTP01SelfCheckAddr = selfCheckAddr
			rt, err := localmode.Open(opts)
			if err != nil {
				return err
			}
			g.rt, g.closer = rt, func() { _ = rt.Close() }
			if !o.UntilIdle {
				fmt.Fprintf(g.stderr, "certfn serving data directory %s (workers %d); Ctrl-C to stop\n", g.dataDir, o.Workers)
			}
			return rt.Serve(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.UntilIdle, "until-idle", false, "process everything due, then exit")
	c.Flags().StringVar(&o.HTTP01Listen, "http01-listen", os.Getenv("CERTFN_HTTP01_LISTEN"),
		"serve ACME HTTP-01 challenges (GET /.well-known/acme-challenge/{token}) on this address, e.g. ':80' (env CERTFN_HTTP01_LISTEN)")
	c.Flags().StringVar(&selfCheckAddr, "http01-self-check-addr", os.Getenv("CERTFN_HTTP01_SELF_CHECK_ADDR"),
		"address the HTTP-01 self-check connects to instead of <name>:80 (e.g. when --http01-listen is not reachable on port 80 of the name) (env CERTFN_HTTP01_SELF_CHECK_ADDR)")
	c.Flags().IntVar(&o.Workers, "workers", 4, "parallel workers")
	c.Flags().DurationVar(&o.SweepInterval, "sweep-interval", 10*time.Second, "how often the scheduler looks for due work")
	c.Flags().StringVar(&autoApprove, "auto-approve", os.Getenv("CERTFN_AUTO_APPROVE"),
		"comma-separated signer names approved without a policy, e.g. 'issuers.cert-manager.io/*,clusterissuers.cert-manager.io/ca' (env CERTFN_AUTO_APPROVE)")
	c.Flags().StringVar(&ctrlUser, "controller-user", "", "requester identity recorded on the requests certfn creates for Certificates (default system:serviceaccount:cert-manager:cert-manager, as cert-manager); policies must be bound to it")
	c.Flags().StringSliceVar(&ctrlGroups, "controller-group", nil, "with --controller-user: its groups (repeatable)")
	return c
}
