package policy

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// Approver is certfn's approver step logic: an explicit opt-in list of
// signers whose requests are approved without policy (cert-manager's
// --approve-signer-names), consulted first, then the policies.
type Approver struct {
	evaluator *Evaluator
	auto      map[string]bool
}

// NewApprover returns an Approver. approveSignerNames are signer resource
// names as rbac.SignerResourceNames renders them, e.g.
// "clusterissuers.cert-manager.io/selfsigned" (one issuer),
// "issuers.cert-manager.io/team-a.ca" (one namespaced issuer) or
// "issuers.cert-manager.io/*" (every namespaced Issuer). The list is empty
// by default: nothing is approved without a policy.
func NewApprover(ev *Evaluator, approveSignerNames []string) (*Approver, error) {
	if ev == nil {
		return nil, fmt.Errorf("approver: no evaluator")
	}
	a := &Approver{evaluator: ev, auto: map[string]bool{}}
	for i, n := range approveSignerNames {
		typ, name, ok := strings.Cut(n, "/")
		if !ok || name == "" || !strings.Contains(typ, ".") || strings.Contains(name, "/") {
			return nil, fmt.Errorf("approveSignerNames[%d]: %q: want <type>.<group>/<name>, <type>.<group>/<namespace>.<name> or <type>.<group>/*, e.g. clusterissuers.cert-manager.io/ca", i, n)
		}
		a.auto[n] = true
	}
	return a, nil
}

// Decide returns Approved when the request's signer is in the opt-in list,
// else the Evaluator's decision for in. Both are counted in
// MetricApprovalOutcomes.
func (a *Approver) Decide(ctx context.Context, in Input) Decision {
	if cr := in.Request; cr != nil {
		if n, ok := a.autoApproved(cr); ok {
			d := Decision{Result: Approved, msg: fmt.Sprintf("auto-approved: signer %q is in certfn's approveSignerNames list", n)}
			a.evaluator.count(cr, d.Result)
			return d
		}
	}
	d := a.evaluator.Evaluate(ctx, in)
	if d.Result != Approved && d.Result != Denied && len(a.auto) > 0 && in.Request != nil {
		// The operator may expect the list to cover this request.
		d.msg = d.Message() + "; " + a.notAutoApproved(in.Request)
	}
	return d
}

// notAutoApproved says which signers the opt-in list approves, and that
// cr's signer is not one of them.
func (a *Approver) notAutoApproved(cr *api.CertificateRequest) string {
	names := make([]string, 0, len(a.auto))
	for n := range a.auto {
		names = append(names, n)
	}
	sort.Strings(names)
	signer := rbac.SignerResourceNames(cr.Spec.IssuerRef, cr.Namespace)[0]
	return fmt.Sprintf("the auto-approve list approves only signers %s, and this request's signer (%s) is not among them",
		strings.Join(names, ", "), signer)
}

// autoApproved returns the name in the opt-in list that approves cr's
// signer, if any.
func (a *Approver) autoApproved(cr *api.CertificateRequest) (string, bool) {
	if len(a.auto) == 0 {
		return "", false
	}
	for _, n := range rbac.SignerResourceNames(cr.Spec.IssuerRef, cr.Namespace) {
		if a.auto[n] {
			return n, true
		}
	}
	return "", false
}
