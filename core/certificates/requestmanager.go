package certificates

import (
	"context"
	"crypto"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"strconv"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// RequestManagerStep is docs/design/certificate-controllers.md's requestmanager: while Issuing is True
// and a next private key exists, it makes sure exactly one
// CertificateRequest exists for the next revision, signed by that key and
// matching the spec; stale or mismatching requests are deleted, one per
// invocation.
func RequestManagerStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	if why, err := st.skipIssuance(ctx); why != "" || err != nil {
		return Outcome{Why: why}, err
	}
	nk, err := st.NextKeySecret(ctx, env)
	if err != nil || nk == nil {
		return Outcome{}, err
	}
	key, err := pki.DecodePrivateKeyPEM(nk.Data["tls.key"])
	if err != nil {
		// keymanager regenerates an undecodable key on its next step.
		return Outcome{Why: "the next private key does not decode (keymanager replaces it)"}, nil
	}
	next := st.NextRevision()
	for _, r := range st.Requests {
		if rev := r.Revision(); rev == 0 || rev > next {
			return deleted(ctx, env, r, "it has no valid revision annotation or is ahead of the next revision")
		}
	}
	cur := st.RequestsFor(next)
	SortRequests(cur)
	if len(cur) > 1 {
		return deleted(ctx, env, cur[1], "more than one request exists for the same revision")
	}
	if len(cur) == 1 {
		r := cur[0]
		csr, err := pki.ParseCSRPEM(r.CR.Spec.Request)
		if err != nil || !pki.PublicKeysEqual(csr.PublicKey, key.Public()) {
			return deleted(ctx, env, r, "its public key does not match the next private key")
		}
		if bad, err := pki.RequestMatchesSpec(r.CR, &st.Cert.Spec); err != nil || len(bad) > 0 {
			return deleted(ctx, env, r, fmt.Sprintf("it does not match the spec: %v", bad))
		}
		if failedBeforeTrigger(st, r.CR) {
			return deleted(ctx, env, r, "it failed before the current issuance was triggered")
		}
		return Outcome{Why: "the request of this revision matches the spec and the next private key"}, nil
	}
	cr, err := build(env, st, key, next, nk.Name)
	if err != nil {
		return Outcome{}, err
	}
	st.Record(kernel.Normal("Requested", fmt.Sprintf("Created new CertificateRequest resource %q", cr.Name)))
	if err := env.Writer.CreateRequest(ctx, st, cr); err != nil {
		return Outcome{}, fmt.Errorf("create CertificateRequest %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return Outcome{Wrote: true}, nil
}

func deleted(ctx context.Context, env *Env, r Request, why string) (Outcome, error) {
	if err := env.Writer.DeleteRequest(ctx, r); err != nil {
		return Outcome{}, fmt.Errorf("delete CertificateRequest %s/%s (%s): %w", r.CR.Namespace, r.CR.Name, why, err)
	}
	return Outcome{Wrote: true}, nil
}

// failedBeforeTrigger: a request that failed before Issuing last became
// True belongs to an earlier attempt and is replaced (after the backoff).
func failedBeforeTrigger(st *State, cr *api.CertificateRequest) bool {
	if !cr.IsFinal() || cr.IsIssued() {
		return false
	}
	issuing := api.FindCondition(st.Cert.Status.Conditions, api.CertificateConditionIssuing)
	if issuing == nil || issuing.LastTransitionTime == nil {
		return false
	}
	failed := cr.Status.FailureTime
	if failed == nil {
		if c := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionReady); c != nil {
			failed = c.LastTransitionTime
		}
	}
	return failed != nil && failed.Before(issuing.LastTransitionTime.Time)
}

func build(env *Env, st *State, key crypto.Signer, rev int, keySecret string) (*api.CertificateRequest, error) {
	crt := st.Cert
	csrPEM, err := pki.GenerateCSR(crt, key)
	if err != nil {
		return nil, fmt.Errorf("build CSR: %w", err)
	}
	ctrl := true
	return &api.CertificateRequest{
		TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{
			Name:      RequestName(crt.Name, rev),
			Namespace: crt.Namespace,
			Annotations: map[string]string{
				api.AnnotationRevision:             strconv.Itoa(rev),
				api.AnnotationCertificateName:      crt.Name,
				api.AnnotationPrivateKeySecretName: keySecret,
			},
			OwnerReferences: []api.OwnerReference{{
				APIVersion: api.CertManagerV1, Kind: api.KindCertificate, Name: crt.Name, UID: crt.UID, Controller: &ctrl,
			}},
		},
		Spec: api.CertificateRequestSpec{
			Duration:  crt.Spec.Duration,
			IssuerRef: crt.Spec.IssuerRef,
			Request:   csrPEM,
			IsCA:      crt.Spec.IsCA,
			Usages:    crt.Spec.Usages,
			Username:  env.Username,
			UID:       env.UID,
			Groups:    append([]string(nil), env.Groups...),
		},
	}, nil
}
