package certificates

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"github.com/certfn/certfn/core/kernel"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// IssuingStep is docs/design/certificate-controllers.md's issuing controller: when the next
// revision's CertificateRequest is final it either stores the key pair in
// spec.secretName and completes the revision, or records the failure and
// the backoff.
func IssuingStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	if why, err := st.skipIssuance(ctx); why != "" || err != nil {
		return Outcome{Why: why}, err
	}
	nk, err := st.NextKeySecret(ctx, env)
	if err != nil || nk == nil {
		return Outcome{}, err
	}
	cur := st.RequestsFor(st.NextRevision())
	if len(cur) != 1 {
		return Outcome{Why: "no single request for the next revision yet (requestmanager's job)"}, nil
	}
	r := cur[0]
	if !r.CR.IsFinal() {
		return Outcome{RequeueAt: st.Now.Add(env.WaitPoll), Why: "waiting for CertificateRequest " + r.CR.Name}, nil
	}
	if !r.CR.IsIssued() {
		return failed(ctx, env, st, r, requestFailureMessage(r.CR))
	}
	key, err := pki.DecodePrivateKeyPEM(nk.Data["tls.key"])
	if err != nil {
		return Outcome{Why: "the next private key does not decode (keymanager regenerates it; requestmanager replaces the request)"}, nil
	}
	csr, err := pki.ParseCSRPEM(r.CR.Spec.Request)
	if err != nil || !pki.PublicKeysEqual(csr.PublicKey, key.Public()) {
		return Outcome{Why: "the request's key is not the next private key (requestmanager replaces the request)"}, nil
	}
	if bad, err := pki.RequestMatchesSpec(r.CR, &st.Cert.Spec); err != nil || len(bad) > 0 {
		return Outcome{Why: "the request no longer matches the spec (requestmanager replaces it)"}, nil
	}
	chain, err := pki.ParseChainPEM(r.CR.Status.Certificate)
	if err != nil {
		return failed(ctx, env, st, r, "The CertificateRequest holds an invalid certificate: "+err.Error())
	}
	if !pki.PublicKeysEqual(chain[0].PublicKey, key.Public()) {
		return failed(ctx, env, st, r, "The issued certificate does not match the private key")
	}
	sec, err := BuildSecret(ctx, env, st.Cert, key, r.CR.Status.Certificate, r.CR.Status.CA)
	if err != nil {
		return Outcome{}, err
	}
	if err := env.Secrets.Put(ctx, sec); err != nil {
		return Outcome{}, fmt.Errorf("store secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	rev := st.NextRevision()
	s := &st.Cert.Status
	s.Revision = &rev
	// status.nextPrivateKeySecretName stays set until the next-key secret
	// is gone (below): a crash or a failed delete then leaves it named,
	// and the keymanager's clean-up deletes it on a later step. Unset
	// first, a leftover would be a private key nothing refers to, which
	// the next issuance would adopt as its "new" key, defeating
	// rotationPolicy Always.
	s.LastFailureTime, s.FailedIssuanceAttempts = nil, nil
	api.RemoveCondition(&s.Conditions, api.CertificateConditionIssuing)
	st.SetSecret(&sec)
	ApplyReadiness(st)
	// cert-manager records this as reason Issuing; certfn names the
	// outcome (Issued for the first revision, Renewed for later ones) so
	// that it is told apart from the trigger's Issuing.
	if rev == 1 {
		st.Record(kernel.Normal(ReasonIssued, "The certificate has been successfully issued"))
	} else {
		st.Record(kernel.Normal(ReasonRenewed, "The certificate has been successfully issued"))
	}
	if err := env.Writer.UpdateCertificate(ctx, st, RenewalTime(st)); err != nil {
		return Outcome{}, fmt.Errorf("complete revision %d: %w", rev, err)
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_certificates_issued_total", "namespace", st.Cert.Namespace, "issuer", st.Cert.Spec.IssuerRef.Name)
	}
	forgetNextKey(ctx, env, st, nk)
	if err := pruneHistory(ctx, env, st, rev); err != nil {
		return Outcome{Wrote: true}, err
	}
	if err := env.Writer.SecretWritten(ctx, sec.Namespace, sec.Name); err != nil {
		return Outcome{Wrote: true}, err
	}
	return Outcome{Wrote: true}, nil
}

// forgetNextKey deletes the next-key secret of the completed revision
// (its key is in spec.secretName now), then unsets
// status.nextPrivateKeySecretName. Either failing is left to the
// keymanager's clean-up, which runs on the Certificate's next step (the
// completion write woke it) while the name is set, so it is only counted.
func forgetNextKey(ctx context.Context, env *Env, st *State, nk *ports.Secret) {
	err := env.Secrets.Delete(ctx, nk.Namespace, nk.Name)
	if err == nil {
		st.Cert.Status.NextPrivateKeySecretName = nil
		st.SetNextKeySecret(nil)
		err = env.Writer.UpdateCertificate(ctx, st, st.NextRunAt)
	}
	if err != nil && env.Metrics != nil {
		env.Metrics.Inc("certfn_cleanup_errors_total", "what", "next_private_key")
	}
}

func requestFailureMessage(cr *api.CertificateRequest) string {
	for _, t := range []string{api.CertificateRequestConditionDenied, api.CertificateRequestConditionInvalidRequest, api.CertificateRequestConditionFailed, api.CertificateRequestConditionReady} {
		if c := api.FindCondition(cr.Status.Conditions, t); c != nil && (c.Status == api.ConditionTrue || t == api.CertificateRequestConditionReady) && c.Message != "" {
			return fmt.Sprintf("The certificate request %q has failed to complete and will be retried: %s", cr.Name, c.Message)
		}
	}
	return fmt.Sprintf("The certificate request %q has failed to complete and will be retried", cr.Name)
}

// failed records a failed issuance: lastFailureTime, one more failed
// attempt, Issuing=False with the retry time, Ready recomputed.
func failed(ctx context.Context, env *Env, st *State, r Request, msg string) (Outcome, error) {
	st.Record(kernel.Warning("Failed", msg))
	return recordFailedIssuance(ctx, env, st, "Failed", func(n int, retry string) string {
		return fmt.Sprintf("%s (attempt %d; next attempt after %s)", msg, n, retry)
	}, "record failed issuance")
}

// recordFailedIssuance is one more failed attempt of an issuance:
// lastFailureTime and the backoff (RecordFailedAttempt), Issuing=False
// with reason and the message made of the attempt and the retry time,
// Ready recomputed, written with the retry as the due time, and the
// failure counted. what names the write in its error.
func recordFailedIssuance(ctx context.Context, env *Env, st *State, reason string, message func(attempt int, retry string) string, what string) (Outcome, error) {
	s := &st.Cert.Status
	n, retry := RecordFailedAttempt(st)
	if err := st.LoadSecret(ctx); err != nil {
		return Outcome{}, err
	}
	api.SetCondition(&s.Conditions, api.Condition{
		Type: api.CertificateConditionIssuing, Status: api.ConditionFalse, Reason: reason,
		Message:            message(n, retry.UTC().Format("2006-01-02T15:04:05Z")),
		ObservedGeneration: st.Cert.Generation,
	}, st.Now)
	ApplyReadiness(st)
	if err := env.Writer.UpdateCertificate(ctx, st, retry); err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", what, err)
	}
	if env.Metrics != nil {
		env.Metrics.Inc("certfn_issuance_failures_total", "namespace", st.Cert.Namespace, "issuer", st.Cert.Spec.IssuerRef.Name)
	}
	return Outcome{Wrote: true}, nil
}

// Reasons of certfn's Events on a Certificate whose issuance completed
// (cert-manager records both as Issuing).
const (
	ReasonIssued  = "Issued"
	ReasonRenewed = "Renewed"
)

// pruneHistory deletes requests older than revisionHistoryLimit revisions.
func pruneHistory(ctx context.Context, env *Env, st *State, rev int) error {
	limit := int(st.Cert.Spec.RevisionHistoryLimitOrDefault())
	for _, r := range st.Requests {
		if rr := r.Revision(); rr > 0 && rr <= rev-limit {
			if err := env.Writer.DeleteRequest(ctx, r); err != nil {
				return fmt.Errorf("prune CertificateRequest %s/%s beyond the revision history limit: %w", r.CR.Namespace, r.CR.Name, err)
			}
		}
	}
	return nil
}

// BuildSecret encodes the key pair and every output the Certificate asks
// for, with cert-manager's annotations and the secretTemplate metadata.
func BuildSecret(ctx context.Context, env *Env, crt *api.Certificate, key crypto.Signer, certPEM, caPEM []byte) (ports.Secret, error) {
	in := pki.OutputInput{Key: key, CertPEM: certPEM, CAPEM: caPEM, Spec: &crt.Spec}
	if ks := crt.Spec.Keystores; ks != nil {
		if ks.PKCS12 != nil && ks.PKCS12.Create {
			p, err := password(ctx, env, crt.Namespace, ks.PKCS12.Password, ks.PKCS12.PasswordSecretRef, "spec.keystores.pkcs12")
			if err != nil {
				return ports.Secret{}, err
			}
			in.PKCS12Password = p
		}
		if ks.JKS != nil && ks.JKS.Create {
			p, err := password(ctx, env, crt.Namespace, ks.JKS.Password, ks.JKS.PasswordSecretRef, "spec.keystores.jks")
			if err != nil {
				return ports.Secret{}, err
			}
			in.JKSPassword = p
		}
	}
	data, err := pki.BuildSecretData(in)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("encode secret %s/%s: %w", crt.Namespace, crt.Spec.SecretName, err)
	}
	chain, err := pki.ParseChainPEM(certPEM)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("parse issued certificate: %w", err)
	}
	sec := ports.Secret{Namespace: crt.Namespace, Name: crt.Spec.SecretName, Data: data,
		Labels: map[string]string{}, Annotations: map[string]string{}}
	if t := crt.Spec.SecretTemplate; t != nil {
		for k, v := range t.Labels {
			sec.Labels[k] = v
		}
		for k, v := range t.Annotations {
			sec.Annotations[k] = v
		}
	}
	for k, v := range pki.SecretMetadata(crt, chain[0]) {
		sec.Annotations[k] = v
	}
	return sec, nil
}

func password(ctx context.Context, env *Env, ns string, literal *string, ref api.SecretKeySelector, path string) ([]byte, error) {
	if literal != nil {
		return []byte(*literal), nil
	}
	if ref.Name == "" {
		return nil, fmt.Errorf("%s: neither password nor passwordSecretRef is set", path)
	}
	k := ref.Key
	if k == "" {
		k = "password"
	}
	// A missing secret and a missing key get one error, with the same
	// class: telling them apart would let a Certificate probe which
	// secrets of its namespace exist and which keys they hold.
	missing := fmt.Errorf("%s.passwordSecretRef: no key %q in a secret %s/%s: the password secret must exist in the Certificate's "+
		"namespace and hold that key: %w", path, k, ns, ref.Name, ports.ErrNotFound)
	sec, err := env.Secrets.Get(ctx, ns, ref.Name)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, missing
	}
	if err != nil {
		return nil, fmt.Errorf("%s.passwordSecretRef: read secret %s/%s: %w", path, ns, ref.Name, err)
	}
	p, ok := sec.Data[k]
	if !ok {
		return nil, missing
	}
	return p, nil
}
