package app

import (
	"context"
	"fmt"
	"reflect"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/policy"
)

// Dry-run actions.
const (
	DryRunCreate    = "created"
	DryRunConfigure = "configured"
	DryRunUnchanged = "unchanged"
)

// DryRunResult is what Apply would do with one object.
type DryRunResult struct {
	Key api.Key `json:"key"`
	// Action is created, configured or unchanged (as `kubectl apply
	// --dry-run` prints it).
	Action string `json:"action"`
	// Ignored lists cert-manager fields present but not acted on.
	Ignored []string `json:"ignored,omitempty"`
	// Approval is what the CertificateRequestPolicies decide about the
	// request of a Certificate or CertificateRequest; nil for other kinds.
	Approval *ApprovalPreview `json:"approval,omitempty"`
}

// ApprovalPreview is a policy decision on a request not made yet.
type ApprovalPreview struct {
	// Result is Approved, Denied or Unmatched (no policy applies).
	Result string `json:"result"`
	// Policy approved it (Approved only).
	Policy  string `json:"policy,omitempty"`
	Message string `json:"message"`
}

// DryRun checks objs exactly as Apply does — authorization, validation,
// escalation, quotas — and writes nothing; it returns what Apply would do
// with each. For a Certificate it also builds the CertificateRequest its
// issuance would create (a CSR signed with a throwaway key of the spec's
// algorithm, requested by certfn's own identity, names checked as the
// approval step checks them) and asks the CertificateRequestPolicies what
// they would decide; for a CertificateRequest, about that request with the
// caller as requester. Auto-approval lists and the built-in approver of a
// deployment are not consulted: the preview is the policies' verdict.
func (s *Service) DryRun(ctx context.Context, caller Caller, objs []api.Object) ([]DryRunResult, error) {
	p, err := s.checkApply(ctx, caller, objs)
	if err != nil {
		return nil, err
	}
	out := make([]DryRunResult, 0, len(objs))
	for i, o := range objs {
		r := DryRunResult{Key: api.KeyOf(o), Ignored: api.IgnoredFields(o), Action: DryRunCreate}
		switch {
		case secretStoreKind(r.Key.Kind) && p.oldSecrets[i] != nil:
			r.Action = DryRunConfigure // values are not compared: never read back
		case p.stored[i] != nil:
			r.Action = DryRunConfigure
			om, nm := p.stored[i].GetObjectMeta(), o.GetObjectMeta()
			if reflect.DeepEqual(specOf(p.stored[i]), specOf(o)) && mapsEqual(om.Labels, nm.Labels) && mapsEqual(om.Annotations, nm.Annotations) {
				r.Action = DryRunUnchanged
			}
		}
		var cr *api.CertificateRequest
		switch v := o.(type) {
		case *api.Certificate:
			if cr, err = s.previewRequest(v); err != nil {
				return nil, err
			}
		case *api.CertificateRequest:
			cr = v // its identity is the caller's (checkApply set it)
		}
		if cr != nil {
			if r.Approval, err = s.previewApproval(ctx, cr); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// previewRequest builds the CertificateRequest crt's issuance would create.
func (s *Service) previewRequest(crt *api.Certificate) (*api.CertificateRequest, error) {
	key, err := pki.GenerateKey(crt.Spec.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("dry run: a throwaway key for %s: %w", api.KeyOf(crt), err)
	}
	csr, err := pki.GenerateCSR(crt, key)
	if err != nil {
		return nil, fmt.Errorf("dry run: the CSR of %s: %w", api.KeyOf(crt), err)
	}
	id := s.identity
	return &api.CertificateRequest{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: crt.Name + "-dry-run", Namespace: crt.Namespace},
		Spec: api.CertificateRequestSpec{Duration: crt.Spec.Duration, IssuerRef: crt.Spec.IssuerRef, Request: csr,
			IsCA: crt.Spec.IsCA, Usages: crt.Spec.Usages, Username: id.Username, UID: id.UID, Groups: id.Groups},
	}, nil
}

// previewApproval is the policies' decision on cr, after the name check
// the approval step makes first.
func (s *Service) previewApproval(ctx context.Context, cr *api.CertificateRequest) (*ApprovalPreview, error) {
	if csr, err := pki.ParseCSRPEM(cr.Spec.Request); err == nil {
		if err := certificaterequests.CheckNames(csr); err != nil {
			return &ApprovalPreview{Result: string(policy.Denied), Message: err.Error()}, nil
		}
	}
	in, err := policy.LoadInput(ctx, s.repo, cr)
	if err != nil {
		return nil, fmt.Errorf("dry run: policies for %s: %w", api.KeyOf(cr), err)
	}
	d := s.evaluator.Preview(ctx, in)
	return &ApprovalPreview{Result: string(d.Result), Policy: d.Policy, Message: d.Message()}, nil
}
