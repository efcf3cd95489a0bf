package httpapi

import (
	"net/http"

	"github.com/certfn/certfn/core/app"
)

// csrApproval: POST /v1/certificatesigningrequests/{name}/approval, the
// approval subresource of a CertificateSigningRequest (docs/design/certificates-api.md), with
// the body of the CertificateRequest approval (ApprovalRequest). It needs
// `approve` on `signers` in certificates.k8s.io named by the CSR's
// signerName (or "<domain>/*"): creating CSRs does not grant it. A
// resourceVersion in the body is a precondition (409 on another version).
func (h *Handler) csrApproval(r *http.Request, caller app.Caller) (int, any, error) {
	var req ApprovalRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Approve == nil {
		return 0, nil, badRequestf("approve", "approve: required (true to approve, false to deny)")
	}
	c, err := h.svc.ApproveCSR(r.Context(), caller, r.PathValue("name"), *req.Approve, req.Reason, req.Message, req.ResourceVersion)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, c, nil
}
