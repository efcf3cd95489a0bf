package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

func newRenew(t *target, std streams) *cobra.Command {
	var ns string
	var all, allNS bool
	c := &cobra.Command{
		Use:   "renew (NAME | --all)",
		Short: "Force re-issuance by setting the Issuing condition (as cmctl renew)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) || len(args) > 1 {
				return fmt.Errorf("give one certificate NAME or --all")
			}
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			var keys []api.Key
			if all {
				listNS := ns
				if allNS {
					listNS = ""
				}
				objs, err := cl.List(cmd.Context(), api.KindCertificate, listNS, app.ListOptions{})
				if err != nil {
					return err
				}
				for _, o := range objs {
					keys = append(keys, api.KeyOf(o))
				}
			} else {
				keys = []api.Key{{Kind: api.KindCertificate, Namespace: ns, Name: args[0]}}
			}
			// A Certificate already being issued is not triggered again:
			// its issuance in flight is woken to run now instead (a step
			// that waits on a lost wake-up goes on at once). With --all,
			// any failure is reported and makes the command fail at the end.
			failed := 0
			for _, k := range keys {
				res, err := cl.Renew(cmd.Context(), k)
				switch {
				case err == nil && res.InFlight:
					fmt.Fprintf(std.out, "%s is already being issued: woke %s to run now\n", displayKey(k), strings.Join(res.Woken, ", "))
				case err == nil:
					fmt.Fprintf(std.out, "Manually triggered issuance of %s\n", displayKey(k))
				case !all:
					return err
				default:
					failed++
					fmt.Fprintf(std.err, "error: %s: %v\n", displayKey(k), err)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d certificates could not be renewed", failed, len(keys))
			}
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().BoolVar(&all, "all", false, "renew every certificate in the namespace")
	c.Flags().BoolVarP(&allNS, "all-namespaces", "A", false, "with --all: in every namespace")
	return c
}

func newApprove(t *target, std streams, approve bool) *cobra.Command {
	var ns, reason, message, version string
	verb, done, short := "deny", "denied", "Deny a CertificateRequest (permanent)"
	if approve {
		verb, done, short = "approve", "approved", "Approve a CertificateRequest (permanent)"
	}
	c := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			k := api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: args[0]}
			if err := decideOn(cmd.Context(), cl, k, approve, reason, message, version); err != nil {
				return err
			}
			fmt.Fprintf(std.out, "%s %s\n", displayKey(k), done)
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().StringVar(&version, "resource-version", "", resourceVersionUsage)
	c.Flags().StringVar(&reason, "reason", "KubectlCertManager", "reason recorded on the condition")
	c.Flags().StringVar(&message, "message", "", "message recorded on the condition (default \"manually "+done+" by <your identity>\")")
	return c
}

func newRevoke(t *target, std streams) *cobra.Command {
	var ns, reason string
	c := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a Certificate's current certificate at its ACME CA, then re-issue it",
		Long: `Revoke the certificate stored in the Certificate's secret at the ACME server of its
issuer (RFC 8555, signed with the issuer's account key), then trigger a re-issuance as
'certfn renew' does; with rotationPolicy Always (the default) the new certificate has a
new key. Needs 'update' on the Certificate. ACME issuers only. Local only.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := t.remote.localOnly("revoke", "the HTTP API has no revocation route yet"); err != nil {
				return err
			}
			lc, err := t.localClient(readsData)
			if err != nil {
				return err
			}
			key := api.Key{Kind: api.KindCertificate, Namespace: ns, Name: args[0]}
			if err := lc.Revoke(cmd.Context(), key, reason); err != nil {
				return err
			}
			if note := t.noServeNote(); note != "" {
				fmt.Fprintf(std.out, "Revoked the certificate of %s (reason %s); it is not Ready, and its replacement waits: %s\n", displayKey(key), reason, note)
				return nil
			}
			fmt.Fprintf(std.out, "Revoked the certificate of %s (reason %s); a new one is being issued\n", displayKey(key), reason)
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().StringVar(&reason, "reason", "unspecified", "RFC 5280 reason: "+strings.Join(app.ReasonNames(), ", ")+" (any case: certbot's keycompromise too)")
	return c
}

// resourceVersionUsage is the help of the approval commands' --resource-version.
const resourceVersionUsage = "decide only if the request is still at this metadata.resourceVersion (the one you reviewed); " +
	"default: the version read just before deciding"

// decideOn records a decision on the request at key, conditional on its
// resourceVersion: version (--resource-version, the one the user
// reviewed) or, when empty, the version read here, so that the decision
// applies exactly to the request as it was read and a request changed
// meanwhile is refused (409) rather than decided unseen.
func decideOn(ctx context.Context, cl client, key api.Key, approve bool, reason, message, version string) error {
	if version == "" {
		o, err := cl.Get(ctx, key)
		if err != nil {
			return err
		}
		version = o.GetObjectMeta().ResourceVersion
	}
	return cl.Approve(ctx, key, approve, reason, message, version)
}
