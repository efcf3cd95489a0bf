package policy

import (
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// The selection predicates: which policies apply to a request (docs/design/approval-policy.md,
// approver-policy's manager): Ready, bound to the requester with `use`,
// and selecting the request by issuerRef and namespace (name and labels).
// They run before any evaluator, and they alone decide Unmatched.

// notReadyByStatus reports a Ready condition that is not True for the
// policy's current generation. (A policy without the condition yet is
// judged by compiling it.)
func notReadyByStatus(p *api.CertificateRequestPolicy) bool {
	c := api.FindCondition(p.Status.Conditions, api.CertificateRequestPolicyConditionReady)
	return c != nil && c.Status != api.ConditionTrue && c.ObservedGeneration == p.Generation
}

// scan decides which policies apply to one request.
type scan struct {
	in        *Input
	id        rbac.Identity
	sel       selectorInput
	bound     rbac.NameSet
	boundDone bool
}

// Reasons a policy does not apply.
const (
	reasonApplies = iota
	reasonNotReady
	reasonNotSelected
	reasonNotBound
)

// applies returns p compiled (from its cache entry ce) when it applies to
// the request: Ready, selecting it and bound to the requester with `use`
// (checked in the request's namespace, so RoleBindings there count); else
// nil. The selector comes before the `use` check: it compares a few
// compiled patterns, while the check looks the policy's name up in each
// RBAC rule granting `use` (a map lookup for a long list of names).
func (s *scan) applies(p *api.CertificateRequestPolicy, ce *cacheEntry) *Compiled {
	if s.why(p, ce) != reasonApplies {
		return nil
	}
	return ce.compiled
}

// why classifies p: not Ready, else not selecting the request, else not
// bound to the requester, else applying. (A policy that neither selects
// the request nor is bound counts as not selecting it, as the Unmatched
// message reports.)
func (s *scan) why(p *api.CertificateRequestPolicy, ce *cacheEntry) int {
	if p == nil || notReadyByStatus(p) || ce.err != nil {
		return reasonNotReady
	}
	if !ce.compiled.selector.matches(&s.sel) {
		return reasonNotSelected
	}
	if !s.boundDone {
		s.bound = s.in.Authorizer.AllowedNames(s.id, rbac.Attributes{Verb: rbac.VerbUse, APIGroup: api.PolicyGroup,
			Resource: rbac.ResourceCertificateRequestPolicies, Namespace: s.sel.namespace})
		s.boundDone = true
	}
	if !s.bound.Has(p.Name) {
		return reasonNotBound
	}
	return reasonApplies
}

// unmatched returns the message of a request no policy applies to and
// the operator's detail of why. The message is the same however many
// policies exist and why each does not apply: the requester (who reads the
// request) must not learn how many policies there are or what they
// select. The detail (counts by reason) goes to operators' logs only.
func (s *scan) unmatched(ps []*api.CertificateRequestPolicy, entries []*cacheEntry) (message, detail string) {
	var counts [4]int
	total := 0
	for i, p := range ps {
		if p == nil {
			continue
		}
		total++
		counts[s.why(p, entries[i])]++
	}
	cr := s.in.Request
	return unmatchedPublic(cr), unmatchedMessage(cr, total, counts[reasonNotReady], counts[reasonNotSelected], counts[reasonNotBound])
}

// unmatchedPublic is the message stored on a request no policy applies to.
func unmatchedPublic(cr *api.CertificateRequest) string {
	ref := cr.Spec.IssuerRef
	kind, group := ref.Kind, ref.Group
	if kind == "" {
		kind = api.KindIssuer
	}
	if group == "" {
		group = api.CertManagerGroup
	}
	return fmt.Sprintf("no policy applies to requester %q for issuer %s %q (group %s) in namespace %q: "+
		"no Ready CertificateRequestPolicy selects this request and is bound to the requester with %q",
		cr.Spec.Username, kind, ref.Name, group, cr.Namespace, rbac.VerbUse)
}

func unmatchedMessage(cr *api.CertificateRequest, total, notReady, notSelected, notBound int) string {
	ref := cr.Spec.IssuerRef
	kind, group := ref.Kind, ref.Group
	if kind == "" {
		kind = api.KindIssuer
	}
	if group == "" {
		group = api.CertManagerGroup
	}
	msg := fmt.Sprintf("no policy applies to requester %q for issuer %s %q (group %s) in namespace %q",
		cr.Spec.Username, kind, ref.Name, group, cr.Namespace)
	if total == 0 {
		return msg + ": there are no CertificateRequestPolicies"
	}
	var why []string
	if notReady > 0 {
		why = append(why, fmt.Sprintf("%d not Ready", notReady))
	}
	if notSelected > 0 {
		why = append(why, fmt.Sprintf("%d not selecting this request", notSelected))
	}
	if notBound > 0 {
		why = append(why, fmt.Sprintf("%d selecting it but not bound to the requester with %q", notBound, rbac.VerbUse))
	}
	if len(why) == 0 {
		return msg
	}
	return fmt.Sprintf("%s: of %d policies, %s", msg, total, strings.Join(why, ", "))
}

// selectorInput is what selectors look at, computed once per evaluation:
// the issuer reference with cert-manager's defaults (kind Issuer, group
// cert-manager.io) and the namespace with its labels.
type selectorInput struct {
	name, kind, group string
	namespace         string
	labels            map[string]string
}

func newSelectorInput(cr *api.CertificateRequest, labels map[string]string) selectorInput {
	ref := cr.Spec.IssuerRef
	in := selectorInput{name: ref.Name, kind: ref.Kind, group: ref.Group, namespace: cr.Namespace, labels: labels}
	if in.kind == "" {
		in.kind = api.KindIssuer
	}
	if in.group == "" {
		in.group = api.CertManagerGroup
	}
	return in
}

// matches reports whether the selector selects the request (every selector
// set must match).
func (s *selector) matches(in *selectorInput) bool {
	if is := s.issuer; is != nil {
		if (is.name != nil && !is.name.match(in.name)) ||
			(is.kind != nil && !is.kind.match(in.kind)) ||
			(is.group != nil && !is.group.match(in.group)) {
			return false
		}
	}
	if ns := s.namespace; ns != nil {
		if len(ns.names) > 0 && !ns.names.matchAny(in.namespace) {
			return false
		}
		for _, kv := range ns.labels {
			if got, ok := in.labels[kv[0]]; !ok || got != kv[1] {
				return false
			}
		}
	}
	return true
}
