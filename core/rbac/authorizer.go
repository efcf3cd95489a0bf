package rbac

import (
	"fmt"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// Verbs and resources certfn checks beyond the CRUD verbs.
const (
	VerbUse     = "use"
	VerbApprove = "approve"
	// VerbReference on signers lets a requester have CertificateSigningRequests
	// signed by a namespaced Issuer (cert-manager's CSR signers).
	VerbReference = "reference"
	VerbCreate    = "create"
	VerbGet       = "get"
	VerbList      = "list"
	VerbUpdate    = "update"
	VerbDelete    = "delete"

	// ResourceCertificateRequestPolicies is checked with VerbUse in
	// api.PolicyGroup, named by the policy, in the request's namespace.
	ResourceCertificateRequestPolicies = "certificaterequestpolicies"
	// ResourceSigners is checked with VerbApprove in api.CertManagerGroup,
	// named by SignerResourceNames.
	ResourceSigners = "signers"
)

// Attributes describe one access: verb on resource (lower-case plural) in
// APIGroup, named Name ("" for list/create of any), in Namespace ("" for a
// cluster-scoped resource).
type Attributes struct {
	Verb      string
	APIGroup  string
	Resource  string
	Namespace string
	Name      string
}

// String renders `"use" certificaterequestpolicies.policy.cert-manager.io "p" in namespace "ns"`.
func (a Attributes) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %s", a.Verb, a.Resource)
	if a.APIGroup != "" {
		b.WriteString("." + a.APIGroup)
	}
	if a.Name != "" {
		fmt.Fprintf(&b, " %q", a.Name)
	}
	if a.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %q", a.Namespace)
	} else {
		b.WriteString(" (cluster-wide)")
	}
	return b.String()
}

// Snapshot is the set of RBAC objects an Authorizer is built from (the
// caller lists them from the store).
type Snapshot struct {
	Roles               []api.Role
	ClusterRoles        []api.ClusterRole
	RoleBindings        []api.RoleBinding
	ClusterRoleBindings []api.ClusterRoleBinding
}

// grant is the rules one binding gives its subjects.
type grant struct {
	source string // e.g. `ClusterRoleBinding "b" (ClusterRole "r")`
	rules  []indexedRule
}

// indexedRule is a PolicyRule with its resourceNames indexed when there are many
// (a role naming every policy).
type indexedRule struct {
	api.PolicyRule
	names map[string]struct{}
}

const indexNamesAbove = 8

func compileRules(rs []api.PolicyRule) []indexedRule {
	out := make([]indexedRule, len(rs))
	for i, r := range rs {
		out[i].PolicyRule = r
		if len(r.ResourceNames) > indexNamesAbove {
			out[i].names = make(map[string]struct{}, len(r.ResourceNames))
			for _, n := range r.ResourceNames {
				out[i].names[n] = struct{}{}
			}
		}
	}
	return out
}

// hasName reports whether the rule names n (it has resourceNames).
func (r *indexedRule) hasName(n string) bool {
	if r.names != nil {
		_, ok := r.names[n]
		return ok
	}
	return hasString(r.ResourceNames, n)
}

// subjectIndex finds the grants of a user or group.
type subjectIndex struct {
	users  map[string][]*grant
	groups map[string][]*grant
}

func (s *subjectIndex) add(subject api.Subject, bindingNamespace string, g *grant) error {
	switch subject.Kind {
	case api.SubjectKindUser:
		s.users[subject.Name] = append(s.users[subject.Name], g)
	case api.SubjectKindGroup:
		s.groups[subject.Name] = append(s.groups[subject.Name], g)
	case api.SubjectKindServiceAccount:
		ns := subject.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return fmt.Errorf("ServiceAccount subject %q has no namespace", subject.Name)
		}
		u := ServiceAccountUsername(ns, subject.Name)
		s.users[u] = append(s.users[u], g)
	default:
		return fmt.Errorf("subject kind %q is not User, Group or ServiceAccount", subject.Kind)
	}
	return nil
}

func newSubjectIndex() *subjectIndex {
	return &subjectIndex{users: map[string][]*grant{}, groups: map[string][]*grant{}}
}

// Authorizer answers permission checks from a Snapshot. It is immutable
// and safe for concurrent use; a nil *Authorizer denies everything.
type Authorizer struct {
	cluster    *subjectIndex
	namespaced map[string]*subjectIndex
	warnings   []string
}

// NewAuthorizer indexes the snapshot. Bindings that refer to a missing role,
// a ClusterRoleBinding that refers to a Role, and subjects of an unknown kind
// grant nothing and are reported by Warnings.
func NewAuthorizer(s Snapshot) *Authorizer {
	a := &Authorizer{cluster: newSubjectIndex(), namespaced: map[string]*subjectIndex{}}
	roles := map[string][]indexedRule{}
	for i := range s.Roles {
		r := &s.Roles[i]
		roles[r.Namespace+"/"+r.Name] = compileRules(r.Rules)
	}
	clusterRoles := map[string][]indexedRule{}
	for i := range s.ClusterRoles {
		r := &s.ClusterRoles[i]
		clusterRoles[r.Name] = compileRules(r.Rules)
		if r.AggregationRule != nil {
			a.warn("ClusterRole %q: aggregationRule is not supported; only its own rules are used", r.Name)
		}
	}
	for i := range s.ClusterRoleBindings {
		b := &s.ClusterRoleBindings[i]
		what := fmt.Sprintf("ClusterRoleBinding %q", b.Name)
		if b.RoleRef.Kind != api.KindClusterRole {
			a.warn("%s: roleRef.kind %q: a ClusterRoleBinding can only refer to a ClusterRole; it grants nothing", what, b.RoleRef.Kind)
			continue
		}
		r, ok := clusterRoles[b.RoleRef.Name]
		if !ok {
			a.warn("%s: roleRef: ClusterRole %q does not exist; it grants nothing", what, b.RoleRef.Name)
			continue
		}
		g := &grant{source: fmt.Sprintf("%s (ClusterRole %q)", what, b.RoleRef.Name), rules: r}
		for j, sub := range b.Subjects {
			if err := a.cluster.add(sub, "", g); err != nil {
				a.warn("%s: subjects[%d]: %v; ignored", what, j, err)
			}
		}
	}
	for i := range s.RoleBindings {
		b := &s.RoleBindings[i]
		what := fmt.Sprintf("RoleBinding %q", b.Namespace+"/"+b.Name)
		var g *grant
		switch b.RoleRef.Kind {
		case api.KindRole:
			r, ok := roles[b.Namespace+"/"+b.RoleRef.Name]
			if !ok {
				a.warn("%s: roleRef: Role %q does not exist in namespace %q; it grants nothing", what, b.RoleRef.Name, b.Namespace)
				continue
			}
			g = &grant{source: fmt.Sprintf("%s (Role %q)", what, b.RoleRef.Name), rules: r}
		case api.KindClusterRole:
			r, ok := clusterRoles[b.RoleRef.Name]
			if !ok {
				a.warn("%s: roleRef: ClusterRole %q does not exist; it grants nothing", what, b.RoleRef.Name)
				continue
			}
			g = &grant{source: fmt.Sprintf("%s (ClusterRole %q)", what, b.RoleRef.Name), rules: r}
		default:
			a.warn("%s: roleRef.kind %q is not Role or ClusterRole; it grants nothing", what, b.RoleRef.Kind)
			continue
		}
		idx := a.namespaced[b.Namespace]
		if idx == nil {
			idx = newSubjectIndex()
			a.namespaced[b.Namespace] = idx
		}
		for j, sub := range b.Subjects {
			if err := idx.add(sub, b.Namespace, g); err != nil {
				a.warn("%s: subjects[%d]: %v; ignored", what, j, err)
			}
		}
	}
	sort.Strings(a.warnings)
	return a
}

func (a *Authorizer) warn(format string, args ...any) {
	a.warnings = append(a.warnings, fmt.Sprintf(format, args...))
}

// Warnings lists bindings and subjects that grant nothing because they are
// inconsistent (missing role, wrong roleRef kind, unknown subject kind).
func (a *Authorizer) Warnings() []string {
	if a == nil {
		return nil
	}
	return a.warnings
}

// Allowed reports whether id may perform attrs, with a reason naming the
// binding that grants it or explaining the denial. ClusterRoleBindings
// grant everywhere; RoleBindings (to a Role, or to a ClusterRole scoped to
// the binding's namespace) only when attrs.Namespace is their namespace.
// Every authenticated identity is in system:authenticated; a username
// system:serviceaccount:<ns>:<name> matches ServiceAccount subjects and
// is in system:serviceaccounts and system:serviceaccounts:<ns>.
func (a *Authorizer) Allowed(id Identity, attrs Attributes) (bool, string) {
	if a != nil {
		if g := a.find(id, attrs, a.cluster); g != nil {
			return true, "allowed by " + g.source
		}
		if attrs.Namespace != "" {
			if idx := a.namespaced[attrs.Namespace]; idx != nil {
				if g := a.find(id, attrs, idx); g != nil {
					return true, "allowed by " + g.source
				}
			}
		}
	}
	return false, fmt.Sprintf("user %s may not %s: no Role or ClusterRole bound to the user, its groups or %s grants it",
		id, attrs, GroupAuthenticated)
}

// find returns the first grant in idx that gives id the access, or nil.
func (a *Authorizer) find(id Identity, attrs Attributes, idx *subjectIndex) *grant {
	var found *grant
	a.eachGrant(id, idx, func(g *grant) bool {
		for i := range g.rules {
			if ruleAllows(&g.rules[i], attrs) {
				found = g
				return false
			}
		}
		return true
	})
	return found
}

// eachGrant calls fn for each grant of id's username and groups (listed and
// implicit) in idx until fn returns false.
func (a *Authorizer) eachGrant(id Identity, idx *subjectIndex, fn func(*grant) bool) {
	if !id.Authenticated() {
		return
	}
	visit := func(gs []*grant) bool {
		for _, g := range gs {
			if !fn(g) {
				return false
			}
		}
		return true
	}
	if !visit(idx.users[id.Username]) {
		return
	}
	for _, grp := range id.Groups {
		if grp == GroupAuthenticated {
			continue // visited below, once
		}
		if !visit(idx.groups[grp]) {
			return
		}
	}
	if !visit(idx.groups[GroupAuthenticated]) {
		return
	}
	if ns, _, ok := id.ServiceAccount(); ok {
		if !hasString(id.Groups, GroupServiceAccounts) && !visit(idx.groups[GroupServiceAccounts]) {
			return
		}
		if g := ServiceAccountGroupPrefix + ns; !hasString(id.Groups, g) {
			visit(idx.groups[g])
		}
	}
}

// NameSet is the set of resource names a permission covers; see AllowedNames.
type NameSet struct {
	all   bool
	rules []*indexedRule
}

// All reports whether every name is covered.
func (s NameSet) All() bool { return s.all }

// Empty reports whether no name is covered.
func (s NameSet) Empty() bool { return !s.all && len(s.rules) == 0 }

// Has reports whether name is covered.
func (s NameSet) Has(name string) bool {
	if s.all {
		return true
	}
	for _, r := range s.rules {
		if r.hasName(name) {
			return true
		}
	}
	return false
}

// AllowedNames returns the names of attrs.Resource that id may access with
// attrs.Verb in attrs.Namespace (attrs.Name is ignored): Allowed(id, attrs
// with Name n) is true exactly when the result Has(n). It lets a caller
// check many names (every policy) with one walk over the bindings.
func (a *Authorizer) AllowedNames(id Identity, attrs Attributes) NameSet {
	var s NameSet
	if a == nil {
		return s
	}
	collect := func(g *grant) bool {
		for i := range g.rules {
			r := &g.rules[i]
			if !ruleMatchesExceptName(r, attrs) {
				continue
			}
			if len(r.ResourceNames) == 0 {
				s.all = true
				s.rules = nil
				return false
			}
			s.rules = append(s.rules, r)
		}
		return true
	}
	a.eachGrant(id, a.cluster, collect)
	if !s.all && attrs.Namespace != "" {
		if idx := a.namespaced[attrs.Namespace]; idx != nil {
			a.eachGrant(id, idx, collect)
		}
	}
	return s
}

// ruleAllows is Kubernetes' RuleAllows for resource requests.
func ruleAllows(r *indexedRule, attrs Attributes) bool {
	if !ruleMatchesExceptName(r, attrs) {
		return false
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	return attrs.Name != "" && r.hasName(attrs.Name)
}

func ruleMatchesExceptName(r *indexedRule, attrs Attributes) bool {
	return matchesOrStar(r.Verbs, attrs.Verb) &&
		matchesOrStar(r.APIGroups, attrs.APIGroup) &&
		matchesOrStar(r.Resources, attrs.Resource)
}

func matchesOrStar(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

func hasString(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
