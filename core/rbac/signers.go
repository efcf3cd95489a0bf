package rbac

import (
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// SignerResourceNames returns the `signers` resource names an approver may
// be granted `approve` on for a request in namespace that refers to ref,
// specific name first (cert-manager's form of docs/design/certificates-api.md's signerName check):
//
//	issuers.cert-manager.io/<namespace>.<name>, issuers.cert-manager.io/*
//	clusterissuers.cert-manager.io/<name>,      clusterissuers.cert-manager.io/*
//
// Kind defaults to Issuer and group to cert-manager.io. For another kind
// the type is its lower-cased plural; a kind containing "Cluster" is
// cluster-scoped.
func SignerResourceNames(ref api.IssuerReference, namespace string) []string {
	kind, group := ref.Kind, ref.Group
	if kind == "" {
		kind = api.KindIssuer
	}
	if group == "" {
		group = api.CertManagerGroup
	}
	signerType := plural(kind) + "." + group
	if strings.Contains(kind, "Cluster") {
		return []string{signerType + "/" + ref.Name, signerType + "/*"}
	}
	return []string{signerType + "/" + namespace + "." + ref.Name, signerType + "/*"}
}

func plural(kind string) string {
	l := strings.ToLower(kind)
	if strings.HasSuffix(l, "s") {
		return l + "es"
	}
	return l + "s"
}

// CanApprove reports whether id may approve or deny a request in namespace
// for the issuer ref: `approve` on `signers` in cert-manager.io for any of
// SignerResourceNames (docs/design/certificates-api.md: approval is a permission separate from
// creating requests or signing).
func (a *Authorizer) CanApprove(id Identity, ref api.IssuerReference, namespace string) (bool, string) {
	names := SignerResourceNames(ref, namespace)
	for _, n := range names {
		ok, reason := a.Allowed(id, Attributes{Verb: VerbApprove, APIGroup: api.CertManagerGroup,
			Resource: ResourceSigners, Namespace: namespace, Name: n})
		if ok {
			return true, reason
		}
	}
	return false, fmt.Sprintf("user %s may not approve requests for signer %q: no binding grants %q on signers.%s named %s",
		id, names[0], VerbApprove, api.CertManagerGroup, strings.Join(quoteAll(names), " or "))
}

// AttributesFor returns the attributes of verb on the object addressed by
// key (its resource is the kind's plural, its group from the apiVersion).
// An empty key.Name checks the verb on every object of the kind (list, or
// create of any name).
func AttributesFor(verb string, key api.Key) (Attributes, error) {
	info, ok := api.KindInfoFor(key.Kind)
	if !ok {
		return Attributes{}, fmt.Errorf("kind %q is not a certfn kind", key.Kind)
	}
	group := ""
	if g, _, found := strings.Cut(info.APIVersion, "/"); found {
		group = g
	}
	ns := key.Namespace
	if !info.Namespaced {
		ns = ""
	}
	return Attributes{Verb: verb, APIGroup: group, Resource: info.Plural, Namespace: ns, Name: key.Name}, nil
}

// Validate checks an RBAC object (Role, ClusterRole, RoleBinding,
// ClusterRoleBinding) and returns every problem with its field path, or nil.
// Other kinds return nil.
func Validate(obj api.Object) error {
	var errs api.FieldErrors
	fail := func(path, format string, args ...any) {
		errs = append(errs, api.FieldError{Object: api.KeyOf(obj).String(), Path: path, Rule: fmt.Sprintf(format, args...)})
	}
	rules := func(rs []api.PolicyRule) {
		for i, r := range rs {
			p := fmt.Sprintf("rules[%d]", i)
			if len(r.Verbs) == 0 {
				fail(p+".verbs", "required: list at least one verb (or \"*\")")
			}
			if len(r.NonResourceURLs) == 0 && len(r.Resources) == 0 {
				fail(p+".resources", "required: list at least one resource (or \"*\")")
			}
			if len(r.Resources) > 0 && len(r.APIGroups) == 0 {
				fail(p+".apiGroups", "required with resources: list the API groups (\"\" for core, \"*\" for all)")
			}
			for j, n := range r.ResourceNames {
				if n == "" {
					fail(fmt.Sprintf("%s.resourceNames[%d]", p, j), "must not be empty")
				}
			}
		}
	}
	subjects := func(ss []api.Subject, namespaced bool) {
		for i, s := range ss {
			p := fmt.Sprintf("subjects[%d]", i)
			switch s.Kind {
			case api.SubjectKindUser, api.SubjectKindGroup:
				if s.APIGroup != "" && s.APIGroup != api.RBACGroup {
					fail(p+".apiGroup", "%q: want %q for kind %s", s.APIGroup, api.RBACGroup, s.Kind)
				}
			case api.SubjectKindServiceAccount:
				if s.APIGroup != "" {
					fail(p+".apiGroup", "%q: must be empty for kind ServiceAccount", s.APIGroup)
				}
				if s.Namespace == "" && !namespaced {
					fail(p+".namespace", "required for a ServiceAccount subject of a ClusterRoleBinding")
				}
			default:
				fail(p+".kind", "%q: want User, Group or ServiceAccount", s.Kind)
			}
			if s.Name == "" {
				fail(p+".name", "required")
			}
		}
	}
	roleRef := func(r api.RoleRef, kinds ...string) {
		if r.APIGroup != api.RBACGroup {
			fail("roleRef.apiGroup", "%q: want %q", r.APIGroup, api.RBACGroup)
		}
		if !hasString(kinds, r.Kind) {
			fail("roleRef.kind", "%q: want %s", r.Kind, strings.Join(kinds, " or "))
		}
		if r.Name == "" {
			fail("roleRef.name", "required")
		}
	}
	switch o := obj.(type) {
	case *api.Role:
		rules(o.Rules)
	case *api.ClusterRole:
		rules(o.Rules)
		if o.AggregationRule != nil {
			fail("aggregationRule", "not supported by certfn: list the rules on the ClusterRole")
		}
	case *api.RoleBinding:
		subjects(o.Subjects, true)
		roleRef(o.RoleRef, api.KindRole, api.KindClusterRole)
	case *api.ClusterRoleBinding:
		subjects(o.Subjects, false)
		roleRef(o.RoleRef, api.KindClusterRole)
	default:
		return nil
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// CSRSignerNames returns the `signers` resource names in
// certificates.k8s.io that grant a verb for a CertificateSigningRequest of
// signerName, specific name first (docs/design/certificates-api.md: name == <.spec.signerName>,
// then <domain part only>/* "to allow approving an entire domain").
func CSRSignerNames(signerName string) []string {
	domain, _, _ := strings.Cut(signerName, "/")
	return []string{signerName, domain + "/*"}
}

// CanApproveSigner reports whether id may approve or deny a
// CertificateSigningRequest of signerName: `approve` on `signers` in
// certificates.k8s.io named by CSRSignerNames, granted cluster-wide (a
// CSR is cluster-scoped, so only ClusterRoleBindings count) — docs/design/certificates-api.md's
// approval-authorizing admission check.
func (a *Authorizer) CanApproveSigner(id Identity, signerName string) (bool, string) {
	return a.canSigner(id, VerbApprove, signerName)
}

// CanReferenceSigner reports whether id may have its CertificateSigningRequests
// signed by the namespaced Issuer ref in namespace: `reference` on
// `signers` in cert-manager.io in that namespace, named by the issuer's
// name or "*" (cert-manager's check before its CSR signers sign for a
// namespaced Issuer, so that a requester cannot use another namespace's
// CA).
func (a *Authorizer) CanReferenceSigner(id Identity, ref api.IssuerReference, namespace string) (bool, string) {
	for _, n := range []string{ref.Name, "*"} {
		if ok, reason := a.Allowed(id, Attributes{Verb: VerbReference, APIGroup: api.CertManagerGroup,
			Resource: ResourceSigners, Namespace: namespace, Name: n}); ok {
			return true, reason
		}
	}
	return false, fmt.Sprintf("user %s may not reference signer %q: no binding grants %q on signers.%s named %q or \"*\" in namespace %s",
		id, ref.Name, VerbReference, api.CertManagerGroup, ref.Name, namespace)
}

func (a *Authorizer) canSigner(id Identity, verb, signerName string) (bool, string) {
	names := CSRSignerNames(signerName)
	for _, n := range names {
		if ok, reason := a.Allowed(id, Attributes{Verb: verb, APIGroup: api.CertificatesGroup, Resource: ResourceSigners, Name: n}); ok {
			return true, reason
		}
	}
	return false, fmt.Sprintf("user %s may not %s for signer %q: no ClusterRoleBinding grants %q on signers.%s named %s",
		id, verb, signerName, verb, api.CertificatesGroup, strings.Join(quoteAll(names), " or "))
}
