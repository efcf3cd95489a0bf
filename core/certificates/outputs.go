package certificates

import (
	"context"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// optionalOutputs maps each optional secret key to whether spec asks for it.
func optionalOutputs(spec *api.CertificateSpec) map[string]bool {
	want := map[string]bool{"key.der": false, "tls-combined.pem": false, "keystore.p12": false, "keystore.jks": false}
	for _, f := range spec.AdditionalOutputFormats {
		switch f.Type {
		case api.CertificateOutputFormatDER:
			want["key.der"] = true
		case api.CertificateOutputFormatCombinedPEM:
			want["tls-combined.pem"] = true
		}
	}
	if ks := spec.Keystores; ks != nil {
		want["keystore.p12"] = ks.PKCS12 != nil && ks.PKCS12.Create
		want["keystore.jks"] = ks.JKS != nil && ks.JKS.Create
	}
	return want
}

// certManagerAnnotationPrefix marks the annotations certfn writes itself
// (pki.SecretMetadata).
const certManagerAnnotationPrefix = "cert-manager.io/"

// OutputsStale reports why a valid stored secret no longer has the shape
// the spec asks for (additional output formats, keystores, key encoding,
// secretTemplate labels and annotations added, changed or removed, the
// certificate-name annotation naming another Certificate); empty when it
// has. Fixing that needs no new certificate, only a rewrite of the secret.
func OutputsStale(st *State) string {
	sec := st.Secret
	for k, want := range optionalOutputs(&st.Cert.Spec) {
		if _, have := sec.Data[k]; have != want {
			return fmt.Sprintf("output %s present=%v, wanted=%v", k, have, want)
		}
	}
	if b, _ := pem.Decode(sec.Data["tls.key"]); b != nil {
		pkcs8 := b.Type == "PRIVATE KEY"
		wantPKCS8 := st.Cert.Spec.KeyEncodingOrDefault() == api.PKCS8 || st.Cert.Spec.KeyAlgorithmOrDefault() == api.Ed25519KeyAlgorithm
		if pkcs8 != wantPKCS8 {
			return "tls.key encoding differs from spec.privateKey.encoding"
		}
	}
	if n := sec.Annotations[api.AnnotationCertificateName]; n != "" && n != st.Cert.Name {
		// Written by a Certificate that owned the secret before this one
		// (see SecretOwner): the secret must name its owner.
		return "annotation " + api.AnnotationCertificateName + " names Certificate " + n
	}
	var tl, ta map[string]string
	if t := st.Cert.Spec.SecretTemplate; t != nil {
		tl, ta = t.Labels, t.Annotations
	}
	for k, v := range tl {
		if sec.Labels[k] != v {
			return "label " + k + " differs from spec.secretTemplate"
		}
	}
	for k, v := range ta {
		// certfn's own annotations win over the template's (BuildSecret
		// writes them last): comparing them would rewrite forever.
		if sec.Annotations[k] != v && !strings.HasPrefix(k, certManagerAnnotationPrefix) {
			return "annotation " + k + " differs from spec.secretTemplate"
		}
	}
	// certfn writes every label and annotation of a Certificate's secret:
	// the template's, and its own cert-manager.io/ annotations. One that is
	// neither was removed from the template (cert-manager removes it from
	// the Secret too, through server-side apply's managed fields).
	for k := range sec.Labels {
		if _, ok := tl[k]; !ok {
			return "label " + k + " is no longer in spec.secretTemplate"
		}
	}
	for k := range sec.Annotations {
		if _, ok := ta[k]; !ok && !strings.HasPrefix(k, certManagerAnnotationPrefix) {
			return "annotation " + k + " is no longer in spec.secretTemplate"
		}
	}
	return ""
}

// OutputsStep rewrites a valid, current secret whose outputs are stale,
// from the key and certificate it already holds (no new issuance).
func OutputsStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	if st.IsIssuing() {
		return Outcome{Why: "issuing: the outputs are written with the new certificate"}, nil
	}
	if err := st.LoadSecret(ctx); err != nil || st.Secret == nil {
		return Outcome{}, err
	}
	own, err := st.Ownership(ctx)
	if err != nil {
		return Outcome{}, err
	}
	if !own.Owns(st.Cert.Name) {
		return Outcome{Why: "not the owner of the secret: its outputs are the owner's"}, nil
	}
	issued, _ := st.Parse()
	if issued == nil || OutputsStale(st) == "" {
		return Outcome{Why: "the secret's outputs are up to date"}, nil
	}
	sec, err := BuildSecret(ctx, env, st.Cert, issued.Key, st.Secret.Data["tls.crt"], st.Secret.Data["ca.crt"])
	if err != nil {
		return Outcome{}, err
	}
	// Keep the issuer annotations of the stored certificate.
	for _, k := range []string{api.AnnotationIssuerName, api.AnnotationIssuerKind, api.AnnotationIssuerGroup} {
		if v, ok := st.Secret.Annotations[k]; ok {
			sec.Annotations[k] = v
		}
	}
	if err := env.Secrets.Put(ctx, sec); err != nil {
		return Outcome{}, fmt.Errorf("rewrite secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	st.SetSecret(&sec)
	return Outcome{Wrote: true}, env.Writer.Enqueue(ctx, st.Key(), 0)
}
