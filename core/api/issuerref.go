package api

// DefaultClusterResourceNamespace is where ClusterIssuer secrets (CA key
// pairs, ACME account keys, DNS provider credentials) live unless a
// deployment configures another namespace, as cert-manager's
// --cluster-resource-namespace.
const DefaultClusterResourceNamespace = "cert-manager"

// IssuerKey returns the key of the issuer ref names for an object in
// namespace: the ClusterIssuer ref.Name when ref.Kind is ClusterIssuer,
// else the Issuer ref.Name in namespace (an empty or unknown kind is an
// Issuer here; callers that must refuse unknown kinds use
// IssuerScope.Resolve).
func IssuerKey(namespace string, ref IssuerReference) Key {
	if ref.Kind == KindClusterIssuer {
		return Key{Kind: KindClusterIssuer, Name: ref.Name}
	}
	return Key{Kind: KindIssuer, Namespace: namespace, Name: ref.Name}
}

// IssuerScope is the one place of the issuer rule (cert-manager's
// issuer.Helper and IssuerOptions.ResourceNamespace): which issuer an
// issuerRef names, and in which namespace that issuer's secrets live —
// the referring object's namespace for an Issuer, the cluster resource
// namespace for a ClusterIssuer.
type IssuerScope struct {
	// ClusterResourceNamespace holds ClusterIssuer secrets (empty:
	// DefaultClusterResourceNamespace).
	ClusterResourceNamespace string
}

// ClusterNamespace is the effective cluster resource namespace.
func (s IssuerScope) ClusterNamespace() string {
	if s.ClusterResourceNamespace == "" {
		return DefaultClusterResourceNamespace
	}
	return s.ClusterResourceNamespace
}

// Resolve returns the key of the issuer ref names for an object in
// namespace and the namespace of that issuer's secrets. ok is false when
// ref names a group or kind other than cert-manager's Issuer and
// ClusterIssuer (an external issuer certfn does not run).
func (s IssuerScope) Resolve(namespace string, ref IssuerReference) (key Key, secretNamespace string, ok bool) {
	if ref.Group != "" && ref.Group != CertManagerGroup {
		return Key{}, "", false
	}
	switch ref.Kind {
	case "", KindIssuer:
		return Key{Kind: KindIssuer, Namespace: namespace, Name: ref.Name}, namespace, true
	case KindClusterIssuer:
		return Key{Kind: KindClusterIssuer, Name: ref.Name}, s.ClusterNamespace(), true
	}
	return Key{}, "", false
}

// SecretNamespace is where iss's secrets live.
func (s IssuerScope) SecretNamespace(iss GenericIssuer) string {
	if iss.GetTypeMeta().Kind == KindClusterIssuer {
		return s.ClusterNamespace()
	}
	return iss.GetObjectMeta().Namespace
}
