// Package envconf holds the parsers every deployment's CERTFN_*
// configuration uses (internal/awsmode, internal/gcpmode): each reads one
// variable's value and reports a bad one through bad(name, format, ...),
// so a deployment lists every problem of its environment at once, each
// naming its variable and the rule.
package envconf

import (
	"strconv"
	"strings"
)

// Bad records a problem with the variable name.
type Bad func(name, format string, a ...any)

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// IntVar parses v as an integer from lo to hi (def when v is empty).
func IntVar(v string, def, lo, hi int, name string, bad Bad) int {
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		bad(name, "%q is not an integer from %d to %d", v, lo, hi)
		return def
	}
	return n
}

// BoolVar parses v as a boolean (def when v is empty).
func BoolVar(v string, def bool, name string, bad Bad) bool {
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		bad(name, "%q is not a boolean (true or false)", v)
		return def
	}
	return b
}

// Approvers a deployment can run (CERTFN_APPROVER, `serve --approver`).
const (
	// ApproverCertManager is cert-manager's built-in approver: every request
	// for a cert-manager issuer is approved (its approveSignerNames,
	// default issuers.cert-manager.io/* and clusterissuers.cert-manager.io/*),
	// unless an auto-approve list narrows it; requests for other signers
	// are decided by CertificateRequestPolicies. Local mode's default, as
	// a plain cert-manager install.
	ApproverCertManager = "cert-manager"
	// ApproverPolicy turns the built-in approver off, as teams do when they
	// install approver-policy: only CertificateRequestPolicies (and an
	// explicit auto-approve list) approve. The cloud deployments' default.
	ApproverPolicy = "policy"
)

// AutoApprove returns the signer names approved without a policy (with
// "*" expanded by the caller) for approver mode (def when empty) and the
// comma-separated list (nil: not given). With ApproverCertManager an
// absent list means every cert-manager signer ("*"); with ApproverPolicy
// it means none. An unknown mode is reported through bad under modeName.
func AutoApprove(mode string, list *string, def, modeName string, bad Bad) (string, []string) {
	if mode == "" {
		mode = def
	}
	switch mode {
	case ApproverCertManager:
		if list == nil {
			return mode, []string{"*"}
		}
	case ApproverPolicy:
		if list == nil {
			return mode, nil
		}
	default:
		bad(modeName, "%q is not an approver: want %s (cert-manager's built-in approver) or %s (CertificateRequestPolicies only)",
			mode, ApproverCertManager, ApproverPolicy)
		return def, nil
	}
	return mode, SplitList(*list)
}

// DescribeApprover is the line a deployment logs at start: which approver
// decides, and what is approved without a policy.
func DescribeApprover(mode string, signers []string) string {
	switch {
	case mode == ApproverCertManager && len(signers) == 1 && signers[0] == "*":
		return "approver: cert-manager's built-in approver: every request for a cert-manager issuer is approved " +
			"(issuers.cert-manager.io/*, clusterissuers.cert-manager.io/*); --approver policy (CERTFN_APPROVER=policy) leaves approval to CertificateRequestPolicies"
	case len(signers) == 0:
		return "approver: CertificateRequestPolicies only (approver-policy): a request no policy approves stays pending"
	default:
		return "approver: requests for " + strings.Join(signers, ", ") + " are approved without a policy; others by CertificateRequestPolicies"
	}
}
