package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/spf13/cobra"
)

func newStatus(g *globals) *cobra.Command {
	var ns string
	c := &cobra.Command{
		Use:   "status certificate NAME",
		Short: "Explain a Certificate: the whole chain (Certificate → CertificateRequest → issuer) with reasons",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if info, ok := api.KindForName(args[0]); !ok || info.Kind != api.KindCertificate {
				return fmt.Errorf("status supports only: certificate")
			}
			rt, err := g.runtime()
			if err != nil {
				return err
			}
			return printStatus(cmd.Context(), g.stdout, rt, api.Key{Kind: api.KindCertificate, Namespace: ns, Name: args[1]})
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	return c
}

// Summary returns the one-line reason a certificate is (not) ready, built
// from the whole chain; the first line of `certfn status`.
func summary(c *api.Certificate, cr *api.CertificateRequest, iss api.GenericIssuer, issErr string) string {
	conds := c.Status.Conditions
	if api.IsTrue(conds, "Ready") && !api.IsTrue(conds, "Issuing") {
		return "Ready: " + condMessage(conds, "Ready")
	}
	if issErr != "" {
		return "Not ready: " + issErr
	}
	if iss != nil && !api.IsTrue(iss.GetStatus().Conditions, "Ready") {
		return fmt.Sprintf("Not ready: issuer %q is not ready: %s", iss.GetObjectMeta().Name, condMessage(iss.GetStatus().Conditions, "Ready"))
	}
	if ic := api.FindCondition(conds, "Issuing"); ic != nil && ic.Status == api.ConditionFalse && ic.Reason == "Failed" {
		return "Not ready: " + ic.Message
	}
	if cr != nil {
		if d := api.FindCondition(cr.Status.Conditions, "Denied"); d != nil {
			return fmt.Sprintf("Not ready: request %s denied: %s", cr.Name, d.Message)
		}
		if m := condMessage(cr.Status.Conditions, "Ready"); m != "" && !api.IsTrue(cr.Status.Conditions, "Ready") {
			return fmt.Sprintf("Not ready: request %s: %s", cr.Name, m)
		}
	}
	if api.IsTrue(conds, "Issuing") {
		return "Issuing: " + condMessage(conds, "Issuing")
	}
	return "Not ready: " + condMessage(conds, "Ready")
}

func printStatus(ctx context.Context, w io.Writer, rt *localmode.Runtime, key api.Key) error {
	o, err := rt.Engine.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("%s not found", displayKey(key))
	}
	c := o.(*api.Certificate)
	// The request of the revision in flight, else of the current one.
	var cr *api.CertificateRequest
	st := &certificates.State{Cert: c}
	for _, rev := range []int{st.NextRevision(), st.CurrentRevision()} {
		if rev < 1 {
			continue
		}
		if ro, err := rt.Engine.Get(ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: c.Namespace, Name: certificates.RequestName(c.Name, rev)}); err == nil {
			cr = ro.(*api.CertificateRequest)
			break
		}
	}
	ref := c.Spec.IssuerRef
	ik := api.Key{Kind: api.KindIssuer, Namespace: c.Namespace, Name: ref.Name}
	if ref.Kind == api.KindClusterIssuer {
		ik = api.Key{Kind: api.KindClusterIssuer, Name: ref.Name}
	}
	var iss api.GenericIssuer
	issErr := ""
	if io, err := rt.Engine.Get(ctx, ik); err == nil {
		iss = io.(api.GenericIssuer)
	} else {
		issErr = fmt.Sprintf("%s %q does not exist", ik.Kind, ref.Name)
	}

	fmt.Fprintf(w, "%s\n\n", summary(c, cr, iss, issErr))
	fmt.Fprintf(w, "Certificate: %s/%s (generation %d, revision %s)\n", c.Namespace, c.Name, c.Generation, intPtr(c.Status.Revision))
	fmt.Fprintf(w, "  Names: %s\n", strings.Join(identities(c), ", "))
	printConds(w, "  ", c.Status.Conditions)
	if c.Status.NotAfter != nil {
		fmt.Fprintf(w, "  Not before: %s  Not after: %s  Renewal: %s\n", ts(c.Status.NotBefore), ts(c.Status.NotAfter), ts(c.Status.RenewalTime))
	}
	if c.Status.FailedIssuanceAttempts != nil {
		fmt.Fprintf(w, "  Failed issuance attempts: %d (last failure %s)\n", *c.Status.FailedIssuanceAttempts, ts(c.Status.LastFailureTime))
	}
	if len(c.Status.IgnoredFields) > 0 {
		fmt.Fprintf(w, "  Ignored fields: %s\n", strings.Join(c.Status.IgnoredFields, ", "))
	}
	fmt.Fprintf(w, "Issuer: %s %q", ik.Kind, ref.Name)
	if iss == nil {
		fmt.Fprintf(w, " — does not exist\n")
	} else {
		fmt.Fprintln(w)
		printConds(w, "  ", iss.GetStatus().Conditions)
	}
	if sec, err := rt.Secrets.Get(ctx, c.Namespace, c.Spec.SecretName); err == nil {
		fmt.Fprintf(w, "Secret: %s/%s\n", c.Namespace, c.Spec.SecretName)
		printCertSummary(w, "  ", sec.Data["tls.crt"])
	} else {
		fmt.Fprintf(w, "Secret: %s/%s — does not exist\n", c.Namespace, c.Spec.SecretName)
	}
	if cr == nil {
		fmt.Fprintln(w, "CertificateRequest: none")
		return nil
	}
	fmt.Fprintf(w, "CertificateRequest: %s/%s (revision %s, requester %s)\n", cr.Namespace, cr.Name, cr.Annotations[api.AnnotationRevision], cr.Spec.Username)
	printConds(w, "  ", cr.Status.Conditions)
	if cr.Status.RequestedDuration != nil || cr.Status.HonouredDuration != nil {
		fmt.Fprintf(w, "  Duration requested: %s  honoured: %s\n", durStr(cr.Status.RequestedDuration), durStr(cr.Status.HonouredDuration))
	}
	return nil
}

func durStr(d *api.Duration) string {
	if d == nil {
		return "-"
	}
	return d.Duration.String()
}

func intPtr(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func identities(c *api.Certificate) []string {
	var out []string
	if c.Spec.CommonName != "" {
		out = append(out, "CN="+c.Spec.CommonName)
	}
	out = append(out, c.Spec.DNSNames...)
	out = append(out, c.Spec.IPAddresses...)
	out = append(out, c.Spec.URIs...)
	out = append(out, c.Spec.EmailAddresses...)
	if c.Spec.LiteralSubject != "" {
		out = append(out, c.Spec.LiteralSubject)
	}
	return out
}

func printConds(w io.Writer, indent string, conds []api.Condition) {
	for _, c := range conds {
		fmt.Fprintf(w, "%s%s=%s (%s) %s\n", indent, c.Type, c.Status, c.Reason, c.Message)
	}
}
