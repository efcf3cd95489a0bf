package main

import (
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/spf13/cobra"
)

func newStatus(t *target, std streams) *cobra.Command {
	var ns string
	c := &cobra.Command{
		Use:   "status certificate NAME",
		Short: "Explain a Certificate: the whole chain (Certificate → CertificateRequest → issuer → ACME Order → Challenges) with reasons",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if info, ok := api.KindForName(args[0]); !ok || info.Kind != api.KindCertificate {
				return fmt.Errorf("status supports only: certificate")
			}
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			key := api.Key{Kind: api.KindCertificate, Namespace: ns, Name: args[1]}
			rep, err := cl.Status(cmd.Context(), key)
			if err != nil {
				return notFound(key, err)
			}
			if err := rep.Render(std.out); err != nil {
				return err
			}
			if note := t.noServeNote(); note != "" && !api.IsTrue(rep.Certificate.Status.Conditions, api.CertificateConditionReady) {
				fmt.Fprintf(std.out, "\nNote: %s\n", note)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	return c
}
