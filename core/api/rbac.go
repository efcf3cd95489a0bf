package api

// Kubernetes RBAC (rbac.authorization.k8s.io/v1) and core/v1 Namespace: who
// may use a policy, approve for a signer, or create what in which namespace
// (docs/design/resources.md and docs/design/roles.md; docs/design/certificates-api.md's separate approval permission).
const (
	RBACGroup = "rbac.authorization.k8s.io"
	RBACV1    = "rbac.authorization.k8s.io/v1"
	// CoreV1 is the apiVersion of Kubernetes' core group ("v1").
	CoreV1 = "v1"

	KindRole               = "Role"
	KindClusterRole        = "ClusterRole"
	KindRoleBinding        = "RoleBinding"
	KindClusterRoleBinding = "ClusterRoleBinding"
	KindNamespace          = "Namespace"

	// Subject kinds.
	SubjectKindUser           = "User"
	SubjectKindGroup          = "Group"
	SubjectKindServiceAccount = "ServiceAccount"
)

// PolicyRule grants verbs on resources. An empty ResourceNames means every
// name; "*" in verbs, apiGroups or resources means all. NonResourceURLs is
// accepted for compatibility and grants nothing in certfn.
type PolicyRule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Role is a namespaced set of rules.
type Role struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Rules      []PolicyRule `json:"rules"`
}

// AggregationRule is accepted on ClusterRoles for compatibility; certfn does
// not aggregate roles (the rules listed on the ClusterRole are the ones used).
type AggregationRule struct {
	ClusterRoleSelectors []LabelSelector `json:"clusterRoleSelectors,omitempty"`
}

// LabelSelector is Kubernetes' label selector.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one matchExpressions entry.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// ClusterRole is a cluster-wide set of rules. Bound by a ClusterRoleBinding
// it applies everywhere; bound by a RoleBinding, only in that namespace.
type ClusterRole struct {
	TypeMeta        `json:",inline"`
	ObjectMeta      `json:"metadata,omitempty"`
	Rules           []PolicyRule     `json:"rules"`
	AggregationRule *AggregationRule `json:"aggregationRule,omitempty"`
}

// Subject is who a binding grants to: a User (an IAM ARN, a service-account
// e-mail, a local user name), a Group, or a ServiceAccount (matching the
// username system:serviceaccount:<namespace>:<name>).
type Subject struct {
	Kind     string `json:"kind"`
	APIGroup string `json:"apiGroup,omitempty"`
	Name     string `json:"name"`
	// Namespace of a ServiceAccount subject; in a RoleBinding it defaults
	// to the binding's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// RoleRef names the Role or ClusterRole a binding grants.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// RoleBinding grants a Role (same namespace) or a ClusterRole (scoped to
// the binding's namespace) to subjects.
type RoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

// ClusterRoleBinding grants a ClusterRole to subjects in every namespace
// and for cluster-scoped resources.
type ClusterRoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

// Namespace is core/v1 Namespace (cluster-scoped). certfn uses its labels
// for CertificateRequestPolicy namespace selectors (matchLabels).
type Namespace struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NamespaceSpec   `json:"spec,omitempty"`
	Status     NamespaceStatus `json:"status,omitempty"`
}

// NamespaceSpec is accepted for compatibility.
type NamespaceSpec struct {
	Finalizers []string `json:"finalizers,omitempty"`
}

// NamespaceStatus is accepted for compatibility.
type NamespaceStatus struct {
	Phase string `json:"phase,omitempty"`
}
