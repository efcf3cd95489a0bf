package kubeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// The status subresources of Certificates and CertificateRequests
// (PUT …/certificates/{name}/status, …/certificaterequests/{name}/status):
// what cmctl renew, approve and deny send (UpdateStatus with one condition
// added), and `kubectl replace --subresource=status`. certfn's controllers
// write status themselves, so a client may add only the decisions cmctl
// makes, each carried out by the application service with its own
// permissions:
//   - Certificate: Issuing=True is a renewal (core/app's Renew: update on
//     the Certificate);
//   - CertificateRequest: Approved=True or Denied=True is the decision
//     (core/app's Approve: approve on the request's signer).
//
// Any other difference from the stored status is a 422 naming
// status.conditions; the body's metadata.resourceVersion, when given, must
// be the stored one (409 otherwise), as on Kubernetes.

// statusBody is what the status PUT needs of the object.
type statusBody struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status struct {
		Conditions []approvalCondition `json:"conditions"`
	} `json:"status"`
}

// statusDecisions are the conditions a client may add, by kind.
var statusDecisions = map[string][]string{
	api.KindCertificate:        {api.CertificateConditionIssuing},
	api.KindCertificateRequest: {api.CertificateRequestConditionApproved, api.CertificateRequestConditionDenied},
}

func (h *Handler) statusSubresource(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, ns, name string) error {
	decisions := statusDecisions[res.info.Kind]
	key := api.Key{Kind: res.info.Kind, Namespace: ns, Name: name}
	if r.Method == http.MethodGet {
		// kubectl get --subresource=status: the object, as Kubernetes answers
		if _, err := checkQuery(r, getParams); err != nil {
			return err
		}
		o, err := h.svc.Get(r.Context(), caller, key)
		if err != nil {
			return &objectError{res: res, name: name, err: err}
		}
		raw, err := encode(res, o)
		if err != nil {
			return err
		}
		writeBytes(w, http.StatusOK, "application/json", raw)
		return nil
	}
	if r.Method != http.MethodPut {
		return &statusError{code: http.StatusMethodNotAllowed, reason: "MethodNotAllowed",
			msg: fmt.Sprintf("the server does not allow this method on the requested resource (%s on %s/status: only GET and PUT, as cmctl and kubectl replace --subresource=status send)", r.Method, qualified(res))}
	}
	if _, err := checkQuery(r, []string{"fieldManager", "fieldValidation"}); err != nil {
		return err
	}
	_, body, err := readBodyIn(r, "application/json")
	if err != nil {
		return err
	}
	// the object is checked whole, strictly (unknown and duplicate fields
	// refused, as on every write), then its conditions read
	if _, _, err := decodeBytes(body, res); err != nil {
		return err
	}
	var b statusBody
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&b); err != nil {
		return badRequest(fmt.Sprintf("the body of the request must be one %s: %v", res.info.Kind, err))
	}
	if b.Kind != res.info.Kind || b.APIVersion != res.info.APIVersion {
		return badRequest(fmt.Sprintf("the API version in the data (%s) and the kind (%s) do not match the resource %s (%s, %s)",
			b.APIVersion, b.Kind, qualified(res), res.info.APIVersion, res.info.Kind))
	}
	if b.Metadata.Name != name || (b.Metadata.Namespace != "" && b.Metadata.Namespace != ns) {
		return invalidApproval(res, name, "metadata.name", fmt.Sprintf("Invalid value: %q: the object (%s/%s) does not match the URL (%s/%s)",
			b.Metadata.Name, b.Metadata.Namespace, b.Metadata.Name, ns, name))
	}
	stored, err := h.svc.Get(r.Context(), caller, key)
	if err != nil {
		return &objectError{res: res, name: name, err: err}
	}
	if rv := stored.GetObjectMeta().ResourceVersion; b.Metadata.ResourceVersion != "" && b.Metadata.ResourceVersion != rv {
		return &objectError{res: res, name: name, err: fmt.Errorf("%w: metadata.resourceVersion: the object has been modified (version %q, the body names %q); read it again and decide on what it holds now",
			app.ErrConflict, rv, b.Metadata.ResourceVersion)}
	}
	was := map[string]string{}
	for _, c := range storedConditions(stored) {
		was[c.Type] = c.Status
	}
	var added []approvalCondition
	for _, c := range b.Status.Conditions {
		if res.info.Kind == api.KindCertificate && c.Type == api.CertificateConditionIssuing && c.Status == "True" {
			// a renewal also while one is in flight: core/app's Renew then
			// wakes that issuance (cmctl renew sets the condition again)
			added = append(added, c)
			continue
		}
		if was[c.Type] == c.Status {
			continue // as stored
		}
		if !contains(decisions, c.Type) || c.Status != "True" {
			return invalidApproval(res, name, "status.conditions", fmt.Sprintf("Invalid value: %s=%s: certfn writes %s status itself; a client may add only %s with status True",
				c.Type, c.Status, res.info.Kind, strings.Join(decisions, " or ")))
		}
		added = append(added, c)
	}
	switch {
	case len(added) == 0:
		return invalidApproval(res, name, "status.conditions", fmt.Sprintf("add %s with status True: nothing else in %s status is written by clients", strings.Join(decisions, " or "), res.info.Kind))
	case len(added) > 1:
		return invalidApproval(res, name, "status.conditions", fmt.Sprintf("add one of %s at a time", strings.Join(decisions, ", ")))
	}
	c := added[0]
	var out api.Object
	if res.info.Kind == api.KindCertificate {
		rr, err := h.svc.Renew(r.Context(), caller, key)
		if err != nil {
			return &objectError{res: res, name: name, err: err}
		}
		out = rr.Certificate
	} else {
		cr, err := h.svc.Approve(r.Context(), caller, key, c.Type == api.CertificateRequestConditionApproved, c.Reason, c.Message, b.Metadata.ResourceVersion)
		if err != nil {
			return &objectError{res: res, name: name, err: err}
		}
		out = cr
	}
	raw, err := encode(res, out)
	if err != nil {
		return err
	}
	writeBytes(w, http.StatusOK, "application/json", raw)
	return nil
}

// storedConditions returns the status conditions of a Certificate or a
// CertificateRequest as type and status.
func storedConditions(o api.Object) []approvalCondition {
	var out []approvalCondition
	switch v := o.(type) {
	case *api.Certificate:
		for _, c := range v.Status.Conditions {
			out = append(out, approvalCondition{Type: c.Type, Status: string(c.Status)})
		}
	case *api.CertificateRequest:
		for _, c := range v.Status.Conditions {
			out = append(out, approvalCondition{Type: c.Type, Status: string(c.Status)})
		}
	}
	return out
}
