package certificates

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// ReasonDuplicateSecretName is the reason of the Ready condition (and of
// Issuing=False, when an issuance is stopped) of a Certificate that shares
// spec.secretName with another Certificate of its namespace and does not
// own the secret. cert-manager gives no reason of its own (its trigger
// just skips such a Certificate); the name is the condition its first
// attempt at the fix proposed (cert-manager PR #5567).
const ReasonDuplicateSecretName = "DuplicateSecretName"

// Reasons a Certificate may not write spec.secretName at all (Ownership's
// Reason; the Ready condition and Issuing=False carry them).
const (
	// ReasonSecretNotOwned: the secret holds data that no Certificate of
	// the namespace wrote (no cert-manager.io/certificate-name annotation,
	// or it is another Certificate's next private key), and no operator
	// handed it over (api.AnnotationAdoptByCertificate).
	ReasonSecretNotOwned = "SecretNotOwned"
	// ReasonSecretInUse: an Issuer, a ClusterIssuer or a keystore password
	// reference uses the secret (api.SecretUse): a Certificate never
	// overwrites it, whatever its annotations say.
	ReasonSecretInUse = "SecretInUse"
	// ReasonSecretFilePermsNotAllowed: spec.secretTemplate.annotations ask
	// for file permissions beyond the deployment's api.SecretFileBounds.
	ReasonSecretFilePermsNotAllowed = "SecretFilePermsNotAllowed"
)

// Ownership says which of the Certificates naming one secret owns it: only
// the owner issues into it and writes it (cert-manager's
// CertificateOwnsSecret, PR #6406, which stops two Certificates from
// overwriting each other's key pair and re-issuing without end).
type Ownership struct {
	// Secret is the shared spec.secretName.
	Secret string
	// Owner is the name of the Certificate that owns the secret.
	Owner string
	// Names are every Certificate naming the secret, in owner order
	// (oldest first, then by name); nil when the owner is known without
	// listing them (it is alone, or the secret already names it).
	Names []string
	// Refused, when set, is why no Certificate may write the secret (the
	// Owner is then ""), and RefusedReason its condition reason
	// (ReasonSecretNotOwned, ReasonSecretInUse,
	// ReasonSecretFilePermsNotAllowed).
	Refused, RefusedReason string
}

// Owns reports whether the Certificate called name owns the secret.
func (o Ownership) Owns(name string) bool { return o.Refused == "" && o.Owner == name }

// Reason is the condition reason of a Certificate that does not own the
// secret.
func (o Ownership) Reason() string {
	if o.Refused != "" {
		return o.RefusedReason
	}
	return ReasonDuplicateSecretName
}

// Message is what a Certificate that does not own the secret reports.
func (o Ownership) Message() string {
	if o.Refused != "" {
		return o.Refused
	}
	q := make([]string, len(o.Names))
	for i, n := range o.Names {
		q[i] = strconv.Quote(n)
	}
	return fmt.Sprintf("Secret %q is owned by Certificate %q (the Certificates %s share spec.secretName)",
		o.Secret, o.Owner, strings.Join(q, ", "))
}

// SecretOwner applies cert-manager's rule to crt and sharers, the other
// Certificates of crt's namespace with the same spec.secretName, given the
// stored secret (nil: missing):
//  1. when the secret's cert-manager.io/certificate-name annotation names
//     one of these Certificates, that one owns it (the secret stays with
//     the Certificate that wrote it);
//  2. otherwise the oldest Certificate (creationTimestamp) owns it, the
//     first by name among those created at the same time.
//
// The rule depends only on what every sharer reads, so each of them
// computes the same owner on its own.
func SecretOwner(crt *api.Certificate, sharers []*api.Certificate, secret *ports.Secret) Ownership {
	all := make([]*api.Certificate, 0, len(sharers)+1)
	all = append(all, crt)
	for _, c := range sharers {
		if c.Name != crt.Name && c.Spec.SecretName == crt.Spec.SecretName {
			all = append(all, c)
		}
	}
	o := Ownership{Secret: crt.Spec.SecretName, Owner: crt.Name}
	if len(all) == 1 {
		return o
	}
	sort.Slice(all, func(i, j int) bool {
		ti, tj := created(all[i]), created(all[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return all[i].Name < all[j].Name
	})
	o.Names = make([]string, len(all))
	for i, c := range all {
		o.Names[i] = c.Name
	}
	o.Owner = o.Names[0]
	if secret != nil {
		if n := secret.Annotations[api.AnnotationCertificateName]; n != "" {
			for _, name := range o.Names {
				if name == n {
					o.Owner = n
				}
			}
		}
	}
	return o
}

func created(c *api.Certificate) time.Time {
	if c.CreationTimestamp == nil {
		return time.Time{}
	}
	return c.CreationTimestamp.Time
}

// Ownership says who owns spec.secretName, once per reconcile, and
// whether this Certificate may write it at all (Refusal). It reads the
// secret first: when its certificate-name annotation names this
// Certificate, this Certificate owns it whatever else names it, and
// nothing is listed (a settled Certificate, the common case, costs no
// listing). Otherwise SharersLoader lists the namespace's Certificates.
// Without a SharersLoader the preset Sharers are used (none: the
// Certificate is alone).
func (s *State) Ownership(ctx context.Context) (Ownership, error) {
	if s.owner != nil {
		return *s.owner, nil
	}
	if err := s.LoadSecret(ctx); err != nil {
		return Ownership{}, err
	}
	o, err := s.sharerOwnership(ctx)
	if err != nil {
		return Ownership{}, err
	}
	if o.Owns(s.Cert.Name) {
		reason, msg, err := s.refusal(ctx)
		if err != nil {
			return Ownership{}, err
		}
		if msg != "" {
			o.Owner, o.RefusedReason, o.Refused = "", reason, msg
		}
	}
	s.owner = &o
	return o, nil
}

// sharerOwnership applies SecretOwner, listing the sharers only when the
// loaded secret names another Certificate.
func (s *State) sharerOwnership(ctx context.Context) (Ownership, error) {
	if s.SharersLoader == nil && len(s.Sharers) == 0 {
		return Ownership{Secret: s.Cert.Spec.SecretName, Owner: s.Cert.Name}, nil
	}
	// The sharers not listed yet (the controller's lazy loader): only a secret
	// that another Certificate wrote (its certificate-name annotation names
	// another one) is evidence of sharing worth a listing; then cert-
	// manager's rule decides. A missing or unclaimed secret costs no
	// listing: one per Certificate reconcile would be quadratic in the
	// Certificates of a namespace issued together. The price: two
	// Certificates sharing a secret that does not exist yet may both issue
	// once; the second write is the evidence, and from then on one owns it
	// (no loop). Sharers already known (len(s.Sharers) > 0) are always
	// judged by the rule.
	if s.SharersLoader != nil {
		if claimant := secretClaimant(s.Secret); claimant == "" || claimant == s.Cert.Name {
			return Ownership{Secret: s.Cert.Spec.SecretName, Owner: s.Cert.Name}, nil
		}
	}
	if s.SharersLoader != nil {
		sharers, err := s.SharersLoader(ctx)
		if err != nil {
			return Ownership{}, fmt.Errorf("list the Certificates sharing secret %s/%s: %w", s.Cert.Namespace, s.Cert.Spec.SecretName, err)
		}
		s.Sharers, s.SharersLoader = sharers, nil
	}
	return SecretOwner(s.Cert, s.Sharers, s.Secret), nil
}

// refusal says why this Certificate, the owner among its sharers, may
// still not write spec.secretName (reason and message; "" when it may):
//  1. spec.secretTemplate.annotations ask for file permissions beyond
//     FileBounds;
//  2. a secret whose certificate-name annotation names this Certificate
//     is its own (it wrote it; a CA bootstrapped from a Certificate
//     stays renewable);
//  3. otherwise a secret an issuer or a keystore password uses
//     (SecretUsesLoader) is never written, unless it is a CA issuer's key
//     pair that does not exist yet and this Certificate is a CA
//     (spec.isCA: the bootstrap's first issuance; a deployment whose
//     worker cannot see an operator's CA key pair, a cloud's separate
//     secret class, sees it missing);
//  4. a secret with data that no Certificate wrote (no certificate-name
//     annotation, or another Certificate's next private key) is written
//     only when its api.AnnotationAdoptByCertificate names this
//     Certificate. A secret written by another Certificate that no longer
//     names it stays cert-manager's rule (SecretOwner).
func (s *State) refusal(ctx context.Context) (reason, msg string, err error) {
	crt, sec := s.Cert, s.Secret
	if s.FileBounds != nil && crt.Spec.SecretTemplate != nil {
		if err := s.FileBounds.Check("spec.secretTemplate.annotations", crt.Spec.SecretTemplate.Annotations); err != nil {
			return ReasonSecretFilePermsNotAllowed, err.Error(), nil
		}
	}
	claimant := secretClaimant(sec)
	if claimant == crt.Name && sec.Labels[api.LabelNextPrivateKey] != "true" {
		return "", "", nil
	}
	hasData := sec != nil && len(sec.Data) > 0
	uses := api.CertificateSecretUses(crt)
	if s.SecretUsesLoader != nil {
		more, err := s.SecretUsesLoader(ctx, hasData)
		if err != nil {
			return "", "", fmt.Errorf("list the issuers using secret %s/%s: %w", crt.Namespace, crt.Spec.SecretName, err)
		}
		uses = append(uses, more...)
	}
	for _, u := range uses {
		if u.Secret != crt.Spec.SecretName || (u.CA() && !hasData && crt.Spec.IsCA) {
			continue
		}
		return ReasonSecretInUse, fmt.Sprintf("Secret %q is used by %s: a Certificate never writes a secret that an Issuer, a ClusterIssuer "+
			"or a keystore password refers to (choose another spec.secretName)", crt.Spec.SecretName, u), nil
	}
	if !hasData {
		return "", "", nil
	}
	if sec.Labels[api.LabelNextPrivateKey] == "true" {
		return ReasonSecretNotOwned, fmt.Sprintf("Secret %q is the next private key of Certificate %q: a Certificate never writes it "+
			"(choose another spec.secretName)", crt.Spec.SecretName, claimant), nil
	}
	if claimant == "" && sec.Annotations[api.AnnotationAdoptByCertificate] != crt.Name {
		return ReasonSecretNotOwned, fmt.Sprintf("Secret %q holds data that no Certificate wrote (it has no %s annotation): a Certificate "+
			"takes over such a secret only when an operator sets the annotation %s: %s on the Secret (choose another spec.secretName, "+
			"or ask an operator to hand the secret over)", crt.Spec.SecretName, api.AnnotationCertificateName, api.AnnotationAdoptByCertificate, crt.Name), nil
	}
	return "", "", nil
}

// NotOwner returns the Ownership computed in this reconcile when it says
// another Certificate owns the secret (false: this one owns it, or no step
// has asked yet).
func (s *State) NotOwner() (Ownership, bool) {
	if s.owner == nil || s.owner.Owns(s.Cert.Name) {
		return Ownership{}, false
	}
	return *s.owner, true
}

// secretClaimant is the Certificate a secret's certificate-name annotation
// names ("" for a missing or unannotated secret).
func secretClaimant(sec *ports.Secret) string {
	if sec == nil {
		return ""
	}
	return sec.Annotations[api.AnnotationCertificateName]
}
