package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/internal/localmode"
)

// newCheck is `certfn check`: whether the data directory is sane (it holds
// certfn data, its files have safe permissions, the state opens) and a
// `certfn serve` runs on it, then what it holds. Exit status 0 when both
// hold, 1 otherwise (for monitoring); Certificates that are not Ready are
// listed but do not fail the check (`certfn get certificates` tells more).
func newCheck(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Check the data directory and that a certfn serve runs on it (exit 1 if not)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.localOnly("check", "a cloud deployment has no data directory; its functions are monitored by the cloud's alarms"); err != nil {
				return err
			}
			rt, err := g.runtime() // refuses a missing, empty or unsafe data directory
			if err != nil {
				return exitError{code: 1, err: fmt.Errorf("data directory %s: %w", g.dataDir, err)}
			}
			fmt.Fprintf(g.stdout, "data directory %s: ok\n", g.dataDir)
			pid, running, err := localmode.ServeRunning(g.dataDir)
			switch {
			case err != nil:
				fmt.Fprintf(g.stdout, "serve: unknown: %v\n", err)
			case running:
				fmt.Fprintf(g.stdout, "serve: running (PID %s)\n", pid)
			default:
				fmt.Fprintf(g.stdout, "serve: not running: nothing is issued or renewed until one runs (certfn serve)\n")
			}
			for _, kind := range []string{api.KindClusterIssuer, api.KindIssuer, api.KindCertificate} {
				info, _ := api.KindInfoFor(kind)
				objs, err := rt.Repo.List(cmd.Context(), kind, "")
				if err != nil {
					return exitError{code: 1, err: fmt.Errorf("read %s: %w", info.Plural, err)}
				}
				ready := 0
				var notReady []string
				for _, o := range objs {
					if api.IsTrue(conditionsOf(o), "Ready") {
						ready++
						continue
					}
					m := o.GetObjectMeta()
					name := m.Name
					if m.Namespace != "" {
						name = m.Namespace + "/" + name
					}
					notReady = append(notReady, name+": "+orNone(condMessage(conditionsOf(o), "Ready")))
				}
				fmt.Fprintf(g.stdout, "%s: %d (%d ready)\n", info.Plural, len(objs), ready)
				for _, n := range notReady {
					fmt.Fprintf(g.stdout, "  not ready: %s\n", n)
				}
			}
			if !running {
				return exitError{code: 1, err: fmt.Errorf("no certfn serve is running on %s", g.dataDir)}
			}
			return nil
		},
	}
}

func orNone(s string) string {
	if s == "" {
		return "no condition yet"
	}
	return s
}
