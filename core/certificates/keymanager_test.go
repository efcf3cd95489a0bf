package certificates_test

import (
	"bytes"
	"context"
	"crypto"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

const nextKeyName = "web-next-private-key"

func issuing(opts ...func(*api.Certificate)) *api.Certificate {
	return ct.Cert(append([]func(*api.Certificate){ct.WithIssuing("Renewing", ct.T0.Add(-time.Minute))}, opts...)...)
}

// storedKey decodes tls.key of the next-key secret and checks its shape:
// PKCS#8 (docs/design/certificate-controllers.md), owned and labelled.
func storedKey(t *testing.T, s *ct.MemSecrets) crypto.Signer {
	t.Helper()
	sec, ok := s.Lookup(ct.Namespace, nextKeyName)
	if !ok {
		t.Fatal("next private key secret does not exist")
	}
	if b, _ := pem.Decode(sec.Data["tls.key"]); b == nil || b.Type != "PRIVATE KEY" {
		t.Fatalf("next private key is not PKCS#8 PEM")
	}
	if sec.Labels[api.LabelNextPrivateKey] != "true" || sec.Annotations[api.AnnotationCertificateName] != ct.CertName {
		t.Fatalf("next private key secret not labelled/owned: labels %v annotations %v", sec.Labels, sec.Annotations)
	}
	k, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
	if err != nil {
		t.Fatalf("decode next private key: %v", err)
	}
	return k
}

func samePublic(a, b crypto.Signer) bool { return pki.PublicKeysEqual(a.Public(), b.Public()) }

func TestKeyManagerStep(t *testing.T) {
	ecKey := func(t *testing.T) crypto.Signer { return ct.Key(t, nil) }
	for _, tc := range []struct {
		name string
		crt  *api.Certificate
		// existing next-key secret (nil: none); built from crt
		existing func(t *testing.T, crt *api.Certificate) *ports.Secret
		// stored issued secret (rotationPolicy Never)
		issued     func(t *testing.T, crt *api.Certificate) *ports.Secret
		wantWrote  bool
		wantWrites []string // secret store writes
		wantStatus bool     // status.nextPrivateKeySecretName written
		checkKey   func(t *testing.T, got crypto.Signer, existing, issued *ports.Secret)
		// generated is how many keys the step counts as generated.
		generated float64
	}{
		{
			name: "creates the next key when missing", generated: 1,
			crt:        issuing(),
			wantWrote:  true,
			wantWrites: []string{"create default/" + nextKeyName},
			wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, _, _ *ports.Secret) {
				if ok, why := pki.KeyMatchesSpec(got, &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 256}); !ok {
					t.Fatalf("generated key does not match the spec: %s", why)
				}
			},
		},
		{
			name: "creates an RSA key as the spec asks", generated: 1,
			crt:       issuing(ct.WithKeySpec(api.RSAKeyAlgorithm, 2048)),
			wantWrote: true, wantWrites: []string{"create default/" + nextKeyName}, wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, _, _ *ports.Secret) {
				if ok, why := pki.KeyMatchesSpec(got, &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 2048}); !ok {
					t.Fatal(why)
				}
			},
		},
		{
			name: "adopts an existing owned key that matches (status not yet set)",
			crt:  issuing(),
			existing: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NextKeySecret(t, crt, ecKey(t))
				return &s
			},
			wantWrote: true, wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, existing, _ *ports.Secret) {
				if !bytes.Equal(ct.KeyPEM(t, got), existing.Data["tls.key"]) {
					t.Fatal("the existing key was replaced")
				}
			},
		},
		{
			name: "nothing to do when status names a matching key",
			crt:  issuing(ct.WithNextKey(nextKeyName)),
			existing: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NextKeySecret(t, crt, ecKey(t))
				return &s
			},
			checkKey: func(t *testing.T, got crypto.Signer, existing, _ *ports.Secret) {
				if !bytes.Equal(ct.KeyPEM(t, got), existing.Data["tls.key"]) {
					t.Fatal("the existing key was replaced")
				}
			},
		},
		{
			name: "regenerates a key that no longer matches spec.privateKey", generated: 1,
			crt: issuing(ct.WithNextKey(nextKeyName), ct.WithKeySpec(api.ECDSAKeyAlgorithm, 384)),
			existing: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NextKeySecret(t, crt, ecKey(t)) // P-256
				return &s
			},
			wantWrites: []string{"put default/" + nextKeyName},
			checkKey: func(t *testing.T, got crypto.Signer, _, _ *ports.Secret) {
				if ok, why := pki.KeyMatchesSpec(got, &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 384}); !ok {
					t.Fatalf("key not regenerated as P-384: %s", why)
				}
			},
		},
		{
			name: "regenerates an undecodable key", generated: 1,
			crt: issuing(ct.WithNextKey(nextKeyName)),
			existing: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NextKeySecret(t, crt, ecKey(t))
				s.Data["tls.key"] = []byte("garbage")
				return &s
			},
			wantWrites: []string{"put default/" + nextKeyName},
			checkKey: func(t *testing.T, got crypto.Signer, _, _ *ports.Secret) {
				if got == nil {
					t.Fatal("no key")
				}
			},
		},
		{
			name: "rotationPolicy Never reuses the stored key that matches the spec",
			crt:  issuing(ct.WithRotationPolicy(api.RotationPolicyNever)),
			issued: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NewCA(t).IssueSecret(t, crt, nil, ct.Leaf{}).Secret
				return &s
			},
			wantWrote: true, wantWrites: []string{"create default/" + nextKeyName}, wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, _, issued *ports.Secret) {
				k, err := pki.DecodePrivateKeyPEM(issued.Data["tls.key"])
				if err != nil || !samePublic(got, k) {
					t.Fatal("rotationPolicy Never did not reuse the stored key")
				}
			},
		},
		{
			name: "rotationPolicy Never generates when the stored key no longer matches", generated: 1,
			crt: issuing(ct.WithRotationPolicy(api.RotationPolicyNever)),
			issued: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				old := ct.Cert(ct.WithKeySpec(api.ECDSAKeyAlgorithm, 384))
				s := ct.NewCA(t).IssueSecret(t, old, nil, ct.Leaf{}).Secret
				return &s
			},
			wantWrote: true, wantWrites: []string{"create default/" + nextKeyName}, wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, _, issued *ports.Secret) {
				k, _ := pki.DecodePrivateKeyPEM(issued.Data["tls.key"])
				if samePublic(got, k) {
					t.Fatal("reused a stored key that does not match spec.privateKey")
				}
				if ok, why := pki.KeyMatchesSpec(got, &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 256}); !ok {
					t.Fatal(why)
				}
			},
		},
		{
			// The secret names a Certificate that no longer exists: this
			// one owns it now (cert-manager's rule), but the key in it is
			// not one it wrote, so it is never signed for this Certificate.
			name: "rotationPolicy Never does not reuse a key another Certificate wrote", generated: 1,
			crt: issuing(ct.WithRotationPolicy(api.RotationPolicyNever)),
			issued: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NewCA(t).IssueSecret(t, crt, nil, ct.Leaf{}).Secret
				s.Annotations[api.AnnotationCertificateName] = "gone"
				return &s
			},
			wantWrote: true, wantWrites: []string{"create default/" + nextKeyName}, wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, _, issued *ports.Secret) {
				k, _ := pki.DecodePrivateKeyPEM(issued.Data["tls.key"])
				if samePublic(got, k) {
					t.Fatal("rotationPolicy Never reused a key another Certificate wrote")
				}
			},
		},
		{
			name: "rotationPolicy Always never reuses the stored key", generated: 1,
			crt: issuing(ct.WithRotationPolicy(api.RotationPolicyAlways)),
			issued: func(t *testing.T, crt *api.Certificate) *ports.Secret {
				s := ct.NewCA(t).IssueSecret(t, crt, nil, ct.Leaf{}).Secret
				return &s
			},
			wantWrote: true, wantWrites: []string{"create default/" + nextKeyName}, wantStatus: true,
			checkKey: func(t *testing.T, got crypto.Signer, _, issued *ports.Secret) {
				k, _ := pki.DecodePrivateKeyPEM(issued.Data["tls.key"])
				if samePublic(got, k) {
					t.Fatal("rotationPolicy Always reused the stored key")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ct.NewMemSecrets()
			var existing, issued *ports.Secret
			if tc.existing != nil {
				existing = tc.existing(t, tc.crt)
				secrets.Set(*existing)
			}
			if tc.issued != nil {
				issued = tc.issued(t, tc.crt)
			}
			st := ct.State(tc.crt, issued)
			w := &ct.Writer{}
			env, _, m := ct.Env(secrets, w)
			out, err := certificates.KeyManagerStep(context.Background(), env, st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if out.Wrote != tc.wantWrote {
				t.Fatalf("Wrote = %v, want %v (calls %v)", out.Wrote, tc.wantWrote, w.Ops())
			}
			if got := secrets.Writes(); strings.Join(got, ",") != strings.Join(tc.wantWrites, ",") {
				t.Fatalf("secret writes = %v, want %v", got, tc.wantWrites)
			}
			updates := w.Only("UpdateCertificate")
			if tc.wantStatus {
				if len(updates) != 1 || updates[0].Cert.Status.NextPrivateKeySecretName == nil ||
					*updates[0].Cert.Status.NextPrivateKeySecretName != nextKeyName {
					t.Fatalf("status.nextPrivateKeySecretName not recorded: %v", w.Ops())
				}
				if want := ct.T0.Add(certificates.FollowUpGrace); !updates[0].NextRunAt.Equal(want) {
					t.Errorf("nextRunAt = %s, want %s", updates[0].NextRunAt, want)
				}
			} else if len(w.Calls) != 0 {
				t.Fatalf("unexpected writes %v", w.Ops())
			}
			got := storedKey(t, secrets)
			tc.checkKey(t, got, existing, issued)
			// The state caches what was stored, for the next steps.
			nk, err := st.NextKeySecret(context.Background(), env)
			if err != nil || nk == nil {
				t.Fatalf("state's next key = %v, %v", nk, err)
			}
			if k, err := pki.DecodePrivateKeyPEM(nk.Data["tls.key"]); err != nil || !samePublic(k, got) {
				t.Fatal("state's next key differs from the stored one")
			}
			if got := m.Get("certfn_private_keys_generated_total"); got != tc.generated {
				t.Errorf("certfn_private_keys_generated_total = %v, want %v", got, tc.generated)
			}
		})
	}
}

func TestKeyManagerStepNeverOverwritesASecretItDoesNotOwn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tweak func(*ports.Secret)
	}{
		{"no next-private-key label", func(s *ports.Secret) { delete(s.Labels, api.LabelNextPrivateKey) }},
		{"owned by another certificate", func(s *ports.Secret) { s.Annotations[api.AnnotationCertificateName] = "other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := issuing(ct.WithKeySpec(api.ECDSAKeyAlgorithm, 384))
			foreign := ct.NextKeySecret(t, crt, ct.Key(t, nil)) // P-256: would be "regenerated" if owned
			tc.tweak(&foreign)
			secrets := ct.NewMemSecrets(foreign)
			w := &ct.Writer{}
			env, _, _ := ct.Env(secrets, w)
			out, err := certificates.KeyManagerStep(context.Background(), env, ct.State(crt, nil))
			if err != nil {
				t.Fatal(err)
			}
			if out.Wrote || len(w.Calls) != 0 || len(secrets.Writes()) != 0 {
				t.Fatalf("touched a foreign secret: outcome %+v, writer %v, secrets %v", out, w.Ops(), secrets.Writes())
			}
			if want := ct.T0.Add(env.WaitPoll); !out.RequeueAt.Equal(want) {
				t.Fatalf("RequeueAt = %s, want now+WaitPoll", out.RequeueAt)
			}
			got, _ := secrets.Lookup(ct.Namespace, nextKeyName)
			if !bytes.Equal(got.Data["tls.key"], foreign.Data["tls.key"]) {
				t.Fatal("foreign secret changed")
			}
		})
	}
}

// A Certificate that does not own spec.secretName (another Certificate of
// the namespace names it and owns it) makes no key, even while Issuing is
// True: the trigger stops its issuance.
func TestKeyManagerStepNotOwnerMakesNoKey(t *testing.T) {
	other := ct.Cert(ct.Named("api")) // same creationTimestamp: first by name
	for _, tc := range []struct {
		name     string
		crt      *api.Certificate
		existing func(t *testing.T, crt *api.Certificate) []ports.Secret
		issued   func(t *testing.T) *ports.Secret
	}{
		{"no next key yet (would be created)", issuing(), nil, nil},
		{"a next key that no longer matches spec.privateKey (would be regenerated)",
			issuing(ct.WithNextKey(nextKeyName), ct.WithKeySpec(api.ECDSAKeyAlgorithm, 384)),
			func(t *testing.T, crt *api.Certificate) []ports.Secret {
				return []ports.Secret{ct.NextKeySecret(t, crt, ct.Key(t, nil))}
			}, nil},
		{"rotationPolicy Never and the owner's key in the secret (would be reused)", issuing(ct.WithRotationPolicy(api.RotationPolicyNever)), nil,
			func(t *testing.T) *ports.Secret {
				s := ct.NewCA(t).IssueSecret(t, other, nil, ct.Leaf{}).Secret
				return &s
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var existing []ports.Secret
			if tc.existing != nil {
				existing = tc.existing(t, tc.crt)
			}
			var issued *ports.Secret
			if tc.issued != nil {
				issued = tc.issued(t)
			}
			secrets := ct.NewMemSecrets(existing...)
			w := &ct.Writer{}
			env, _, m := ct.Env(secrets, w)
			out, err := certificates.KeyManagerStep(context.Background(), env, ct.Sharing(ct.State(tc.crt, issued), other))
			if err != nil || out.Wrote || len(w.Calls) != 0 || len(secrets.Calls) != 0 {
				t.Fatalf("outcome %+v err %v writer %v secrets %v; want nothing", out, err, w.Ops(), secrets.Calls)
			}
			if !strings.Contains(out.Why, "not the owner") || m.Get("certfn_private_keys_generated_total") != 0 {
				t.Fatalf("why %q, keys generated %v", out.Why, m.Get("certfn_private_keys_generated_total"))
			}
		})
	}
}

// Create is exclusive: when another invocation created the secret between
// our Get and Create, we adopt its key instead of overwriting it.
func TestKeyManagerStepCreateRaceAdoptsTheWinnersKey(t *testing.T) {
	crt := issuing()
	winner := ct.NextKeySecret(t, crt, ct.Key(t, nil))
	secrets := ct.NewMemSecrets()
	secrets.BeforeCreate = func(s *ct.MemSecrets, _ ports.Secret) {
		s.BeforeCreate = nil
		s.Set(winner)
	}
	w := &ct.Writer{}
	env, _, _ := ct.Env(secrets, w)
	st := ct.State(crt, nil)
	out, err := certificates.KeyManagerStep(context.Background(), env, st)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	if !out.Wrote || len(w.Only("UpdateCertificate")) != 1 {
		t.Fatalf("status not recorded: %+v %v", out, w.Ops())
	}
	got, _ := secrets.Lookup(ct.Namespace, nextKeyName)
	if !bytes.Equal(got.Data["tls.key"], winner.Data["tls.key"]) {
		t.Fatal("the winner's key was overwritten")
	}
	nk, _ := st.NextKeySecret(context.Background(), env)
	if nk == nil || !bytes.Equal(nk.Data["tls.key"], winner.Data["tls.key"]) {
		t.Fatal("the state does not carry the winner's key")
	}
}

// A next-key secret that status names but that is gone is not created
// again: the reconcile most likely read the Certificate before another
// completed the issuance and deleted it (orphaned keys). The
// name is unset with a write conditional on the version read, so a stale
// reconcile loses the race and leaves no secret behind; on fresh state
// the following step creates a new key.
func TestKeyManagerStepDoesNotRecreateARecordedKeyThatIsGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conflict bool
	}{
		{"stale read: the write loses its race", true},
		{"fresh read: someone deleted the secret", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := issuing(func(c *api.Certificate) { n := nextKeyName; c.Status.NextPrivateKeySecretName = &n })
			secrets := ct.NewMemSecrets()
			w := &ct.Writer{}
			if tc.conflict {
				w.Err = ports.ErrConflict
			}
			env, _, _ := ct.Env(secrets, w)
			out, err := certificates.KeyManagerStep(context.Background(), env, ct.State(crt, nil))
			if got := secrets.Writes(); len(got) != 0 {
				t.Fatalf("secret writes %v: a key nothing refers to", got)
			}
			if tc.conflict { // (the double records successful writes only)
				if !errors.Is(err, ports.ErrConflict) {
					t.Fatalf("Step: %v, want the conflict (run again on fresh state)", err)
				}
				return
			}
			updates := w.Only("UpdateCertificate")
			if len(updates) != 1 || updates[0].Cert.Status.NextPrivateKeySecretName != nil {
				t.Fatalf("want one write unsetting the name: %v", w.Ops())
			}
			if err != nil || !out.Wrote {
				t.Fatalf("Step: %+v %v", out, err)
			}
			// The next step, on the state it wrote, creates a new key.
			out, err = certificates.KeyManagerStep(context.Background(), env, ct.State(updates[0].Cert, nil))
			if err != nil || !out.Wrote || strings.Join(secrets.Writes(), ",") != "create default/"+nextKeyName {
				t.Fatalf("second step: %+v %v, writes %v", out, err, secrets.Writes())
			}
		})
	}
}

func TestKeyManagerStepNothingWhenNotIssuing(t *testing.T) {
	for _, crt := range []*api.Certificate{
		ct.Cert(),
		ct.Cert(func(c *api.Certificate) {
			api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionFalse, Reason: "Failed"}, ct.T0)
		}),
	} {
		secrets := ct.NewMemSecrets()
		w := &ct.Writer{}
		env, _, _ := ct.Env(secrets, w)
		out, err := certificates.KeyManagerStep(context.Background(), env, ct.State(crt, nil))
		if err != nil || out.Wrote || !out.RequeueAt.IsZero() || len(w.Calls) != 0 || len(secrets.Calls) != 0 {
			t.Fatalf("not issuing: outcome %+v err %v writer %v secrets %v", out, err, w.Ops(), secrets.Calls)
		}
	}
}

func TestKeyManagerStepErrors(t *testing.T) {
	boom := errors.New("secret store unavailable")
	for _, tc := range []struct {
		name   string
		setup  func(s *ct.MemSecrets, w *ct.Writer)
		target error
		ctx    string
	}{
		{"get fails", func(s *ct.MemSecrets, _ *ct.Writer) { s.GetErr = boom }, boom, "read next private key secret"},
		{"create fails", func(s *ct.MemSecrets, _ *ct.Writer) { s.CreateErr = boom }, boom, "create next private key secret"},
		{"status write loses a race", func(_ *ct.MemSecrets, w *ct.Writer) { w.Err = ports.ErrConflict }, ports.ErrConflict, "record next private key secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ct.NewMemSecrets()
			w := &ct.Writer{}
			tc.setup(secrets, w)
			env, _, _ := ct.Env(secrets, w)
			out, err := certificates.KeyManagerStep(context.Background(), env, ct.State(issuing(), nil))
			if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.ctx) || out.Wrote {
				t.Fatalf("Step = %+v, %v; want %v with context %q", out, err, tc.target, tc.ctx)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("error mentions key material: %v", err)
			}
		})
	}
}

// Seed 002: when Issuing is False (a failed issuance), the owned next-key
// secret is deleted and status.nextPrivateKeySecretName unset; a secret the
// Certificate does not own is left alone (the field is still unset).
func TestKeyManagerStepCleansUpTheNextKeyWhenNotIssuing(t *testing.T) {
	failed := func(c *api.Certificate) {
		api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionFalse, Reason: "Failed"}, ct.T0)
	}
	for _, tc := range []struct {
		name        string
		owned       bool
		wantDeleted bool
	}{
		{"owned secret deleted", true, true},
		{"foreign secret kept", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := ct.Cert(failed, ct.WithNextKey(nextKeyName))
			secrets := ct.NewMemSecrets()
			sec := ct.NextKeySecret(t, crt, ct.Key(t, nil))
			if !tc.owned {
				sec.Annotations[api.AnnotationCertificateName] = "someone-else"
			}
			if err := secrets.Put(context.Background(), sec); err != nil {
				t.Fatal(err)
			}
			w := &ct.Writer{}
			env, _, _ := ct.Env(secrets, w)
			st := ct.State(crt, nil)
			st.NextRunAt = ct.T0.Add(time.Hour)
			out, err := certificates.KeyManagerStep(context.Background(), env, st)
			if err != nil || !out.Wrote {
				t.Fatalf("outcome %+v err %v, want a write", out, err)
			}
			if _, ok := secrets.Lookup(ct.Namespace, nextKeyName); ok == tc.wantDeleted {
				t.Fatalf("secret exists = %v, want deleted = %v", ok, tc.wantDeleted)
			}
			got := w.LastCert()
			if got == nil || got.Status.NextPrivateKeySecretName != nil {
				t.Fatalf("status.nextPrivateKeySecretName not unset: %+v", got)
			}
			if c := w.Only("UpdateCertificate"); len(c) != 1 || !c[0].NextRunAt.Equal(ct.T0.Add(time.Hour)) {
				t.Fatalf("the backoff due time was not kept: %+v", c)
			}
		})
	}
}

// A next-key secret that exists but holds no key yet (Secret Manager's
// secret without its first version: a concurrent Create between its two
// calls, or one whose answer was lost) is waited for, not retried at once
// as an error: on Cloud Run that went on into the dead-letter queue.
func TestKeyManagerStepWaitsForASecretBeingCreated(t *testing.T) {
	secrets := ct.NewMemSecrets()
	secrets.CreateErr = ports.ErrAlreadyExists // exists, but Get finds no key
	w := &ct.Writer{}
	env, _, _ := ct.Env(secrets, w)
	out, err := certificates.KeyManagerStep(context.Background(), env, ct.State(issuing(), nil))
	if err != nil || out.Wrote || !out.RequeueAt.Equal(ct.T0.Add(certificates.FollowUpGrace)) || !strings.Contains(out.Why, "being created") {
		t.Fatalf("Step = %+v, %v; want a wait of FollowUpGrace", out, err)
	}
	if len(w.Calls) != 0 {
		t.Fatalf("writes %v", w.Ops())
	}
}
