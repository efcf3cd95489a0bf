package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// newCertificateCmd is kubectl's `certificate approve|deny NAME` for
// CertificateSigningRequests (docs/design/certificates-api.md's approval subresource).
func newCertificateCmd(t *target, std streams) *cobra.Command {
	c := &cobra.Command{Use: "certificate", Short: "Approve or deny CertificateSigningRequests (as kubectl certificate)"}
	for _, approve := range []bool{true, false} {
		approve := approve
		var reason, message, version string
		verb, done, defReason := "deny", "denied", "CertfnDeny"
		if approve {
			verb, done, defReason = "approve", "approved", "CertfnApprove"
		}
		sub := &cobra.Command{
			Use:   verb + " NAME...",
			Short: strings.ToUpper(verb[:1]) + verb[1:] + " CertificateSigningRequests (permanent; needs approve on signers for their signerName)",
			Long: `Record an ` + map[bool]string{true: "Approved", false: "Denied"}[approve] + ` condition on each CertificateSigningRequest through its approval
subresource, as 'kubectl certificate ` + verb + `' does. Approved and Denied are permanent and
mutually exclusive. You need 'approve' on 'signers' in certificates.k8s.io named by the
request's spec.signerName (or '<domain>/*'), granted by a ClusterRoleBinding: creating a
request does not let you approve it.`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				cl, err := t.client(cmd.Context(), readsData)
				if err != nil {
					return err
				}
				for _, name := range args {
					k := api.Key{Kind: api.KindCertificateSigningRequest, Name: name}
					if err := decideOn(cmd.Context(), cl, k, approve, reason, message, version); err != nil {
						return err
					}
					fmt.Fprintf(std.out, "%s %s\n", displayKey(k), done)
				}
				return nil
			},
		}
		sub.Flags().StringVar(&version, "resource-version", "", resourceVersionUsage)
		sub.Flags().StringVar(&reason, "reason", defReason, "reason recorded on the condition")
		sub.Flags().StringVar(&message, "message", "", "message recorded on the condition (default \"manually "+done+" by <your identity>\")")
		c.AddCommand(sub)
	}
	return c
}

// csrOptions are the flags of `create csr`.
type csrOptions struct {
	name, keyFile, csrFile, signer, out string
	keySecret                           string
	expiration, timeout                 time.Duration
	usages, dnsNames, ips, uris, emails []string
	commonName                          string
	isCA, wait                          bool
}

// newCreateCSR is `certfn create csr`: a CertificateSigningRequest built
// from a key the user keeps, applied, waited for, and its certificate
// written out after a client-side check of its lifetime (docs/design/request-duration.md).
func newCreateCSR(t *target, std streams) *cobra.Command {
	var o csrOptions
	c := &cobra.Command{
		Use:   "csr --key KEY.pem --signer-name SIGNER [--expiration 10m] [--common-name CN] [--dns-name NAME]...",
		Short: "Request a certificate for a key you keep, through a CertificateSigningRequest, and write it out",
		Long: `Build a PKCS#10 request signed by --key (the key never leaves this machine), apply it as a
certificates.k8s.io/v1 CertificateSigningRequest for --signer-name, wait until it is approved
and signed, and write status.certificate (the chain, leaf first) to --out or stdout.

certfn signs for cert-manager's signer names:
  issuers.cert-manager.io/<namespace>.<issuer>   (you need 'reference' on signers named <issuer>
                                                  in cert-manager.io in that namespace)
  clusterissuers.cert-manager.io/<clusterissuer>
You need 'create' and 'get' on certificatesigningrequests; a name that exists is refused.
For a selfSigned signer, store --key first (certfn create secret NAME -n <the issuer's secret
namespace> --from-file tls.key=KEY.pem) and pass --private-key-secret-name NAME.
--expiration sets spec.expirationSeconds (at least 10m, KEP-2784). A signer may honour less:
the issued certificate's lifetime is checked here and a shorter one is reported as a warning.

  certfn create csr --key key.pem --signer-name clusterissuers.cert-manager.io/ca \
    --common-name app.internal --dns-name app.internal --expiration 24h --out app.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return createCSR(cmd, t, std, o) },
	}
	f := c.Flags()
	f.StringVar(&o.name, "name", "", "name of the CertificateSigningRequest (default csr-<random>)")
	f.StringVar(&o.keyFile, "key", "", "private key (PEM: PKCS#8, PKCS#1 or SEC 1) the request is signed with (required)")
	f.StringVar(&o.csrFile, "csr", "", "use this PEM CERTIFICATE REQUEST instead of building one (its key must be --key's)")
	f.StringVar(&o.signer, "signer-name", "", "spec.signerName (required), e.g. clusterissuers.cert-manager.io/ca")
	f.DurationVar(&o.expiration, "expiration", 0, "requested lifetime, spec.expirationSeconds (at least 10m; default: the signer's)")
	f.StringSliceVar(&o.usages, "usages", []string{"digital signature", "key encipherment", "server auth"}, "spec.usages (comma-separated)")
	f.StringVar(&o.commonName, "common-name", "", "subject common name")
	f.StringSliceVar(&o.dnsNames, "dns-name", nil, "DNS SAN (repeatable)")
	f.StringSliceVar(&o.ips, "ip-address", nil, "IP SAN (repeatable)")
	f.StringSliceVar(&o.uris, "uri", nil, "URI SAN (repeatable)")
	f.StringSliceVar(&o.emails, "email", nil, "e-mail SAN (repeatable)")
	f.StringVar(&o.keySecret, "private-key-secret-name", "", "for a selfSigned signer: the secret holding --key (tls.key) where the issuer's secrets live (annotation experimental.cert-manager.io/private-key-secret-name)")
	f.BoolVar(&o.isCA, "is-ca", false, "ask for a CA certificate (annotation experimental.cert-manager.io/request-is-ca)")
	f.StringVar(&o.out, "out", "", "write the certificate chain to this file (default stdout)")
	f.BoolVar(&o.wait, "wait", true, "wait for the certificate; with --wait=false only apply the request")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait")
	return c
}

func createCSR(cmd *cobra.Command, t *target, std streams, o csrOptions) error {
	switch {
	case o.keyFile == "":
		return errors.New("--key is required: the private key the request is signed with (it stays on this machine)")
	case o.signer == "":
		return errors.New("--signer-name is required, e.g. clusterissuers.cert-manager.io/ca or issuers.cert-manager.io/<namespace>.<issuer>")
	case o.expiration != 0 && o.expiration < api.MinExpirationSeconds*time.Second:
		return fmt.Errorf("--expiration %s: at least 10m (spec.expirationSeconds >= %d)", o.expiration, api.MinExpirationSeconds)
	case o.expiration%time.Second != 0:
		return fmt.Errorf("--expiration %s: whole seconds only", o.expiration)
	}
	keyPEM, err := os.ReadFile(o.keyFile)
	if err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	key, err := pki.DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("--key %s: %w", o.keyFile, err)
	}
	reqPEM, err := buildCSR(o, key)
	if err != nil {
		return err
	}
	if o.name == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.name = "csr-" + hex.EncodeToString(b[:])
	}
	c := &api.CertificateSigningRequest{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertificatesV1, Kind: api.KindCertificateSigningRequest},
		ObjectMeta: api.ObjectMeta{Name: o.name},
		Spec:       api.CertificateSigningRequestSpec{Request: reqPEM, SignerName: o.signer},
	}
	for _, u := range o.usages {
		c.Spec.Usages = append(c.Spec.Usages, api.KeyUsage(strings.TrimSpace(u)))
	}
	if o.expiration > 0 {
		secs := int32(o.expiration / time.Second)
		c.Spec.ExpirationSeconds = &secs
	}
	c.Annotations = map[string]string{}
	if o.isCA {
		c.Annotations[api.AnnotationCSRIsCA] = "true"
	}
	if o.keySecret != "" {
		c.Annotations[api.AnnotationCSRPrivateKeySecretName] = o.keySecret
	}
	cl, err := t.client(cmd.Context(), readsData)
	if err != nil {
		return err
	}
	// create, not apply: a request of that name is never replaced (its spec is immutable anyway).
	if _, err := cl.Get(cmd.Context(), api.KeyOf(c)); err == nil {
		return fmt.Errorf("%s already exists: choose another --name, or delete it first", displayKey(api.KeyOf(c)))
	} else if !errors.Is(err, ports.ErrNotFound) {
		return err
	}
	if _, err := cl.Apply(cmd.Context(), []api.Object{c}); err != nil {
		return err
	}
	key2 := api.KeyOf(c)
	fmt.Fprintf(std.err, "%s created\n", displayKey(key2))
	if !o.wait {
		return nil
	}
	issued, err := waitCSR(cmd, t, std, cl, key2, o.timeout)
	if err != nil {
		return err
	}
	chain, err := pki.ParseChainPEM(issued.Status.Certificate)
	if err != nil {
		return fmt.Errorf("%s: status.certificate: %w", displayKey(key2), err)
	}
	if !pki.PublicKeysEqual(chain[0].PublicKey, key.Public()) {
		return fmt.Errorf("%s: the issued certificate is not for --key's public key", displayKey(key2))
	}
	if w := lifetimeWarning(chain[0], c.Spec.ExpirationSeconds); w != "" {
		fmt.Fprintln(std.err, "warning: "+w)
	}
	if o.out == "" {
		_, err = std.out.Write(issued.Status.Certificate)
		return err
	}
	if err := os.WriteFile(o.out, issued.Status.Certificate, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(std.err, "certificate written to %s (expires %s)\n", o.out, chain[0].NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// buildCSR returns the --csr file (checked against key) or a new request
// signed by key with the subject and SANs of o.
func buildCSR(o csrOptions, key crypto.Signer) ([]byte, error) {
	if o.csrFile != "" {
		b, err := os.ReadFile(o.csrFile)
		if err != nil {
			return nil, fmt.Errorf("--csr: %w", err)
		}
		parsed, err := pki.ParseCSRPEM(b)
		if err != nil {
			return nil, fmt.Errorf("--csr %s: %w", o.csrFile, err)
		}
		if !pki.PublicKeysEqual(parsed.PublicKey, key.Public()) {
			return nil, fmt.Errorf("--csr %s: its public key is not --key's", o.csrFile)
		}
		return b, nil
	}
	if o.commonName == "" && len(o.dnsNames)+len(o.ips)+len(o.uris)+len(o.emails) == 0 {
		return nil, errors.New("give --common-name or at least one SAN (--dns-name, --ip-address, --uri, --email)")
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: o.commonName}, DNSNames: o.dnsNames, EmailAddresses: o.emails}
	for _, s := range o.ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("--ip-address %q: not an IP address", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	for _, s := range o.uris {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("--uri %q: want an absolute URI", s)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("build the request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// waitCSR polls the CSR until it holds a certificate; a Denied or Failed
// condition ends the wait with exit status 1. While it waits it prints
// why, from the CSR's Event (csrWaitingReason), each time that changes;
// a timeout repeats the last.
func waitCSR(cmd *cobra.Command, t *target, std streams, cl client, k api.Key, timeout time.Duration) (*api.CertificateSigningRequest, error) {
	interval := 200 * time.Millisecond
	if t.remote.enabled() {
		interval = 2 * time.Second // each poll is a signed API request
	}
	deadline := time.Now().Add(timeout)
	noServe := t.noServeNote()
	last := ""
	for {
		o, err := cl.Get(cmd.Context(), k)
		line := "not found"
		switch {
		case err == nil:
			c := o.(*api.CertificateSigningRequest)
			if c.IsIssued() {
				return c, nil
			}
			for _, t := range []string{api.CSRConditionDenied, api.CSRConditionFailed} {
				if cond := c.Status.Condition(t); cond != nil {
					return nil, exitError{code: 1, err: fmt.Errorf("%s was %s (%s): %s", displayKey(k), strings.ToLower(t), cond.Reason, cond.Message)}
				}
			}
			line = "waiting for approval"
			if c.Status.Has(api.CSRConditionApproved) {
				line = "approved, waiting for the signer"
			}
			if why := csrWaitingReason(cmd.Context(), cl, c); why != "" {
				line += ": " + why
			}
		case errors.Is(err, ports.ErrNotFound):
		case errors.Is(err, app.ErrForbidden), isUnauthenticated(err):
			return nil, err
		default:
			line = "error: " + err.Error()
		}
		if noServe != "" {
			line += " (" + noServe + ")"
		}
		if line != last {
			fmt.Fprintf(std.err, "%s: %s\n", displayKey(k), line)
			last = line
		}
		if time.Now().After(deadline) {
			return nil, exitError{code: 1, err: fmt.Errorf("timed out after %s waiting for %s; last: %s", timeout, displayKey(k), last)}
		}
		select {
		case <-cmd.Context().Done():
			return nil, cmd.Context().Err()
		case <-time.After(interval):
		}
	}
}

// csrWaitingReason is why c waits, from its latest Event (the engine records it
// there: a CSR has no condition for it): the message of a waiting reason
// (core/certificatesigningrequests's: the approver's message while nobody decided, the issuer or
// the signer once approved), "<reason>: <message>" for a failure
// recorded since; "" when there is none, the caller may not read it, or
// it is stale (waiting for approval, and c is approved).
func csrWaitingReason(ctx context.Context, cl client, c *api.CertificateSigningRequest) string {
	evs := eventsOf(ctx, cl, api.KeyOf(c))
	if len(evs) == 0 {
		return ""
	}
	ev := &evs[len(evs)-1] // the latest
	if ev.Message == "" {
		return ""
	}
	switch ev.Reason {
	case certificatesigningrequests.ReasonWaitingApproval:
		if c.Status.Has(api.CSRConditionApproved) {
			return ""
		}
		return ev.Message
	case certificatesigningrequests.ReasonIssuerNotFound, certificatesigningrequests.ReasonIssuerNotReady, certificatesigningrequests.ReasonOrderPending, certificatesigningrequests.ReasonPending:
		return ev.Message
	}
	return ev.Reason + ": " + ev.Message
}

// lifetimeWarning is the client-side check KEP-2784 asks for: the issued
// certificate's lifetime (notAfter - notBefore) against the requested
// expirationSeconds; "" when honoured or none was requested.
func lifetimeWarning(leaf *x509.Certificate, expirationSeconds *int32) string {
	if expirationSeconds == nil {
		return ""
	}
	want := time.Duration(*expirationSeconds) * time.Second
	got := leaf.NotAfter.Sub(leaf.NotBefore)
	if got == want {
		return ""
	}
	return fmt.Sprintf("the signer did not honour the requested lifetime: asked for %s (spec.expirationSeconds %d), the certificate is valid for %s (%s to %s)",
		want, *expirationSeconds, got, leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
}

// csrColumns are `get csr`'s columns, kubectl's: NAME AGE SIGNERNAME
// REQUESTOR REQUESTEDDURATION CONDITION (wide: HONOUREDDURATION, MESSAGE).
func csrColumns(wide bool, now time.Time) ([]string, func(api.Object) []string) {
	h := []string{"NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"}
	if wide {
		h = append(h, "HONOUREDDURATION", "MESSAGE")
	}
	return h, func(o api.Object) []string {
		c := o.(*api.CertificateSigningRequest)
		requested := "<none>"
		if c.Spec.ExpirationSeconds != nil {
			requested = shortDuration(time.Duration(*c.Spec.ExpirationSeconds) * time.Second)
		}
		cells := []string{c.Name, age(&c.ObjectMeta, now), c.Spec.SignerName, c.Spec.Username, requested, csrCondition(c)}
		if wide {
			honoured, msg := "<none>", ""
			if c.Status.HonouredDuration != nil {
				honoured = shortDuration(c.Status.HonouredDuration.Duration)
			}
			for _, cond := range c.Status.Conditions {
				msg = cond.Message
			}
			cells = append(cells, honoured, msg)
		}
		return cells
	}
}

// csrCondition is kubectl's CONDITION column (its printers'
// extractCSRStatus): Denied, else Approved, else Pending; then ",Failed"
// when a Failed condition is present and ",Issued" when a certificate is
// set. As there, a condition counts whatever its status.
func csrCondition(c *api.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case api.CSRConditionApproved:
			approved = true
		case api.CSRConditionDenied:
			denied = true
		case api.CSRConditionFailed:
			failed = true
		}
	}
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(c.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}
