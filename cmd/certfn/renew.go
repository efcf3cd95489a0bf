package main

import (
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/spf13/cobra"
)

func newRenew(g *globals) *cobra.Command {
	var ns string
	var all, allNS bool
	c := &cobra.Command{
		Use:   "renew (NAME | --all)",
		Short: "Force re-issuance by setting the Issuing condition (as cmctl renew)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) || len(args) > 1 {
				return fmt.Errorf("give one certificate NAME or --all")
			}
			cl, err := g.client(cmd.Context())
			if err != nil {
				return err
			}
			var keys []api.Key
			if all {
				listNS := ns
				if allNS {
					listNS = ""
				}
				objs, err := cl.List(cmd.Context(), api.KindCertificate, listNS)
				if err != nil {
					return err
				}
				for _, o := range objs {
					keys = append(keys, api.KeyOf(o))
				}
			} else {
				keys = []api.Key{{Kind: api.KindCertificate, Namespace: ns, Name: args[0]}}
			}
			for _, k := range keys {
				if err := cl.Renew(cmd.Context(), k); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "Manually triggered issuance of %s\n", displayKey(k))
			}
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().BoolVar(&all, "all", false, "renew every certificate in the namespace")
	c.Flags().BoolVarP(&allNS, "all-namespaces", "A", false, "with --all: in every namespace")
	return c
}

func newApprove(g *globals, approve bool) *cobra.Command {
	var ns, reason, message string
	verb, done, short := "deny", "denied", "Deny a CertificateRequest (permanent)"
	if approve {
		verb, done, short = "approve", "approved", "Approve a CertificateRequest (permanent)"
	}
	c := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client(cmd.Context())
			if err != nil {
				return err
			}
			k := api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: args[0]}
			if err := cl.Approve(cmd.Context(), k, approve, reason, message); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s %s\n", displayKey(k), done)
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().StringVar(&reason, "reason", "KubectlCertManager", "reason recorded on the condition")
	c.Flags().StringVar(&message, "message", "", "message recorded on the condition (default \"manually "+done+" by <your identity>\")")
	return c
}
