package certificates_test

import (
	"context"
	"crypto"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// refusing is a KeyPolicy that refuses every key with msg ("" allows).
type refusing struct {
	msg   string
	asked int
}

func (r *refusing) RefuseKey(context.Context, *api.Certificate) (string, error) {
	r.asked++
	return r.msg, nil
}

// countingKeys is a KeyGenerator counting its calls; busy refuses them.
type countingKeys struct {
	key   crypto.Signer
	busy  bool
	calls int
}

func (k *countingKeys) Generate(_ context.Context, ns string, _ *api.CertificatePrivateKey) (crypto.Signer, error) {
	k.calls++
	if k.busy {
		return nil, fmt.Errorf("%w: namespace %q has one in generation", certificates.ErrKeyGenerationBusy, ns)
	}
	return k.key, nil
}

// Before a key is generated the key policy is asked: a key no policy
// could allow is never generated (no generator call, no secret), and the
// issuance fails with Issuing and Ready False, reason KeyNotAllowed, the
// message naming spec.privateKey, and the failure backoff. A busy key
// generation stage defers the step without writing.
func TestKeyManagerStepGatesKeyGeneration(t *testing.T) {
	const refusal = `spec.privateKey: a RSA 8192 key is not allowed by any CertificateRequestPolicy that applies to this Certificate's requests, so no key was generated and no request created: [policy "small": spec.constraints.privateKey.maxSize: the request's RSA key has size 8192, the policy allows at most 4096]`
	for _, tc := range []struct {
		name        string
		refuse      string
		busy        bool
		existing    bool // a next key for another spec: it would be regenerated
		wantCalls   int
		wantRefused bool
		wantRequeue time.Duration
	}{
		{name: "allowed: generated", wantCalls: 1},
		{name: "no policy allows the key: nothing generated", refuse: refusal, wantRefused: true},
		{name: "no policy allows the new spec of a next key: not regenerated", refuse: refusal, existing: true, wantRefused: true},
		{name: "the stage is busy: looks again soon", busy: true, wantCalls: 1, wantRequeue: certificates.KeyGenerationRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := issuing(ct.WithKeySpec(api.RSAKeyAlgorithm, 8192))
			secrets := ct.NewMemSecrets()
			if tc.existing {
				crt = issuing(ct.WithKeySpec(api.RSAKeyAlgorithm, 8192), ct.WithNextKey(nextKeyName))
				secrets = ct.NewMemSecrets(ct.NextKeySecret(t, crt, ct.Key(t, nil))) // ECDSA: no longer the spec's
			}
			w := &ct.Writer{}
			env, _, m := ct.Env(secrets, w)
			pol := &refusing{msg: tc.refuse}
			keys := &countingKeys{key: ct.Key(t, nil), busy: tc.busy}
			env.KeyPolicy, env.Keys = pol, keys
			out, err := certificates.KeyManagerStep(context.Background(), env, ct.State(crt, nil))
			if err != nil {
				t.Fatal(err)
			}
			if keys.calls != tc.wantCalls || pol.asked != 1 {
				t.Fatalf("generator calls = %d, policy asked %d times; want %d and 1", keys.calls, pol.asked, tc.wantCalls)
			}
			switch {
			case tc.wantRefused:
				if !out.Wrote || len(secrets.Writes()) != 0 || m.Get("certfn_private_keys_generated_total") != 0 {
					t.Fatalf("outcome %+v, secret writes %v: want the failure written and no key", out, secrets.Writes())
				}
				got := w.LastCert()
				iss := api.FindCondition(got.Status.Conditions, api.CertificateConditionIssuing)
				ready := api.FindCondition(got.Status.Conditions, api.CertificateConditionReady)
				for _, c := range []*api.Condition{iss, ready} {
					if c == nil || c.Status != api.ConditionFalse || c.Reason != certificates.ReasonKeyNotAllowed || !strings.HasPrefix(c.Message, refusal) {
						t.Fatalf("condition %+v, want False %s starting %q", c, certificates.ReasonKeyNotAllowed, refusal)
					}
				}
				if got.Status.FailedIssuanceAttempts == nil || *got.Status.FailedIssuanceAttempts != 1 || got.Status.LastFailureTime == nil {
					t.Fatalf("failure not recorded: %+v", got.Status)
				}
				if next := w.Calls[0].NextRunAt; !next.Equal(ct.T0.Add(certificates.Backoff(1))) {
					t.Fatalf("next run %s, want after the backoff", next)
				}
			case tc.wantRequeue > 0:
				if out.Wrote || len(w.Calls) != 0 || len(secrets.Writes()) != 0 || !out.RequeueAt.Equal(ct.T0.Add(tc.wantRequeue)) {
					t.Fatalf("outcome %+v, writer %v, secrets %v: want nothing written and a look again at +%s", out, w.Ops(), secrets.Writes(), tc.wantRequeue)
				}
			default:
				if !out.Wrote || len(secrets.Writes()) != 1 {
					t.Fatalf("outcome %+v, secret writes %v: want the key stored", out, secrets.Writes())
				}
			}
		})
	}
}
