// Package issuers is the controller package of the Issuer and
// ClusterIssuer kinds: their readiness. Step keeps their Ready condition:
// selfSigned is always ready; ca is ready when its secret holds a valid,
// unexpired CA certificate and the matching key (cert-manager's CA issuer
// setup); acme is checked by Env.ACMEReady (account registration).
// Becoming Ready, or being found Ready again (a redelivery), wakes
// the requests that wait for the issuer.
//
// The issuer implementations, what signs a request, are elsewhere:
// core/signers (the Signer interface, selfsigned and ca) and core/acme
// (the ACME issuer).
package issuers

import (
	"context"
	"errors"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/step"
)

// State is one issuer as loaded for a reconcile.
type State struct {
	Issuer          api.GenericIssuer
	Version         int64
	NextRunAt       time.Time
	Now             time.Time
	SecretNamespace string
	// Events receives the Event of a change of the Ready condition
	// (cert-manager's reasons: KeyPairVerified, ErrGetKeyPair,
	// ACMEAccountRegistered, ErrRegisterACMEAccount, ...; Normal when
	// Ready, else Warning); nil drops it. Recorded before the write.
	Events func(kernel.Note)
}

// Writer writes the issuer conditionally and, on a transition to Ready or
// a run that finds it Ready and unchanged, wakes the requests waiting for
// it (see Step).
type Writer interface {
	UpdateIssuer(ctx context.Context, st *State, nextRunAt time.Time) error
	IssuerReady(ctx context.Context, st *State) error
}

// ErrNotYet, wrapped in an error ACMEReady returns, says the issuer cannot
// be decided yet for a reason that passes by itself within a minute or
// two: its account key secret exists and holds no key yet (a store whose
// Create is two calls, Secret Manager's, between them, or after a Create
// whose answer was lost, until a later Create may take the empty secret
// over). Step then writes nothing and looks again after SoonRecheck.
var ErrNotYet = errors.New("not decided yet")

// SoonRecheck is when Step looks again at an issuer not decided yet
// (certificates.FollowUpGrace's two minutes, for the same reason).
const SoonRecheck = 2 * time.Minute

// Env is what the issuer step needs.
type Env struct {
	Secrets  ports.SecretStore
	Writer   Writer
	WaitPoll time.Duration
	// ACMEReady, when set, checks an ACME issuer (account registration);
	// until the ACME issuer exists it is nil and ACME issuers are not Ready.
	ACMEReady func(ctx context.Context, st *State) (ok bool, reason, msg string, err error)
}

// Step evaluates the issuer and writes its Ready condition when it
// changed; RequeueAt is when it wants to look again (zero: only when
// something wakes it), whether it wrote or not.
func Step(ctx context.Context, env *Env, st *State) (step.Outcome, error) {
	spec := st.Issuer.GetSpec()
	var (
		ok          bool
		reason, msg string
		recheck     = st.Now.Add(env.WaitPoll)
	)
	switch {
	case spec.SelfSigned != nil:
		ok, reason, msg, recheck = true, "IsReady", "", time.Time{}
	case spec.CA != nil:
		notAfter, err := checkCA(ctx, env.Secrets, st.SecretNamespace, spec.CA.SecretName, st.Now)
		switch {
		case err == nil:
			ok, reason, msg, recheck = true, "KeyPairVerified", "Signing CA verified", notAfter
		case errors.Is(err, ports.ErrNotFound):
			reason, msg = "ErrGetKeyPair", fmt.Sprintf("Error getting keypair for CA issuer: secret %s/%s does not exist", st.SecretNamespace, spec.CA.SecretName)
		case errors.Is(err, errInvalid):
			reason, msg = "ErrInvalidKeyPair", "Error getting keypair for CA issuer: "+err.Error()
		default:
			return step.Outcome{}, fmt.Errorf("check CA secret %s/%s: %w", st.SecretNamespace, spec.CA.SecretName, err)
		}
	case spec.ACME != nil && env.ACMEReady != nil:
		var err error
		ok, reason, msg, err = env.ACMEReady(ctx, st)
		if errors.Is(err, ErrNotYet) {
			return step.Outcome{RequeueAt: st.Now.Add(SoonRecheck), Why: "the ACME account cannot be decided yet: " + err.Error()}, nil
		}
		if err != nil {
			return step.Outcome{}, err
		}
		if ok {
			recheck = time.Time{}
		}
	case spec.ACME != nil:
		reason, msg = "NotSupported", "The ACME issuer is not available in this build of certfn yet"
		recheck = time.Time{}
	default:
		reason, msg = "UnsupportedIssuerType", "No issuer type certfn supports (selfSigned, ca, acme) is configured; vault and venafi are not supported"
		recheck = time.Time{}
	}
	status := api.ConditionFalse
	if ok {
		status = api.ConditionTrue
	}
	wasReady := api.IsTrue(st.Issuer.GetStatus().Conditions, api.IssuerConditionReady)
	changed := api.SetCondition(&st.Issuer.GetStatus().Conditions, api.Condition{Type: api.IssuerConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: st.Issuer.GetObjectMeta().Generation}, st.Now)
	if changed {
		if st.Events != nil && (msg != "" || !ok) {
			n := kernel.Normal(reason, msg)
			if !ok {
				n.Type = api.EventTypeWarning
			}
			st.Events(n)
		}
		if err := env.Writer.UpdateIssuer(ctx, st, recheck); err != nil {
			return step.Outcome{}, fmt.Errorf("update issuer Ready condition: %w", err)
		}
	}
	// A transition to Ready wakes the requests waiting for the issuer. So
	// does a run that finds the issuer Ready and unchanged: the run that
	// wrote the transition may have died before its wake-ups were sent or
	// handled (a Lambda or Cloud Run instance killed after the write, an
	// answer to the write lost, the List failing), and the queue then
	// redelivers the issuer's message, which finds nothing to write; waking
	// here makes that redelivery carry the lost wake-up, as the kernel
	// does for a final child's owner (wakeOwnerOfFinal). Without it the
	// requests waited for their own recheck (WaitPoll, 10 minutes). It costs
	// one List of the requests per extra delivery of a Ready issuer; a write
	// of a Ready issuer that stays Ready (a new message) wakes nothing.
	if ok && (!wasReady || !changed) {
		if err := env.Writer.IssuerReady(ctx, st); err != nil {
			return step.Outcome{}, err
		}
	}
	out := step.Outcome{Wrote: changed, RequeueAt: recheck}
	if !changed {
		out.Why = "the Ready condition is unchanged (" + reason + ")"
	}
	return out, nil
}

var errInvalid = errors.New("invalid CA key pair")

// checkCA returns the CA certificate's notAfter when the secret holds a
// usable CA key pair.
func checkCA(ctx context.Context, secrets ports.SecretStore, ns, name string, now time.Time) (time.Time, error) {
	sec, err := secrets.Get(ctx, ns, name)
	if err != nil {
		return time.Time{}, err
	}
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: tls.crt: %v", errInvalid, err)
	}
	key, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: tls.key: %v", errInvalid, err)
	}
	ca := chain[0]
	switch {
	case !ca.IsCA:
		return time.Time{}, fmt.Errorf("%w: the certificate in tls.crt is not a CA (isCA is false)", errInvalid)
	case !pki.PublicKeysEqual(key.Public(), ca.PublicKey):
		return time.Time{}, fmt.Errorf("%w: tls.key does not match tls.crt", errInvalid)
	case !now.Before(ca.NotAfter):
		return time.Time{}, fmt.Errorf("%w: the CA certificate expired at %s", errInvalid, ca.NotAfter.UTC().Format(time.RFC3339))
	}
	return ca.NotAfter, nil
}
