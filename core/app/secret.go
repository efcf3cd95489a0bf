package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/validation"
)

// Secret manifests (core/v1 Secret) are applied into the secret store, not
// the state store: cert-manager's documentation pairs every DNS-01 issuer
// with its credentials Secret, and a team copies both. Who may write one is
// decided by the bindings (verbs create/update/delete on "secrets"); nobody
// reads one back through the service (Get and List refuse), so its values
// never leave the secret store through certfn's API.

// errSecretsRead is the answer to a read of a Secret where the service may
// not read the secret store (the cloud APIs).
var errSecretsRead = "secrets are not read through this deployment's API: their values stay in the secret store " +
	"(locally, `certfn get secrets` lists names, keys and expiry, never values)"

// secretStoreKind reports whether key's kind lives in the secret store.
func secretStoreKind(kind string) bool {
	info, ok := api.KindInfoFor(kind)
	return ok && info.InSecretStore
}

// refuseSecretWrites is the answer when this role's service may not write
// the secret store (the cloud APIs hold no secret store permission).
func (s *Service) refuseSecretWrites(key api.Key) error {
	if s.writesSecrets {
		return nil
	}
	return forbidden(fmt.Errorf("%s: this deployment's API has no access to the secret store; write the secret with the cloud's own "+
		"tools under certfn's naming (docs/reference/api.md, \"Secrets\")", key))
}

// existingSecret reads the secret Apply would replace (nil: none).
func (s *Service) existingSecret(ctx context.Context, key api.Key) (*ports.Secret, error) {
	sec, err := s.secrets.Get(ctx, key.Namespace, key.Name)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read secret %s: %w", key, err)
	}
	return &sec, nil
}

// validateSecret checks what Kubernetes' API server checks of a Secret
// (keys, the kubernetes.io/tls type's two keys) and what the secret store
// can hold: at most api.MaxSecretDataBytes of values in all, and no
// immutable secret. Errors name the key, never a value.
func validateSecret(sec *api.Secret) (field string, err error) {
	key := api.KeyOf(sec)
	fail := func(path, format string, a ...any) (string, error) {
		return path, errs.Permanent(fmt.Errorf("%s is invalid: %s: %s", key, path, fmt.Sprintf(format, a...)))
	}
	for _, f := range []struct {
		path string
		keys []string
	}{{"data", api.SortedSecretKeys(sec.Data)}, {"stringData", sortedStrings(sec.StringData)}} {
		for _, k := range f.keys {
			if msg := api.SecretKeyProblem(k); msg != "" {
				return fail(f.path, "%s", msg)
			}
		}
	}
	if errl := validation.SecretFileAnnotations("metadata.annotations", sec.Annotations); len(errl) > 0 {
		return errl[0].Path, errs.Permanent(fmt.Errorf("%s is invalid: %w", key, errl.Err()))
	}
	data := sec.MergedData()
	total := 0
	for _, v := range data {
		total += len(v)
	}
	if total > api.MaxSecretDataBytes {
		return fail("data", "%d bytes of values: at most %d (64 KiB, the most a cloud secret store holds in one secret)", total, api.MaxSecretDataBytes)
	}
	if sec.Summary != nil {
		return fail("summary", "set by certfn when it lists secrets; leave it out of manifests")
	}
	if sec.Immutable != nil && *sec.Immutable {
		return fail("immutable", "immutable secrets are not supported: the secret store keeps versions instead (leave it out or false)")
	}
	if sec.Type == api.SecretTypeTLS {
		for _, k := range []string{"tls.crt", "tls.key"} {
			if _, ok := data[k]; !ok {
				return fail("data", "type %s requires the key %q", api.SecretTypeTLS, k)
			}
		}
	}
	return "", nil
}

// applySecret writes sec into the secret store (the whole secret, as
// `kubectl apply` of a Secret leaves exactly the keys given), unless it
// holds the same data, labels and annotations already.
func (s *Service) applySecret(ctx context.Context, sec *api.Secret, old *ports.Secret) (ApplyResult, error) {
	key := api.KeyOf(sec)
	want := ports.Secret{Namespace: key.Namespace, Name: key.Name, Data: sec.MergedData(),
		Labels: sec.Labels, Annotations: sec.Annotations}
	if sec.Type != "" && sec.Type != api.SecretTypeOpaque {
		// The type is kept where Kubernetes keeps it for readers of the
		// store (certfn's own secrets are kubernetes.io/tls).
		want.Annotations = maps.Clone(want.Annotations)
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[SecretTypeAnnotation] = sec.Type
	}
	res := ApplyResult{Key: key}
	if old != nil && sameSecret(*old, want) {
		return res, nil
	}
	if err := s.secrets.Put(ctx, want); err != nil {
		return res, fmt.Errorf("write secret %s: %w", key, err)
	}
	res.Created, res.Changed = old == nil, true
	return res, nil
}

// SecretTypeAnnotation records a Secret manifest's type (other than
// Opaque) on the stored secret.
const SecretTypeAnnotation = "certfn.io/secret-type"

func sameSecret(a, b ports.Secret) bool {
	return maps.EqualFunc(a.Data, b.Data, bytes.Equal) && mapsEqual(a.Labels, b.Labels) && mapsEqual(a.Annotations, b.Annotations)
}

func sortedStrings(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// deleteSecret removes the secret at key from the secret store (with
// dryRun: checks that it may and writes nothing); a missing one is
// ErrNotFound, as for every kind.
func (s *Service) deleteSecret(ctx context.Context, key api.Key, dryRun bool) error {
	if err := s.refuseSecretWrites(key); err != nil {
		return err
	}
	old, err := s.existingSecret(ctx, key)
	switch {
	case err != nil:
		return err
	case old == nil:
		return fmt.Errorf("get %s: %w", key, ports.ErrNotFound)
	}
	if dryRun {
		return nil
	}
	if err := s.secrets.Delete(ctx, key.Namespace, key.Name); err != nil {
		return fmt.Errorf("delete secret %s: %w", key, err)
	}
	return nil
}

// secretSummaries lists the secrets in namespace ("" = all) as
// api.Secret summaries (keys and the tls.crt expiry, never values), where
// the service reads the secret store and the store can list.
func (s *Service) secretSummaries(ctx context.Context, namespace string) ([]api.Object, error) {
	lister, ok := s.secrets.(ports.SecretLister)
	if !s.readSecrets || !ok {
		return nil, badRequestf("secrets: %s", errSecretsRead)
	}
	refs, err := lister.ListSecrets(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	out := make([]api.Object, 0, len(refs))
	for _, r := range refs {
		o, err := s.secretSummary(ctx, api.Key{Kind: api.KindSecret, Namespace: r.Namespace, Name: r.Name})
		if errors.Is(err, ports.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// secretSummary returns the secret at key as an api.Secret with its
// metadata and Summary only.
func (s *Service) secretSummary(ctx context.Context, key api.Key) (*api.Secret, error) {
	if !s.readSecrets {
		return nil, badRequestf("%s: %s", key, errSecretsRead)
	}
	sec, err := s.secrets.Get(ctx, key.Namespace, key.Name)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	info, _ := api.KindInfoFor(api.KindSecret)
	out := info.New().(*api.Secret)
	out.Name, out.Namespace, out.Labels, out.Annotations = key.Name, key.Namespace, sec.Labels, sec.Annotations
	out.Type = sec.Annotations[SecretTypeAnnotation]
	if _, hasKey := sec.Data["tls.key"]; out.Type == "" && hasKey {
		out.Type = api.SecretTypeTLS
	}
	out.Summary = &api.SecretSummary{Keys: api.SortedSecretKeys(sec.Data)}
	if crt := sec.Data["tls.crt"]; len(crt) > 0 {
		if chain, err := pki.ParseChainPEM(crt); err == nil {
			out.Summary.NotAfter = api.NewTime(chain[0].NotAfter)
		}
	}
	return out, nil
}
