package rbac

import (
	"fmt"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// Builders.

func rule(verbs, groups, resources []string, names ...string) api.PolicyRule {
	return api.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func l(s ...string) []string { return s }

func clusterRole(name string, rules ...api.PolicyRule) api.ClusterRole {
	return api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...api.PolicyRule) api.Role {
	return api.Role{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func user(name string) api.Subject {
	return api.Subject{Kind: api.SubjectKindUser, APIGroup: api.RBACGroup, Name: name}
}

func group(name string) api.Subject {
	return api.Subject{Kind: api.SubjectKindGroup, APIGroup: api.RBACGroup, Name: name}
}

func sa(ns, name string) api.Subject {
	return api.Subject{Kind: api.SubjectKindServiceAccount, Namespace: ns, Name: name}
}

func crb(name, roleName string, subjects ...api.Subject) api.ClusterRoleBinding {
	return api.ClusterRoleBinding{ObjectMeta: api.ObjectMeta{Name: name}, Subjects: subjects,
		RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: api.KindClusterRole, Name: roleName}}
}

func rb(ns, name, roleKind, roleName string, subjects ...api.Subject) api.RoleBinding {
	return api.RoleBinding{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name}, Subjects: subjects,
		RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: roleKind, Name: roleName}}
}

func useAttrs(ns, policy string) Attributes {
	return Attributes{Verb: VerbUse, APIGroup: api.PolicyGroup, Resource: ResourceCertificateRequestPolicies, Namespace: ns, Name: policy}
}

func approveAttrs(ns, name string) Attributes {
	return Attributes{Verb: VerbApprove, APIGroup: api.CertManagerGroup, Resource: ResourceSigners, Namespace: ns, Name: name}
}

func certAttrs(verb, ns, name string) Attributes {
	return Attributes{Verb: verb, APIGroup: api.CertManagerGroup, Resource: "certificates", Namespace: ns, Name: name}
}

func TestAuthorizerAllowed(t *testing.T) {
	alice := Identity{Username: "alice"}
	bob := Identity{Username: "bob", Groups: []string{"team-a"}}
	anon := Identity{}
	saApp := Identity{Username: "system:serviceaccount:apps:deployer"}
	arn := Identity{Username: "arn:aws:iam::123456789012:role/ci", Groups: []string{"aws:account:123456789012"}}

	snap := Snapshot{
		ClusterRoles: []api.ClusterRole{
			clusterRole("policy-hello", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies"), "test-policy")),
			clusterRole("policy-any", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies"))),
			clusterRole("cert-editor", rule(l("create", "get", "list", "update", "delete"), l(api.CertManagerGroup), l("certificates", "certificaterequests"))),
			clusterRole("admin", rule(l("*"), l("*"), l("*"))),
			clusterRole("approver-ca", rule(l("approve"), l(api.CertManagerGroup), l("signers"), "clusterissuers.cert-manager.io/ca")),
			clusterRole("approver-ns-issuers", rule(l("approve"), l(api.CertManagerGroup), l("signers"), "issuers.cert-manager.io/*")),
		},
		Roles: []api.Role{
			role("team-a", "reader", rule(l("get", "list"), l(api.CertManagerGroup), l("certificates"))),
			role("team-b", "reader", rule(l("get"), l(api.CertManagerGroup), l("certificates"), "web")),
		},
		ClusterRoleBindings: []api.ClusterRoleBinding{
			crb("hello", "policy-hello", group(GroupAuthenticated)),
			crb("root", "admin", user("root")),
			crb("ca-approver", "approver-ca", user("alice")),
			crb("ci-any", "policy-any", user("arn:aws:iam::123456789012:role/ci")),
		},
		RoleBindings: []api.RoleBinding{
			rb("team-a", "readers", api.KindRole, "reader", group("team-a")),
			rb("team-b", "readers", api.KindRole, "reader", user("bob")),
			rb("apps", "deployer-certs", api.KindClusterRole, "cert-editor", sa("", "deployer")),
			rb("team-a", "policy-any", api.KindClusterRole, "policy-any", user("alice")),
			rb("team-a", "ns-approver", api.KindClusterRole, "approver-ns-issuers", group("team-a")),
		},
	}
	a := NewAuthorizer(snap)
	if w := a.Warnings(); len(w) != 0 {
		t.Fatalf("unexpected warnings: %v", w)
	}

	tests := []struct {
		name  string
		id    Identity
		attrs Attributes
		want  bool
		why   string // substring of the reason
	}{
		// resourceNames and system:authenticated
		{"authenticated may use the named policy", alice, useAttrs("default", "test-policy"), true, `ClusterRoleBinding "hello"`},
		{"named rule does not cover another policy", bob, useAttrs("default", "other"), false, "may not"},
		{"anonymous is not in system:authenticated", anon, useAttrs("default", "test-policy"), false, "may not"},
		{"rule without resourceNames covers every policy", arn, useAttrs("default", "whatever"), true, `"ci-any"`},
		// RoleBinding to a ClusterRole is scoped to the binding's namespace
		{"rolebinding to clusterrole in its namespace", alice, useAttrs("team-a", "other"), true, `RoleBinding "team-a/policy-any"`},
		{"rolebinding to clusterrole not elsewhere", alice, useAttrs("team-b", "other"), false, ""},
		{"rolebinding never grants cluster-scoped access", alice, useAttrs("", "other"), false, ""},
		// verbs
		{"role grants list", bob, certAttrs("list", "team-a", ""), true, `Role "reader"`},
		{"role does not grant delete", bob, certAttrs("delete", "team-a", "web"), false, ""},
		{"verb star", Identity{Username: "root"}, certAttrs("delete", "x", "y"), true, `"root"`},
		{"star covers cluster-scoped too", Identity{Username: "root"}, Attributes{Verb: "create", APIGroup: api.PolicyGroup, Resource: ResourceCertificateRequestPolicies, Name: "p"}, true, ""},
		// namespaced role with resourceNames
		{"role in team-b with resourceName web", bob, certAttrs("get", "team-b", "web"), true, `RoleBinding "team-b/readers"`},
		{"role in team-b other name", bob, certAttrs("get", "team-b", "api"), false, ""},
		{"resourceNames never match list (empty name)", bob, certAttrs("get", "team-b", ""), false, ""},
		{"role only in its namespace", bob, certAttrs("get", "team-c", "web"), false, ""},
		// groups
		{"group from identity", bob, certAttrs("get", "team-a", "x"), true, ""},
		{"group not held", alice, certAttrs("get", "team-a", "x"), false, ""},
		// wrong group or resource
		{"api group must match", bob, Attributes{Verb: "get", APIGroup: "acme.cert-manager.io", Resource: "certificates", Namespace: "team-a"}, false, ""},
		{"resource must match", bob, certAttrs("get", "team-a", "x"), true, ""},
		// ServiceAccount subject with the binding's namespace as default
		{"service account in its namespace", saApp, certAttrs("create", "apps", "web"), true, `RoleBinding "apps/deployer-certs"`},
		{"service account elsewhere", saApp, certAttrs("create", "other", "web"), false, ""},
		{"same SA name in another namespace", Identity{Username: "system:serviceaccount:other:deployer"}, certAttrs("create", "apps", "web"), false, ""},
		// approve on signers
		{"approve named clusterissuer", alice, approveAttrs("default", "clusterissuers.cert-manager.io/ca"), true, "approver-ca"},
		{"approve other clusterissuer", alice, approveAttrs("default", "clusterissuers.cert-manager.io/other"), false, ""},
		{"approve star form in namespace", bob, approveAttrs("team-a", "issuers.cert-manager.io/*"), true, "ns-approver"},
		{"star form is a literal name", bob, approveAttrs("team-a", "issuers.cert-manager.io/team-a.ca"), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := a.Allowed(tc.id, tc.attrs)
			if got != tc.want {
				t.Fatalf("Allowed(%v, %v) = %v (%s), want %v", tc.id, tc.attrs, got, why, tc.want)
			}
			if tc.why != "" && !strings.Contains(why, tc.why) {
				t.Errorf("reason %q does not contain %q", why, tc.why)
			}
			// AllowedNames agrees with Allowed whenever a name is checked.
			if tc.attrs.Name != "" {
				set := a.AllowedNames(tc.id, tc.attrs)
				if set.Has(tc.attrs.Name) != tc.want {
					t.Errorf("AllowedNames(...).Has(%q) = %v, want %v", tc.attrs.Name, set.Has(tc.attrs.Name), tc.want)
				}
			}
		})
	}
}

func TestServiceAccountImplicitGroups(t *testing.T) {
	a := NewAuthorizer(Snapshot{
		ClusterRoles: []api.ClusterRole{clusterRole("use-all", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies")))},
		ClusterRoleBindings: []api.ClusterRoleBinding{
			crb("all-sas", "use-all", group("system:serviceaccounts:apps")),
			crb("cm", "use-all", sa("cert-manager", "cert-manager")),
		},
	})
	tests := []struct {
		name string
		id   Identity
		want bool
	}{
		{"SA of apps via system:serviceaccounts:apps", Identity{Username: "system:serviceaccount:apps:x"}, true},
		{"SA of another namespace", Identity{Username: "system:serviceaccount:web:x"}, false},
		{"a user cannot claim SA groups by name shape", Identity{Username: "system:serviceaccount:apps"}, false},
		{"controller identity", Controller(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := a.Allowed(tc.id, useAttrs("ns", "p")); got != tc.want {
				t.Fatalf("got %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestAuthorizerWarnings(t *testing.T) {
	a := NewAuthorizer(Snapshot{
		Roles: []api.Role{role("a", "r")},
		ClusterRoles: []api.ClusterRole{{ObjectMeta: api.ObjectMeta{Name: "agg"},
			AggregationRule: &api.AggregationRule{}}},
		ClusterRoleBindings: []api.ClusterRoleBinding{
			crb("missing", "nope", user("u")),
			{ObjectMeta: api.ObjectMeta{Name: "to-role"}, RoleRef: api.RoleRef{Kind: api.KindRole, Name: "r"}},
			crb("sa-no-ns", "agg", api.Subject{Kind: api.SubjectKindServiceAccount, Name: "x"}),
		},
		RoleBindings: []api.RoleBinding{
			rb("b", "other-ns-role", api.KindRole, "r", user("u")),
			rb("a", "bad-kind", "Group", "r", user("u")),
			rb("a", "bad-subject", api.KindRole, "r", api.Subject{Kind: "Robot", Name: "r2"}),
		},
	})
	want := []string{
		`ClusterRole "agg": aggregationRule is not supported`,
		`ClusterRoleBinding "missing": roleRef: ClusterRole "nope" does not exist`,
		`ClusterRoleBinding "to-role": roleRef.kind "Role"`,
		`ClusterRoleBinding "sa-no-ns": subjects[0]: ServiceAccount subject "x" has no namespace`,
		`RoleBinding "b/other-ns-role": roleRef: Role "r" does not exist in namespace "b"`,
		`RoleBinding "a/bad-kind": roleRef.kind "Group"`,
		`RoleBinding "a/bad-subject": subjects[0]: subject kind "Robot"`,
	}
	got := strings.Join(a.Warnings(), "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("warnings lack %q; got:\n%s", w, got)
		}
	}
	if len(a.Warnings()) != len(want) {
		t.Errorf("got %d warnings, want %d:\n%s", len(a.Warnings()), len(want), got)
	}
}

func TestNilAuthorizerDenies(t *testing.T) {
	var a *Authorizer
	if ok, why := a.Allowed(Identity{Username: "root"}, useAttrs("", "p")); ok || why == "" {
		t.Fatalf("nil authorizer: got %v %q, want a denial with a reason", ok, why)
	}
	if s := a.AllowedNames(Identity{Username: "root"}, useAttrs("", "")); !s.Empty() || s.All() {
		t.Fatalf("nil authorizer: AllowedNames not empty")
	}
}

func TestAllowedNames(t *testing.T) {
	a := NewAuthorizer(Snapshot{
		ClusterRoles: []api.ClusterRole{
			clusterRole("p1", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies"), "a", "b")),
			clusterRole("p2", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies"), "c")),
			clusterRole("all", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies"))),
		},
		ClusterRoleBindings: []api.ClusterRoleBinding{crb("p1", "p1", group("g1"))},
		RoleBindings: []api.RoleBinding{
			rb("ns", "p2", api.KindClusterRole, "p2", group("g1")),
			rb("ns", "all", api.KindClusterRole, "all", user("root")),
		},
	})
	g1 := Identity{Username: "u", Groups: []string{"g1"}}
	tests := []struct {
		name    string
		id      Identity
		ns      string
		has     []string
		hasNot  []string
		wantAll bool
	}{
		{"cluster names only outside ns", g1, "other", l("a", "b"), l("c", "d"), false},
		{"cluster and namespace names", g1, "ns", l("a", "b", "c"), l("d"), false},
		{"all via rolebinding", Identity{Username: "root"}, "ns", l("a", "zzz"), nil, true},
		{"nothing", Identity{Username: "nobody"}, "ns", nil, l("a"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := a.AllowedNames(tc.id, useAttrs(tc.ns, ""))
			if s.All() != tc.wantAll {
				t.Errorf("All() = %v, want %v", s.All(), tc.wantAll)
			}
			for _, n := range tc.has {
				if !s.Has(n) {
					t.Errorf("missing %q", n)
				}
			}
			for _, n := range tc.hasNot {
				if s.Has(n) {
					t.Errorf("unexpected %q", n)
				}
			}
		})
	}
}

func TestSignerResourceNames(t *testing.T) {
	tests := []struct {
		ref  api.IssuerReference
		ns   string
		want []string
	}{
		{api.IssuerReference{Name: "ca"}, "team-a", l("issuers.cert-manager.io/team-a.ca", "issuers.cert-manager.io/*")},
		{api.IssuerReference{Name: "ca", Kind: "Issuer", Group: "cert-manager.io"}, "b", l("issuers.cert-manager.io/b.ca", "issuers.cert-manager.io/*")},
		{api.IssuerReference{Name: "le", Kind: "ClusterIssuer"}, "team-a", l("clusterissuers.cert-manager.io/le", "clusterissuers.cert-manager.io/*")},
		{api.IssuerReference{Name: "pca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}, "x",
			l("awspcaclusterissuers.awspca.cert-manager.io/pca", "awspcaclusterissuers.awspca.cert-manager.io/*")},
	}
	for _, tc := range tests {
		got := SignerResourceNames(tc.ref, tc.ns)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("SignerResourceNames(%+v, %q) = %v, want %v", tc.ref, tc.ns, got, tc.want)
		}
	}
}

func TestCanApprove(t *testing.T) {
	a := NewAuthorizer(Snapshot{
		ClusterRoles: []api.ClusterRole{
			clusterRole("approve-ca", rule(l("approve"), l(api.CertManagerGroup), l("signers"), "issuers.cert-manager.io/team-a.ca")),
			clusterRole("approve-all-clusterissuers", rule(l("approve"), l(api.CertManagerGroup), l("signers"), "clusterissuers.cert-manager.io/*")),
		},
		ClusterRoleBindings: []api.ClusterRoleBinding{crb("sec", "approve-all-clusterissuers", group("security"))},
		RoleBindings:        []api.RoleBinding{rb("team-a", "lead", api.KindClusterRole, "approve-ca", user("lead"))},
	})
	lead := Identity{Username: "lead"}
	sec := Identity{Username: "s", Groups: []string{"security"}}
	tests := []struct {
		name string
		id   Identity
		ref  api.IssuerReference
		ns   string
		want bool
	}{
		{"lead approves for team-a/ca", lead, api.IssuerReference{Name: "ca"}, "team-a", true},
		{"lead not for another issuer", lead, api.IssuerReference{Name: "other"}, "team-a", false},
		{"lead not in another namespace", lead, api.IssuerReference{Name: "ca"}, "team-b", false},
		{"security approves any clusterissuer via *", sec, api.IssuerReference{Name: "le", Kind: "ClusterIssuer"}, "x", true},
		{"security not namespaced issuers", sec, api.IssuerReference{Name: "ca"}, "team-a", false},
		{"creating is not approving", Identity{Username: "dev"}, api.IssuerReference{Name: "ca"}, "team-a", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := a.CanApprove(tc.id, tc.ref, tc.ns)
			if got != tc.want {
				t.Fatalf("CanApprove = %v (%s), want %v", got, why, tc.want)
			}
			if !got && !strings.Contains(why, "may not approve") {
				t.Errorf("denial reason %q lacks explanation", why)
			}
		})
	}
}

func TestAttributesFor(t *testing.T) {
	tests := []struct {
		verb    string
		key     api.Key
		want    Attributes
		wantErr string
	}{
		{"create", api.Key{Kind: "Certificate", Namespace: "a", Name: "web"}, Attributes{Verb: "create", APIGroup: "cert-manager.io", Resource: "certificates", Namespace: "a", Name: "web"}, ""},
		{"list", api.Key{Kind: "Certificate", Namespace: "a"}, Attributes{Verb: "list", APIGroup: "cert-manager.io", Resource: "certificates", Namespace: "a"}, ""},
		{"delete", api.Key{Kind: "CertificateRequestPolicy", Name: "p"}, Attributes{Verb: "delete", APIGroup: "policy.cert-manager.io", Resource: "certificaterequestpolicies", Name: "p"}, ""},
		{"update", api.Key{Kind: "Namespace", Name: "a"}, Attributes{Verb: "update", APIGroup: "", Resource: "namespaces", Name: "a"}, ""},
		{"get", api.Key{Kind: "RoleBinding", Namespace: "a", Name: "b"}, Attributes{Verb: "get", APIGroup: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: "a", Name: "b"}, ""},
		{"get", api.Key{Kind: "Pod", Name: "x"}, Attributes{}, `kind "Pod"`},
	}
	for _, tc := range tests {
		got, err := AttributesFor(tc.verb, tc.key)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("AttributesFor(%v): err %v, want %q", tc.key, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("AttributesFor(%q, %v) = %+v, %v; want %+v", tc.verb, tc.key, got, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		obj  api.Object
		want []string // substrings; none means valid
	}{
		{"valid role", &api.Role{ObjectMeta: api.ObjectMeta{Namespace: "a", Name: "r"}, Rules: []api.PolicyRule{rule(l("get"), l(""), l("namespaces"))}}, nil},
		{"rule without verbs or groups", &api.Role{ObjectMeta: api.ObjectMeta{Namespace: "a", Name: "r"}, Rules: []api.PolicyRule{{Resources: l("certificates"), ResourceNames: l("")}}},
			l("rules[0].verbs: required", "rules[0].apiGroups: required", "rules[0].resourceNames[0]: must not be empty")},
		{"rule without resources", &api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "r"}, Rules: []api.PolicyRule{{Verbs: l("get")}}}, l("rules[0].resources: required")},
		{"aggregation", &api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "r"}, AggregationRule: &api.AggregationRule{}}, l("aggregationRule: not supported")},
		{"valid binding", func() api.Object { b := crb("b", "r", user("u"), group("g"), sa("ns", "x")); return &b }(), nil},
		{"clusterrolebinding to a role", func() api.Object {
			b := crb("b", "r", api.Subject{Kind: "Robot", Name: "x"}, sa("", "x"), api.Subject{Kind: "User"})
			b.RoleRef.Kind = api.KindRole
			b.RoleRef.APIGroup = "rbac"
			return &b
		}(), l(`roleRef.kind: "Role": want ClusterRole`, `roleRef.apiGroup: "rbac"`, `subjects[0].kind: "Robot"`,
			"subjects[1].namespace: required", "subjects[2].name: required")},
		{"rolebinding SA without namespace is fine", func() api.Object { b := rb("a", "b", api.KindRole, "r", sa("", "x")); return &b }(), nil},
		{"rolebinding missing role name", func() api.Object { b := rb("a", "b", api.KindRole, "", user("u")); return &b }(), l("roleRef.name: required")},
		{"other kinds are not checked", &api.Namespace{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.obj)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestManyResourceNames(t *testing.T) {
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("policy-%d", i))
	}
	a := NewAuthorizer(Snapshot{
		ClusterRoles:        []api.ClusterRole{clusterRole("many", rule(l("use"), l(api.PolicyGroup), l("certificaterequestpolicies"), names...))},
		ClusterRoleBindings: []api.ClusterRoleBinding{crb("many", "many", group(GroupAuthenticated))},
	})
	id := Identity{Username: "u"}
	set := a.AllowedNames(id, useAttrs("ns", ""))
	for _, tc := range []struct {
		name string
		want bool
	}{{"policy-0", true}, {"policy-19", true}, {"policy-20", false}, {"", false}} {
		ok, _ := a.Allowed(id, useAttrs("ns", tc.name))
		if ok != tc.want || set.Has(tc.name) != tc.want {
			t.Errorf("%q: Allowed=%v Has=%v, want %v", tc.name, ok, set.Has(tc.name), tc.want)
		}
	}
}
