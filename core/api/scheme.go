package api

import "sort"

// KindInfo describes one resource kind certfn stores.
type KindInfo struct {
	Kind       string
	APIVersion string // group/version, e.g. cert-manager.io/v1
	Namespaced bool
	// Plural is the lower-case plural used by the CLI and the bindings
	// ("certificates", "clusterissuers").
	Plural string
	// Short names accepted by the CLI (e.g. "cert", "cr").
	Short []string
	// InSecretStore: objects of the kind are applied into the secret store,
	// never the state store, and never read back through the API (Secret).
	InSecretStore bool
	// New returns a zero value of the kind with TypeMeta filled in.
	New func() Object
}

// kinds is the one table of kinds, by Kind: every kind certfn stores and
// decodes. Add new kinds here; other packages never add kinds. It is
// built when the package is initialised (no init function), so every
// accessor below sees the whole table.
var kinds = kindTable(
	KindInfo{Kind: KindCertificate, APIVersion: CertManagerV1, Namespaced: true, Plural: "certificates",
		Short: []string{"cert", "certs"}, New: func() Object { return &Certificate{} }},
	KindInfo{Kind: KindCertificateRequest, APIVersion: CertManagerV1, Namespaced: true, Plural: "certificaterequests",
		Short: []string{"cr", "crs"}, New: func() Object { return &CertificateRequest{} }},
	KindInfo{Kind: KindCertificateSigningRequest, APIVersion: CertificatesV1, Namespaced: false, Plural: "certificatesigningrequests",
		Short: []string{"csr", "csrs"}, New: func() Object { return &CertificateSigningRequest{} }},
	KindInfo{Kind: KindIssuer, APIVersion: CertManagerV1, Namespaced: true, Plural: "issuers",
		New: func() Object { return &Issuer{} }},
	KindInfo{Kind: KindClusterIssuer, APIVersion: CertManagerV1, Namespaced: false, Plural: "clusterissuers",
		New: func() Object { return &ClusterIssuer{} }},
	KindInfo{Kind: KindCertificateRequestPolicy, APIVersion: PolicyV1alpha1, Namespaced: false,
		Plural: "certificaterequestpolicies", Short: []string{"crp", "crps"},
		New: func() Object { return &CertificateRequestPolicy{} }},
	KindInfo{Kind: KindRole, APIVersion: RBACV1, Namespaced: true, Plural: "roles",
		New: func() Object { return &Role{} }},
	KindInfo{Kind: KindClusterRole, APIVersion: RBACV1, Namespaced: false, Plural: "clusterroles",
		New: func() Object { return &ClusterRole{} }},
	KindInfo{Kind: KindRoleBinding, APIVersion: RBACV1, Namespaced: true, Plural: "rolebindings",
		New: func() Object { return &RoleBinding{} }},
	KindInfo{Kind: KindClusterRoleBinding, APIVersion: RBACV1, Namespaced: false, Plural: "clusterrolebindings",
		New: func() Object { return &ClusterRoleBinding{} }},
	KindInfo{Kind: KindNamespace, APIVersion: CoreV1, Namespaced: false, Plural: "namespaces",
		Short: []string{"ns"}, New: func() Object { return &Namespace{} }},
	KindInfo{Kind: KindSecret, APIVersion: CoreV1, Namespaced: true, Plural: "secrets",
		InSecretStore: true, New: func() Object { return &Secret{} }},
	KindInfo{Kind: KindOrder, APIVersion: ACMEV1, Namespaced: true, Plural: "orders",
		New: func() Object { return &Order{} }},
	KindInfo{Kind: KindChallenge, APIVersion: ACMEV1, Namespaced: true, Plural: "challenges",
		Short: []string{"ch"}, New: func() Object { return &Challenge{} }},
	KindInfo{Kind: KindEvent, APIVersion: CoreV1, Namespaced: true, Plural: "events",
		Short: []string{"ev"}, New: func() Object { return &Event{} }},
	KindInfo{Kind: KindChallengeLease, APIVersion: CertfnACMEV1Alpha1, Namespaced: false, Plural: "challengeleases",
		New: func() Object { return &ChallengeLease{} }},
)

// kindTable indexes ks by Kind (a later entry for the same Kind replaces an
// earlier one). Each New is wrapped to fill in the object's TypeMeta
// (apiVersion and kind), so New's result is ready to encode.
func kindTable(ks ...KindInfo) map[string]KindInfo {
	m := make(map[string]KindInfo, len(ks))
	for _, k := range ks {
		inner := k.New
		k.New = func() Object {
			o := inner()
			*o.GetTypeMeta() = TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
			return o
		}
		m[k.Kind] = k
	}
	return m
}

// KindInfoFor returns the kind's info.
func KindInfoFor(kind string) (KindInfo, bool) {
	k, ok := kinds[kind]
	return k, ok
}

// Kinds returns every registered kind sorted by name.
func Kinds() []KindInfo {
	out := make([]KindInfo, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// KindForName resolves a CLI name (kind, plural, singular or short name,
// any case) to a kind.
func KindForName(name string) (KindInfo, bool) {
	ln := lower(name)
	for _, k := range kinds {
		if lower(k.Kind) == ln || k.Plural == ln {
			return k, true
		}
		for _, s := range k.Short {
			if s == ln {
				return k, true
			}
		}
	}
	return KindInfo{}, false
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
