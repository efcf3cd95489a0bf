package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// benchPolicies returns 100 policies, one per team. A quarter select
// another issuer; the rest select every request or the team-* namespaces,
// and all are bound to system:authenticated by name. Two thirds restrict
// DNS names to the team with wildcards; one third allow *.example.com and
// restrict to the team with CEL rules (with team-specific constants, so
// every rule is evaluated on its own), plus a CEL rule on the common name.
// Every fifth adds duration and key constraints. The request made by
// benchRequest("team-99") is allowed only by the last policy (a CEL one),
// after the other applicable ones have been tried and failed.
func benchPolicies(b *testing.B) ([]*api.CertificateRequestPolicy, *rbac.Authorizer) {
	var ps []*api.CertificateRequestPolicy
	var names []string
	for i := range 100 {
		var spec strings.Builder
		spec.WriteString("allowed:\n  commonName:\n    value: \"*.example.com\"\n")
		if i%3 == 0 {
			fmt.Fprintf(&spec, "    validations:\n"+
				"      - rule: \"self.endsWith('.team-%02d.example.com') && cr.namespace.startsWith('team-')\"\n"+
				"  dnsNames:\n    values: [\"*.example.com\"]\n"+
				"    validations:\n"+
				"      - rule: \"self == 'team-%02d.example.com' || self.endsWith('.team-%02d.example.com')\"\n"+
				"        message: \"DNS names must be in the team-%02d zone\"\n", i, i, i, i)
		} else {
			fmt.Fprintf(&spec, "  dnsNames:\n    values: [\"*.team-%02d.example.com\", \"team-%02d.example.com\"]\n", i, i)
		}
		spec.WriteString("  usages: [\"server auth\", \"client auth\", \"digital signature\", \"key encipherment\"]\n")
		if i%5 == 0 {
			spec.WriteString("constraints:\n  maxDuration: 2160h\n  privateKey: {algorithm: ECDSA, maxSize: 384}\n")
		}
		switch i % 4 {
		case 0:
			spec.WriteString("selector:\n  issuerRef: {name: \"other-*\"}\n")
		case 1:
			spec.WriteString("selector:\n  issuerRef: {}\n")
		default:
			spec.WriteString("selector:\n  issuerRef: {kind: \"*Issuer\"}\n  namespace: {matchNames: [\"team-*\"]}\n")
		}
		name := fmt.Sprintf("team-%02d", i)
		ps = append(ps, policyYAML(b, name, spec.String()))
		names = append(names, name)
	}
	authz := rbac.NewAuthorizer(rbac.Snapshot{
		ClusterRoles: []api.ClusterRole{{ObjectMeta: api.ObjectMeta{Name: "teams"}, Rules: []api.PolicyRule{{
			Verbs: []string{"use"}, APIGroups: []string{api.PolicyGroup}, Resources: []string{"certificaterequestpolicies"}, ResourceNames: names}}}},
		ClusterRoleBindings: []api.ClusterRoleBinding{{ObjectMeta: api.ObjectMeta{Name: "teams"},
			Subjects: []api.Subject{{Kind: api.SubjectKindGroup, Name: rbac.GroupAuthenticated}},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.KindClusterRole, Name: "teams"}}},
	})
	return ps, authz
}

func benchRequest(b *testing.B, team string) *api.CertificateRequest {
	return newCR(b, csr(cn("www."+team+".example.com"), dns("www."+team+".example.com", team+".example.com")),
		inNamespace(team), usages("server auth", "digital signature"), duration(720*time.Hour))
}

// BenchmarkEvaluate100Policies reports evaluations per second with 100
// policies (run with -cpu 1 for one core):
//   - parsed: the caller passes the parsed CSR (the approver step parses it
//     once for validation); measures policy work only;
//   - pem: Evaluate parses spec.request itself, including the CSR
//     signature check (ECDSA P-256), once per evaluation;
//   - denied: no policy allows the request (each applicable policy fails
//     its quick review); the message is not rendered;
//   - denied-message: denied, and the message rendered (every applicable
//     policy reviewed again in full to list its violations: the slow path);
//   - team-bound: as parsed, but each team is bound to its own policy only
//     (the usual set-up), so one policy applies.
func BenchmarkEvaluate100Policies(b *testing.B) {
	ps, authz := benchPolicies(b)
	approve := benchRequest(b, "team-99")
	deny := benchRequest(b, "team-zz")
	parsed, _ := buildCSR(b, cn("www.team-99.example.com"), dns("www.team-99.example.com", "team-99.example.com"))
	ev := newEvaluator(b)
	run := func(b *testing.B, in Input, want Result) {
		if d := ev.Evaluate(context.Background(), in); d.Result != want {
			b.Fatalf("got %s (%s), want %s", d.Result, d.Message(), want)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			ev.Evaluate(context.Background(), in)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	}
	b.Run("parsed", func(b *testing.B) {
		run(b, Input{Request: approve, CSR: parsed, Policies: ps, Authorizer: authz}, Approved)
	})
	b.Run("pem", func(b *testing.B) {
		run(b, Input{Request: approve, Policies: ps, Authorizer: authz}, Approved)
	})
	b.Run("denied", func(b *testing.B) {
		run(b, Input{Request: deny, Policies: ps, Authorizer: authz}, Denied)
	})
	// denied-message: as denied, and the message is rendered (each
	// applicable policy reviewed in full), as when the Denied condition is
	// written; denied measures the decision alone.
	b.Run("denied-message", func(b *testing.B) {
		in := Input{Request: deny, Policies: ps, Authorizer: authz}
		if d := ev.Evaluate(context.Background(), in); d.Result != Denied || d.Message() == "" {
			b.Fatalf("got %s (%s), want a Denied message", d.Result, d.Message())
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = ev.Evaluate(context.Background(), in).Message()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	})
	// team-bound: the usual deployment, where each team's group is bound
	// (RoleBinding in the team's namespace) to its own policy only, so the
	// other 99 policies are skipped by the `use` check.
	teamAuthz := teamBindings(ps)
	teamReq := benchRequest(b, "team-99")
	teamReq.Spec.Groups = append(teamReq.Spec.Groups, "team-99")
	b.Run("team-bound", func(b *testing.B) {
		run(b, Input{Request: teamReq, CSR: parsed, Policies: ps, Authorizer: teamAuthz}, Approved)
	})
}

// teamBindings binds group team-NN, in namespace team-NN, to policy team-NN.
func teamBindings(ps []*api.CertificateRequestPolicy) *rbac.Authorizer {
	var s rbac.Snapshot
	for _, p := range ps {
		s.ClusterRoles = append(s.ClusterRoles, api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "use-" + p.Name}, Rules: []api.PolicyRule{{
			Verbs: []string{"use"}, APIGroups: []string{api.PolicyGroup}, Resources: []string{"certificaterequestpolicies"}, ResourceNames: []string{p.Name}}}})
		s.RoleBindings = append(s.RoleBindings, api.RoleBinding{ObjectMeta: api.ObjectMeta{Namespace: p.Name, Name: "use-" + p.Name},
			Subjects: []api.Subject{{Kind: api.SubjectKindGroup, Name: p.Name}},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.KindClusterRole, Name: "use-" + p.Name}})
	}
	return rbac.NewAuthorizer(s)
}
