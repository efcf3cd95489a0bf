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

// KeyManagerStep is docs/design/certificate-controllers.md's keymanager: while Issuing is True it
// makes sure status.nextPrivateKeySecretName names a secret holding a
// PKCS#8 private key that matches spec.privateKey.
//
// Before a key is generated, env.KeyPolicy (the policy approver's) is
// asked whether any applicable CertificateRequestPolicy allows
// spec.privateKey: if none does, no key is generated and the issuance
// fails (Issuing=False, reason KeyNotAllowed, the failure backoff; a
// change of the spec is tried at once). Keys come from env.Keys, the key
// generation stage that shares expensive keys out per namespace
// (core/certificates/keygen): a busy stage defers the step.
//
// certfn differs from cert-manager in one way: the next-key secret has a
// deterministic name ("<certificate>-next-private-key"), so duplicate or
// reordered messages cannot create two keys; Create is exclusive, and a
// loser adopts the winner's key. With rotationPolicy Never the key of the
// currently stored secret is reused when it still matches the spec and
// the secret is this Certificate's (its certificate-name annotation).
func KeyManagerStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	if !st.IsIssuing() {
		return cleanup(ctx, env, st)
	}
	if why, err := st.skipIssuance(ctx); why != "" || err != nil {
		return Outcome{Why: why}, err
	}
	crt := st.Cert
	name := NextKeySecretName(crt.Name)
	if n := crt.Status.NextPrivateKeySecretName; n != nil && *n != "" {
		name = *n
	}
	if crt.Spec.RotationPolicyOrDefault() == api.RotationPolicyNever {
		if err := st.LoadSecret(ctx); err != nil { // the stored key may be reused
			return Outcome{}, err
		}
	}
	sec, err := env.Secrets.Get(ctx, crt.Namespace, name)
	switch {
	case errors.Is(err, ports.ErrNotFound) && recorded(crt, name):
		return forgetGone(ctx, env, st)
	case errors.Is(err, ports.ErrNotFound):
		sec, err = create(ctx, env, st, name)
		if errors.Is(err, errBeingCreated) {
			return Outcome{RequeueAt: st.Now.Add(FollowUpGrace), Why: err.Error()}, nil
		}
		if out, done, err := notGenerated(ctx, env, st, err); done {
			return out, err
		}
	case err != nil:
		return Outcome{}, fmt.Errorf("read next private key secret %s/%s: %w", crt.Namespace, name, err)
	default:
		if !owned(&sec, crt) {
			// Not ours: never overwrite it. Report and wait for a person.
			return Outcome{RequeueAt: st.Now.Add(env.WaitPoll), Why: "the next private key secret exists and is not this Certificate's"}, nil
		}
		key, derr := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
		if ok, _ := keyOK(key, derr, crt); !ok {
			// spec.privateKey changed during the issuance (or the data is
			// damaged): regenerate into the same secret (docs/design/certificate-controllers.md).
			sec, err = generate(ctx, env, st, name)
			if out, done, err := notGenerated(ctx, env, st, err); done {
				return out, err
			}
			if err := env.Secrets.Put(ctx, sec); err != nil {
				return Outcome{}, fmt.Errorf("replace next private key secret %s/%s: %w", crt.Namespace, name, err)
			}
		}
	}
	st.SetNextKeySecret(&sec)
	if n := crt.Status.NextPrivateKeySecretName; n != nil && *n == name {
		return Outcome{Why: "the next private key is ready"}, nil
	}
	crt.Status.NextPrivateKeySecretName = &name
	if st.reusedKey {
		st.Record(kernel.Normal("Reused", fmt.Sprintf("Reusing private key stored in existing Secret resource %q", crt.Spec.SecretName)))
	} else {
		st.Record(kernel.Normal("Generated", fmt.Sprintf("Stored new private key in temporary Secret resource %q", name)))
	}
	if err := env.Writer.UpdateCertificate(ctx, st, st.Now.Add(FollowUpGrace)); err != nil {
		return Outcome{}, fmt.Errorf("record next private key secret: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

// recorded says whether status already names the next-key secret name.
func recorded(crt *api.Certificate, name string) bool {
	n := crt.Status.NextPrivateKeySecretName
	return n != nil && *n == name
}

// forgetGone handles a next-key secret that status names but that is
// gone. The issuance that completes deletes it (issuing.forgetNextKey), so
// this reconcile most likely read the Certificate before that completion,
// while another reconcile of the same key went on (on a cloud queue, a
// duplicate message in another invocation): creating the secret again
// would leave a private key nothing refers to (0–9 of 600
// Certificates per revision on the AWS shape). Instead the name is unset
// with a write conditional on the version read: a stale read loses that
// race and the reconcile runs again on fresh state; otherwise (someone
// deleted the secret during the issuance) the next step creates a new key.
func forgetGone(ctx context.Context, env *Env, st *State) (Outcome, error) {
	st.Cert.Status.NextPrivateKeySecretName = nil
	st.SetNextKeySecret(nil)
	if err := env.Writer.UpdateCertificate(ctx, st, st.Now.Add(FollowUpGrace)); err != nil {
		return Outcome{}, fmt.Errorf("forget the next private key secret that is gone: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

func keyOK(key crypto.Signer, err error, crt *api.Certificate) (bool, string) {
	if err != nil {
		return false, "undecodable"
	}
	return pki.KeyMatchesSpec(key, crt.Spec.PrivateKey)
}

func create(ctx context.Context, env *Env, st *State, name string) (ports.Secret, error) {
	sec, err := generate(ctx, env, st, name)
	if err != nil {
		return ports.Secret{}, err
	}
	err = env.Secrets.Create(ctx, sec)
	if errors.Is(err, ports.ErrAlreadyExists) {
		// A concurrent invocation won: adopt its key.
		got, gerr := env.Secrets.Get(ctx, sec.Namespace, name)
		if errors.Is(gerr, ports.ErrNotFound) {
			return ports.Secret{}, errBeingCreated
		}
		if gerr != nil {
			return ports.Secret{}, fmt.Errorf("read next private key secret %s/%s after a concurrent create: %w", sec.Namespace, name, gerr)
		}
		return got, nil
	}
	if err != nil {
		return ports.Secret{}, fmt.Errorf("create next private key secret %s/%s: %w", sec.Namespace, name, err)
	}
	return sec, nil
}

// errBeingCreated: the next-key secret exists but holds nothing readable
// yet. A store whose Create is two calls (Secret Manager: the secret, then
// its first version) shows this while another Create is between them, and
// after a Create whose answer was lost or that died there, until the store
// lets a later Create take the empty secret over (secretmanager.ShellGrace,
// a minute). An error here was retried at once, again and again, into the
// dead-letter queue (fault harness on Cloud Run); the step waits
// FollowUpGrace instead.
var errBeingCreated = errors.New("the next private key secret is being created (it exists and holds no key yet): looking again later")

// generate builds the next-key secret: a fresh key, or with rotationPolicy
// Never the currently stored key when it still matches spec.privateKey.
func generate(ctx context.Context, env *Env, st *State, name string) (ports.Secret, error) {
	crt := st.Cert
	var keyPEM []byte
	// Only a key this Certificate wrote is reused: the stored secret's
	// certificate-name annotation names it (a key an operator or another
	// Certificate put there is never signed for this one).
	if crt.Spec.RotationPolicyOrDefault() == api.RotationPolicyNever && st.Secret != nil &&
		st.Secret.Annotations[api.AnnotationCertificateName] == crt.Name {
		if issued, _ := st.Parse(); issued != nil {
			if ok, _ := pki.KeyMatchesSpec(issued.Key, crt.Spec.PrivateKey); ok {
				b, err := pki.EncodePKCS8PEM(issued.Key)
				if err != nil {
					return ports.Secret{}, fmt.Errorf("re-encode the stored private key: %w", err)
				}
				keyPEM = b
				st.reusedKey = true
			}
		}
	}
	if keyPEM == nil {
		key, err := newKey(ctx, env, crt)
		if err != nil {
			return ports.Secret{}, err
		}
		b, err := pki.EncodePKCS8PEM(key)
		if err != nil {
			return ports.Secret{}, fmt.Errorf("encode private key: %w", err)
		}
		keyPEM = b
		if env.Metrics != nil {
			env.Metrics.Inc("certfn_private_keys_generated_total", "namespace", crt.Namespace)
		}
	}
	return ports.Secret{
		Namespace: crt.Namespace,
		Name:      name,
		Data:      map[string][]byte{"tls.key": keyPEM},
		Labels:    map[string]string{api.LabelNextPrivateKey: "true"},
		Annotations: map[string]string{
			api.AnnotationCertificateName: crt.Name,
			api.LabelNextPrivateKey:       "true",
		},
	}, nil
}

func owned(sec *ports.Secret, crt *api.Certificate) bool {
	return sec.Annotations[api.AnnotationCertificateName] == crt.Name && sec.Labels[api.LabelNextPrivateKey] == "true"
}

// cleanup is docs/design/certificate-controllers.md's "Issuing is False or not set" branch: the owned
// next-private-key secret is deleted and status.nextPrivateKeySecretName
// unset (after a failed issuance; a successful one already did both). A
// secret the Certificate does not own is never deleted.
func cleanup(ctx context.Context, env *Env, st *State) (Outcome, error) {
	n := st.Cert.Status.NextPrivateKeySecretName
	if n == nil || *n == "" {
		return Outcome{Why: "not issuing and no next private key to clean up"}, nil
	}
	sec, err := env.Secrets.Get(ctx, st.Cert.Namespace, *n)
	switch {
	case err == nil && owned(&sec, st.Cert):
		if err := env.Secrets.Delete(ctx, st.Cert.Namespace, *n); err != nil {
			return Outcome{}, fmt.Errorf("delete next private key secret %s/%s: %w", st.Cert.Namespace, *n, err)
		}
	case err != nil && !errors.Is(err, ports.ErrNotFound):
		return Outcome{}, fmt.Errorf("read next private key secret %s/%s: %w", st.Cert.Namespace, *n, err)
	}
	st.Cert.Status.NextPrivateKeySecretName = nil
	st.SetNextKeySecret(nil)
	if err := env.Writer.UpdateCertificate(ctx, st, st.NextRunAt); err != nil {
		return Outcome{}, fmt.Errorf("unset next private key secret: %w", err)
	}
	return Outcome{Wrote: true}, nil
}

// errKeyRefused carries KeyPolicy's refusal out of generate.
type errKeyRefused struct{ msg string }

func (e *errKeyRefused) Error() string { return e.msg }

// newKey generates crt's next private key: unless env.KeyPolicy refuses
// it (an *errKeyRefused), through env.Keys (which may be busy:
// ErrKeyGenerationBusy).
func newKey(ctx context.Context, env *Env, crt *api.Certificate) (crypto.Signer, error) {
	if env.KeyPolicy != nil {
		msg, err := env.KeyPolicy.RefuseKey(ctx, crt)
		if err != nil {
			return nil, fmt.Errorf("check spec.privateKey against the policies: %w", err)
		}
		if msg != "" {
			return nil, &errKeyRefused{msg: msg}
		}
	}
	var (
		key crypto.Signer
		err error
	)
	if env.Keys != nil {
		key, err = env.Keys.Generate(ctx, crt.Namespace, crt.Spec.PrivateKey)
	} else {
		key, err = pki.GenerateKey(crt.Spec.PrivateKey)
	}
	if err != nil {
		if errors.Is(err, ErrKeyGenerationBusy) {
			return nil, err
		}
		return nil, fmt.Errorf("generate private key: %w", err)
	}
	return key, nil
}

// notGenerated handles generate's errors: done is false when err is nil.
// A busy key generation stage looks again after
// KeyGenerationRetry; a key no policy allows fails the
// issuance (refuse).
func notGenerated(ctx context.Context, env *Env, st *State, err error) (Outcome, bool, error) {
	var refused *errKeyRefused
	switch {
	case err == nil:
		return Outcome{}, false, nil
	case errors.Is(err, ErrKeyGenerationBusy):
		if env.Metrics != nil {
			env.Metrics.Inc("certfn_private_key_generations_deferred_total", "namespace", st.Cert.Namespace)
		}
		return Outcome{RequeueAt: st.Now.Add(KeyGenerationRetry), Why: err.Error()}, true, nil
	case errors.As(err, &refused):
		out, err := refuse(ctx, env, st, refused.msg)
		return out, true, err
	}
	return Outcome{}, true, err
}

// refuse fails the issuance of a Certificate whose spec.privateKey no
// applicable policy allows, as a denied request fails it (one more failed
// attempt, lastFailureTime, the backoff; BackoffRemaining retries
// at once once the spec changes), without a key or a request: Issuing and
// Ready are False with reason ReasonKeyNotAllowed and msg.
func refuse(ctx context.Context, env *Env, st *State, msg string) (Outcome, error) {
	st.Record(kernel.Warning(ReasonKeyNotAllowed, msg))
	return recordFailedIssuance(ctx, env, st, ReasonKeyNotAllowed, func(n int, retry string) string {
		return fmt.Sprintf("%s (attempt %d; next attempt after %s, or at once when the spec changes)", msg, n, retry)
	}, "record the refused private key")
}
