package kubeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// The approval subresource of a CertificateSigningRequest
// (PUT …/certificatesigningrequests/{name}/approval): what `kubectl
// certificate approve` and `deny` send, the whole object with an Approved
// or a Denied condition added. As on Kubernetes, only the conditions are
// read from the body (the approval strategy keeps the rest of the stored
// object); the decision is core/app's ApproveCSR, with its permissions
// (approve on the signer) and the body's metadata.resourceVersion as the
// precondition, so a CSR changed since the approver read it is a 409.
// kubectl 1.32 and later send the body as Kubernetes protobuf; both are
// read.

// approvalBody is what the approval PUT needs of the object.
type approvalBody struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status struct {
		Conditions []approvalCondition `json:"conditions"`
	} `json:"status"`
}

type approvalCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// csrApproval serves PUT on the approval subresource of name.
func (h *Handler) csrApproval(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, name string) error {
	if r.Method != http.MethodPut {
		return &statusError{code: http.StatusMethodNotAllowed, reason: "MethodNotAllowed",
			msg: fmt.Sprintf("the server does not allow this method on the requested resource (%s on %s/approval: only PUT)", r.Method, qualified(res))}
	}
	if _, err := checkQuery(r, []string{"fieldManager", "fieldValidation"}); err != nil {
		return err
	}
	media, body, err := readBodyIn(r, "application/json", protobufMedia)
	if err != nil {
		return err
	}
	var b approvalBody
	if media == protobufMedia {
		b, err = decodeApprovalProto(body)
	} else if _, _, err = decodeBytes(body, res); err == nil {
		// the object is checked whole, strictly (unknown and duplicate
		// fields refused, as on every write), then its conditions read
		err = json.NewDecoder(bytes.NewReader(body)).Decode(&b)
	} else {
		return err
	}
	if err != nil {
		return badRequest("the body of the request must be one CertificateSigningRequest: " + err.Error())
	}
	if b.Kind != res.info.Kind || b.APIVersion != res.info.APIVersion {
		return badRequest(fmt.Sprintf("the API version in the data (%s) and the kind (%s) do not match the resource %s (%s, %s)",
			b.APIVersion, b.Kind, qualified(res), res.info.APIVersion, res.info.Kind))
	}
	if b.Metadata.Name != name {
		return invalidApproval(res, name, "metadata.name", fmt.Sprintf("Invalid value: %q: the name of the object (%s) does not match the name on the URL (%s)", b.Metadata.Name, b.Metadata.Name, name))
	}
	var decision *approvalCondition
	for i, c := range b.Status.Conditions {
		if (c.Type != api.CSRConditionApproved && c.Type != api.CSRConditionDenied) || c.Status != "True" {
			continue
		}
		if decision != nil && decision.Type != c.Type {
			return invalidApproval(res, name, "status.conditions", "Approved and Denied conditions are mutually exclusive")
		}
		decision = &b.Status.Conditions[i]
	}
	if decision == nil {
		return invalidApproval(res, name, "status.conditions", "an approval must add an Approved or a Denied condition with status True")
	}
	out, err := h.svc.ApproveCSR(r.Context(), caller, name, decision.Type == api.CSRConditionApproved, decision.Reason, decision.Message, b.Metadata.ResourceVersion)
	if err != nil {
		return &objectError{res: res, name: name, err: err}
	}
	raw, err := encode(res, out)
	if err != nil {
		return err
	}
	writeBytes(w, http.StatusOK, "application/json", raw)
	return nil
}

func invalidApproval(res *resource, name, field, msg string) error {
	return &statusError{code: http.StatusUnprocessableEntity, reason: "Invalid",
		msg:     fmt.Sprintf("%s %q is invalid: %s: %s", qualified(res), name, field, msg),
		details: &StatusDetails{Name: name, Group: res.group, Kind: res.info.Kind, Causes: []StatusCause{{Type: "FieldValueInvalid", Field: field, Message: msg}}}}
}

// decodeApprovalProto reads what the approval needs from a
// CertificateSigningRequest in Kubernetes' protobuf envelope, with the
// field numbers of k8s.io/api's certificates/v1 generated.proto
// (metadata 1 {name 1, resourceVersion 6}, status 3 {conditions 1 {type 1,
// reason 2, message 3, status 6}}); the spec is not read, as the approval
// subresource keeps the stored one.
func decodeApprovalProto(body []byte) (approvalBody, error) {
	var b approvalBody
	raw, err := unwrapProto(body, &b.APIVersion, &b.Kind)
	if err != nil {
		return b, err
	}
	err = protoFields(raw, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					b.Metadata.Name = string(v)
				case 6:
					b.Metadata.ResourceVersion = string(v)
				}
				return nil
			})
		case 3:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				if num != 1 {
					return nil
				}
				var c approvalCondition
				fields := map[protowire.Number]*string{1: &c.Type, 2: &c.Reason, 3: &c.Message, 6: &c.Status}
				err := protoFields(v, func(num protowire.Number, v []byte) error {
					if p := fields[num]; p != nil {
						*p = string(v)
					}
					return nil
				})
				b.Status.Conditions = append(b.Status.Conditions, c)
				return err
			})
		}
		return nil
	})
	return b, err
}

// unwrapProto reads Kubernetes' protobuf envelope (the magic, then a
// runtime.Unknown: typeMeta 1 {apiVersion 1, kind 2}, raw 2,
// contentEncoding 3) and returns the object's bytes.
func unwrapProto(body []byte, apiVersion, kind *string) ([]byte, error) {
	if !bytes.HasPrefix(body, k8sProtoMagic) {
		return nil, errors.New("no Kubernetes protobuf envelope (the body must start with k8s\\x00)")
	}
	var raw []byte
	err := protoFields(body[len(k8sProtoMagic):], func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					*apiVersion = string(v)
				case 2:
					*kind = string(v)
				}
				return nil
			})
		case 2:
			raw = v
		case 3:
			if len(v) > 0 {
				return fmt.Errorf("contentEncoding %q is not supported", v)
			}
		}
		return nil
	})
	return raw, err
}
