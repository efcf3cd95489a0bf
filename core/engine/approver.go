package engine

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/requests"
)

// SignerName is seed 004's signer resource name of an issuer reference:
// "issuers.cert-manager.io/<namespace>.<name>" or
// "clusterissuers.cert-manager.io/<name>".
func SignerName(namespace string, ref api.IssuerReference) string {
	if ref.Kind == api.KindClusterIssuer {
		return "clusterissuers.cert-manager.io/" + ref.Name
	}
	return "issuers.cert-manager.io/" + namespace + "." + ref.Name
}

// AutoApprover approves every request whose signer is in an explicit list,
// like cert-manager's built-in approver (approveSignerNames). Entries are
// signer names as SignerName returns, or "issuers.cert-manager.io/*",
// "clusterissuers.cert-manager.io/*" and "*". Requests for other signers are
// left to Next (the policy approver), or left pending when Next is nil.
type AutoApprover struct {
	Signers []string
	Next    requests.Approver
}

// Decide implements requests.Approver.
func (a *AutoApprover) Decide(ctx context.Context, cr *api.CertificateRequest) (requests.Decision, error) {
	name := SignerName(cr.Namespace, cr.Spec.IssuerRef)
	for _, s := range a.Signers {
		if s == "*" || s == name || (len(s) > 2 && s[len(s)-2:] == "/*" && len(name) > len(s)-1 && name[:len(s)-1] == s[:len(s)-1]) {
			return requests.Decision{Result: requests.Approved, Reason: "cert-manager.io",
				Message: fmt.Sprintf("Certificate request has been approved by certfn: signer %s is auto-approved", name)}, nil
		}
	}
	if a.Next != nil {
		return a.Next.Decide(ctx, cr)
	}
	return requests.Decision{Result: requests.Unmatched,
		Message: fmt.Sprintf("Waiting for approval: signer %s is not auto-approved and no policy approver is configured; use `certfn approve`", name)}, nil
}
