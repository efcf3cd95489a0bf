package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// The cross-kind queries. Each is one List (or one Get) of the store;
// callers that wake what a query finds enqueue the keys in the order
// returned.

// Stored is a decoded object with the version of its stored record.
type Stored struct {
	Obj     api.Object
	Version int64
}

// Owned returns the objects of kind in owner's namespace whose
// controlling owner is owner, with their versions.
func (r *Repo) Owned(ctx context.Context, kind string, owner api.Key) ([]Stored, error) {
	recs, err := r.store.List(ctx, ports.ListOptions{Kind: kind, Namespace: owner.Namespace, Owner: owner})
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", kind, owner, err)
	}
	out := make([]Stored, 0, len(recs))
	for _, rec := range recs {
		o, err := Decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, Stored{Obj: o, Version: rec.Version})
	}
	return out, nil
}

// Issuer resolves ref as seen from namespace (api.IssuerScope): the
// issuer, where its secrets live, and ok false when the ref names no
// cert-manager issuer or the issuer does not exist.
func (r *Repo) Issuer(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	key, secretNS, ok := r.scope.Resolve(namespace, ref)
	if !ok {
		return nil, "", false, nil
	}
	rec, err := r.store.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	o, err := Decode(rec)
	if err != nil {
		return nil, "", false, err
	}
	return o.(api.GenericIssuer), secretNS, true, nil
}

// CertificatesNaming lists the Certificates of namespace whose
// spec.secretName is secretName, except the one called except. It is one
// List of every Certificate of the namespace: its cost grows with the
// namespace.
func (r *Repo) CertificatesNaming(ctx context.Context, namespace, secretName, except string) ([]*api.Certificate, error) {
	recs, err := r.store.List(ctx, ports.ListOptions{Kind: api.KindCertificate, Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list Certificates of namespace %s: %w", namespace, err)
	}
	// Decoding every Certificate of the namespace is most of this call's
	// cost. Encode writes compact JSON, where a Certificate naming a plain
	// secret name (a DNS name: nothing for JSON to escape) contains
	// "secretName":"<name>" exactly, so records without those bytes are
	// skipped undecoded; those with them are decoded and checked.
	var needle []byte
	if plainName(secretName) {
		needle = []byte(`"secretName":"` + secretName + `"`)
	}
	var out []*api.Certificate
	for _, rec := range recs {
		if needle != nil && !bytes.Contains(rec.Data, needle) {
			continue
		}
		o, err := Decode(rec)
		if err != nil {
			return nil, err
		}
		if c := o.(*api.Certificate); c.Spec.SecretName == secretName && c.Name != except {
			out = append(out, c)
		}
	}
	return out, nil
}

// plainName reports a non-empty name of lower-case letters, digits, '-'
// and '.', which JSON encodes as is.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// issuerLists are the listings of the issuers whose secrets live in
// namespace: its Issuers, and the ClusterIssuers when namespace is the
// cluster resource namespace.
func (r *Repo) issuerLists(namespace string) []ports.ListOptions {
	kinds := []ports.ListOptions{{Kind: api.KindIssuer, Namespace: namespace}}
	if namespace == r.scope.ClusterNamespace() {
		kinds = append(kinds, ports.ListOptions{Kind: api.KindClusterIssuer})
	}
	return kinds
}

// CAIssuersUsing returns the keys of the CA issuers whose key pair is the
// secret namespace/name (one List per issuer kind whose secrets live in
// namespace).
func (r *Repo) CAIssuersUsing(ctx context.Context, namespace, name string) ([]api.Key, error) {
	var out []api.Key
	for _, opts := range r.issuerLists(namespace) {
		keys, err := keysWhere(ctx, r, opts, opts.Kind, func(iss api.GenericIssuer) bool {
			ca := iss.GetSpec().CA
			return ca != nil && ca.SecretName == name
		})
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

// SecretUses lists the references to secret namespace/name by the issuers
// whose secrets live in namespace (its Issuers, and the ClusterIssuers
// when namespace is the cluster resource namespace), and with certs by the
// keystores of namespace's Certificates other than except. Records that do
// not contain the name as a JSON string are skipped undecoded.
func (r *Repo) SecretUses(ctx context.Context, namespace, name, except string, certs bool) ([]api.SecretUse, error) {
	kinds := r.issuerLists(namespace)
	if certs {
		kinds = append(kinds, ports.ListOptions{Kind: api.KindCertificate, Namespace: namespace})
	}
	var needle []byte
	if plainName(name) {
		needle = []byte(`"` + name + `"`)
	}
	var out []api.SecretUse
	for _, opts := range kinds {
		recs, err := r.store.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", opts.Kind, err)
		}
		for _, rec := range recs {
			if needle != nil && !bytes.Contains(rec.Data, needle) {
				continue
			}
			o, err := Decode(rec)
			if err != nil {
				return nil, err
			}
			var uses []api.SecretUse
			switch o := o.(type) {
			case api.GenericIssuer:
				uses = api.IssuerSecretUses(o)
			case *api.Certificate:
				if o.Name != except {
					uses = api.CertificateSecretUses(o)
				}
			}
			for _, u := range uses {
				if u.Secret == name {
					out = append(out, u)
				}
			}
		}
	}
	return out, nil
}

// RequestsWaitingFor returns the keys of the CertificateRequests of the
// issuer's namespace that reference it and are not final (one List).
func (r *Repo) RequestsWaitingFor(ctx context.Context, iss api.GenericIssuer) ([]api.Key, error) {
	m := iss.GetObjectMeta()
	kind := iss.GetTypeMeta().Kind
	opts := ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: m.Namespace}
	return keysWhere(ctx, r, opts, "requests waiting for "+kind+" "+m.Name, func(cr *api.CertificateRequest) bool {
		refKind := cr.Spec.IssuerRef.Kind
		if refKind == "" {
			refKind = api.KindIssuer
		}
		return cr.Spec.IssuerRef.Name == m.Name && refKind == kind && !cr.IsFinal()
	})
}

// PendingRequests returns the keys of every CertificateRequest not yet
// approved or denied and not final (one List of every request).
func (r *Repo) PendingRequests(ctx context.Context) ([]api.Key, error) {
	opts := ports.ListOptions{Kind: api.KindCertificateRequest}
	return keysWhere(ctx, r, opts, "pending requests", func(cr *api.CertificateRequest) bool {
		return !cr.IsFinal() && api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionApproved) == nil &&
			api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionDenied) == nil
	})
}

// PendingCSRs returns the keys of every CertificateSigningRequest that is
// not final and whose signer is one of certfn's (one List of every CSR):
// a change of a policy, a binding or an issuer may let it be decided or
// signed now.
func (r *Repo) PendingCSRs(ctx context.Context) ([]api.Key, error) {
	opts := ports.ListOptions{Kind: api.KindCertificateSigningRequest}
	return keysWhere(ctx, r, opts, "pending CertificateSigningRequests", func(c *api.CertificateSigningRequest) bool {
		_, _, ours := api.SignerIssuer(c.Spec.SignerName)
		return ours && !c.IsFinal()
	})
}

// keysWhere is one List of opts: the keys, in the store's order, of the
// records whose object, decoded as T, keep accepts. what names the
// listing in its error; a record that does not decode fails the query.
func keysWhere[T api.Object](ctx context.Context, r *Repo, opts ports.ListOptions, what string, keep func(T) bool) ([]api.Key, error) {
	recs, err := r.store.List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	var out []api.Key
	for _, rec := range recs {
		o, err := Decode(rec)
		if err != nil {
			return nil, err
		}
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("list %s: %s is a %T", what, rec.Key, o)
		}
		if keep(t) {
			out = append(out, rec.Key)
		}
	}
	return out, nil
}

// RequestsIssuedSince counts a namespace's issuances for the issuance
// quota with one List of its CertificateRequests: the requests whose Ready
// condition is True with reason Issued and changed after since, and the
// earliest of those times (zero when none). Requests deleted since they
// were issued (pruned beyond a Certificate's revisionHistoryLimit, or
// deleted by a user) are no longer counted.
func (r *Repo) RequestsIssuedSince(ctx context.Context, namespace string, since time.Time) (int, time.Time, error) {
	recs, err := r.store.List(ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: namespace})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("list CertificateRequests of namespace %s: %w", namespace, err)
	}
	return issuedSince(recs, since, func(o api.Object) time.Time {
		c := api.FindCondition(o.(*api.CertificateRequest).Status.Conditions, api.CertificateRequestConditionReady)
		if c == nil || c.Status != api.ConditionTrue || c.Reason != api.CertificateRequestReasonIssued || c.LastTransitionTime == nil {
			return time.Time{}
		}
		return c.LastTransitionTime.Time
	})
}

// CSRsIssuedSince counts a requester's issued CertificateSigningRequests
// for the issuance quota with one List of every CSR: those of username
// whose status.issuedAt is after since, and the earliest of those times.
// An issued CSR is kept for the quota's window after its issuance (the
// CSR cleanup step's retention); one deleted sooner by a user is no longer
// counted.
func (r *Repo) CSRsIssuedSince(ctx context.Context, username string, since time.Time) (int, time.Time, error) {
	recs, err := r.store.List(ctx, ports.ListOptions{Kind: api.KindCertificateSigningRequest})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("list CertificateSigningRequests: %w", err)
	}
	return issuedSince(recs, since, func(o api.Object) time.Time {
		c := o.(*api.CertificateSigningRequest)
		if c.Spec.Username != username || c.Status.IssuedAt == nil {
			return time.Time{}
		}
		return c.Status.IssuedAt.Time
	})
}

// issuedSince counts the records whose issuance time (issuedAt: zero when
// not issued, or not counted) is after since, and returns the earliest.
func issuedSince(recs []ports.Record, since time.Time, issuedAt func(api.Object) time.Time) (int, time.Time, error) {
	n, oldest := 0, time.Time{}
	for _, rec := range recs {
		o, err := Decode(rec)
		if err != nil {
			return 0, time.Time{}, err
		}
		if at := issuedAt(o); !at.IsZero() && at.After(since) {
			n++
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
	}
	return n, oldest, nil
}

// EventsOf returns the Events about key (the records it owns in
// api.EventNamespaceFor(key)), oldest first by last timestamp.
func (r *Repo) EventsOf(ctx context.Context, key api.Key) ([]api.Event, error) {
	recs, err := r.store.List(ctx, ports.ListOptions{Kind: api.KindEvent, Namespace: api.EventNamespaceFor(key), Owner: key})
	if err != nil {
		return nil, fmt.Errorf("list the Events of %s: %w", key, err)
	}
	out := make([]api.Event, 0, len(recs))
	for _, rec := range recs {
		o, err := Decode(rec)
		if err != nil {
			return nil, err
		}
		if ev, ok := o.(*api.Event); ok {
			out = append(out, *ev)
		}
	}
	api.SortEvents(out)
	return out, nil
}
