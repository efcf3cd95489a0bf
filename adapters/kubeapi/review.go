package kubeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
)

// SelfSubjectAccessReview (authorization.k8s.io/v1) asks whether the caller
// may do something: `kubectl auth can-i`. certfn answers with its own RBAC
// (core/app's Authorize, the check every operation makes first) and its
// own rules on top: a verb certfn does not serve on a resource (writes of
// Orders, Challenges and Events, updates of Secrets, watch, subresources)
// is "no" whatever RBAC says, with the reason.
const (
	reviewGroupVersion = "authorization.k8s.io/v1"
	reviewKind         = "SelfSubjectAccessReview"
	reviewPlural       = "selfsubjectaccessreviews"
)

// AccessReview is a SelfSubjectAccessReview as sent and answered.
type AccessReview struct {
	Kind       string             `json:"kind"`
	APIVersion string             `json:"apiVersion"`
	Metadata   map[string]any     `json:"metadata,omitempty"`
	Spec       AccessReviewSpec   `json:"spec"`
	Status     AccessReviewStatus `json:"status"`
}

// AccessReviewSpec names one of the two attribute kinds.
type AccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
}

// ResourceAttributes are authorization.k8s.io/v1's (the selector fields
// of Kubernetes 1.31 and later are refused by name).
type ResourceAttributes struct {
	Namespace     string          `json:"namespace,omitempty"`
	Verb          string          `json:"verb,omitempty"`
	Group         string          `json:"group,omitempty"`
	Version       string          `json:"version,omitempty"`
	Resource      string          `json:"resource,omitempty"`
	Subresource   string          `json:"subresource,omitempty"`
	Name          string          `json:"name,omitempty"`
	FieldSelector json.RawMessage `json:"fieldSelector,omitempty"`
	LabelSelector json.RawMessage `json:"labelSelector,omitempty"`
}

// NonResourceAttributes name a path and a verb.
type NonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

// AccessReviewStatus is the answer.
type AccessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// reviewResource is the discovery entry of selfsubjectaccessreviews.
func reviewResource() APIResource {
	return APIResource{Name: reviewPlural, SingularName: strings.ToLower(reviewKind), Kind: reviewKind, Verbs: []string{"create"}}
}

// accessReview: POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews.
func (h *Handler) accessReview(w http.ResponseWriter, r *http.Request, caller app.Caller) error {
	if r.Method != http.MethodPost {
		return &statusError{code: http.StatusMethodNotAllowed, reason: "MethodNotAllowed",
			msg: fmt.Sprintf("the server does not allow this method on the requested resource (%s: only POST, to create a review)", r.Method)}
	}
	if _, err := checkQuery(r, []string{"dryRun", "fieldManager", "fieldValidation"}); err != nil {
		return err
	}
	media, body, err := readBodyIn(r, "application/json", protobufMedia)
	if err != nil {
		return err
	}
	var rev AccessReview
	if media == protobufMedia {
		if rev, err = decodeReviewProto(body); err != nil {
			return badRequest("the body of the request must be one SelfSubjectAccessReview: " + err.Error())
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rev); err != nil {
			return badRequest("the body of the request must be one SelfSubjectAccessReview: " + err.Error())
		}
	}
	if rev.Kind != reviewKind || rev.APIVersion != reviewGroupVersion {
		return badRequest(fmt.Sprintf("the API version in the data (%s) and the kind (%s) do not match the resource %s (%s, %s)",
			rev.APIVersion, rev.Kind, reviewPlural+".authorization.k8s.io", reviewGroupVersion, reviewKind))
	}
	spec := rev.Spec
	switch {
	case (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil):
		return invalidReview("spec.resourceAttributes", "exactly one of resourceAttributes or nonResourceAttributes must be specified")
	case spec.ResourceAttributes != nil && spec.ResourceAttributes.Verb == "":
		return invalidReview("spec.resourceAttributes.verb", "Required value")
	case spec.ResourceAttributes != nil && (spec.ResourceAttributes.FieldSelector != nil || spec.ResourceAttributes.LabelSelector != nil):
		return badRequest("spec.resourceAttributes.fieldSelector and labelSelector are not supported by certfn: its RBAC does not authorize by selector")
	case spec.NonResourceAttributes != nil && (spec.NonResourceAttributes.Path == "" || spec.NonResourceAttributes.Verb == ""):
		return invalidReview("spec.nonResourceAttributes", "path and verb are required")
	}
	if spec.ResourceAttributes != nil {
		rev.Status, err = h.reviewResource(r, caller, *spec.ResourceAttributes)
		if err != nil {
			return err
		}
	} else {
		rev.Status = reviewPath(*spec.NonResourceAttributes)
	}
	writeJSON(w, http.StatusCreated, rev)
	return nil
}

func invalidReview(field, msg string) error {
	return &statusError{code: http.StatusUnprocessableEntity, reason: "Invalid",
		msg:     fmt.Sprintf("%s.authorization.k8s.io is invalid: %s: %s", reviewKind, field, msg),
		details: &StatusDetails{Group: "authorization.k8s.io", Kind: reviewKind, Causes: []StatusCause{{Type: "FieldValueInvalid", Field: field, Message: msg}}}}
}

// reviewResource answers for a resource: certfn's served verbs first, then
// its RBAC. patch needs get and update in certfn's RBAC (a patch is a
// read, then a conditional write).
func (h *Handler) reviewResource(r *http.Request, caller app.Caller, a ResourceAttributes) (AccessReviewStatus, error) {
	no := func(format string, args ...any) (AccessReviewStatus, error) {
		return AccessReviewStatus{Reason: fmt.Sprintf(format, args...)}, nil
	}
	var res *resource
	for _, cand := range resources {
		if cand.group == a.Group && cand.info.Plural == a.Resource && (a.Version == "" || a.Version == cand.version) {
			res = cand
			break
		}
	}
	if res == nil {
		return no("certfn serves no resource %q in group %q", a.Resource, a.Group)
	}
	if a.Subresource != "" {
		return no("certfn answers for resources, not subresources (%s/%s): the one it serves, certificatesigningrequests/approval, "+
			"is decided by approve on the request's signer when the approval is made", a.Resource, a.Subresource)
	}
	if a.Verb != "patch" && !res.can(a.Verb) {
		return no("certfn does not serve %s on %s (served: %s)", a.Verb, qualified(res), strings.Join(res.verbs, ", "))
	}
	if a.Verb == "patch" && !res.can("update") {
		return no("certfn does not serve patch on %s (served: %s)", qualified(res), strings.Join(res.verbs, ", "))
	}
	ns := a.Namespace
	if !res.info.Namespaced {
		ns = ""
	}
	key := api.Key{Kind: res.info.Kind, Namespace: ns, Name: a.Name}
	verbs := []string{a.Verb}
	if a.Verb == "patch" {
		verbs = []string{rbac.VerbGet, rbac.VerbUpdate}
	}
	for _, verb := range verbs {
		err := h.svc.Authorize(r.Context(), caller, verb, key)
		switch {
		case errors.Is(err, app.ErrForbidden):
			return no("certfn's RBAC does not allow %s on %s%s", verb, qualified(res), where(ns))
		case err != nil:
			return AccessReviewStatus{EvaluationError: err.Error()}, nil
		}
	}
	return AccessReviewStatus{Allowed: true, Reason: fmt.Sprintf("certfn's RBAC allows %s on %s%s", a.Verb, qualified(res), where(ns))}, nil
}

func where(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// reviewPath answers for a path: discovery, OpenAPI and /version are open
// to every authenticated caller (as Kubernetes' system:discovery role),
// with GET; nothing else is served.
func reviewPath(a NonResourceAttributes) AccessReviewStatus {
	open := a.Path == "/version" || a.Path == "/api" || a.Path == "/apis" || strings.HasPrefix(a.Path, "/api/") ||
		strings.HasPrefix(a.Path, "/apis/") || strings.HasPrefix(a.Path, "/openapi/")
	if open && (a.Verb == "get" || a.Verb == "head") {
		return AccessReviewStatus{Allowed: true, Reason: "discovery, OpenAPI and /version are open to every authenticated caller"}
	}
	return AccessReviewStatus{Reason: fmt.Sprintf("certfn serves no %s on the path %s", a.Verb, a.Path)}
}

// protobufMedia is Kubernetes' protobuf media type: kubectl 1.32 and later
// send built-in kinds such as SelfSubjectAccessReview in it.
const protobufMedia = "application/vnd.kubernetes.protobuf"

// k8sProtoMagic starts every Kubernetes protobuf body, before a
// runtime.Unknown holding the object.
var k8sProtoMagic = []byte("k8s\x00")

// decodeReviewProto reads a SelfSubjectAccessReview from Kubernetes'
// protobuf envelope (runtime.Unknown: typeMeta 1 {apiVersion 1, kind 2},
// raw 2) with the field numbers of k8s.io/api's authorization/v1
// generated.proto. Fields certfn does not use are skipped, except the
// selectors, which it refuses as in JSON.
func decodeReviewProto(body []byte) (AccessReview, error) {
	var rev AccessReview
	raw, err := unwrapProto(body, &rev.APIVersion, &rev.Kind)
	if err != nil {
		return rev, err
	}
	err = protoFields(raw, func(num protowire.Number, v []byte) error {
		if num != 2 { // metadata and status: not read
			return nil
		}
		return protoFields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				a := &ResourceAttributes{}
				rev.Spec.ResourceAttributes = a
				return protoFields(v, func(num protowire.Number, v []byte) error {
					fields := map[protowire.Number]*string{1: &a.Namespace, 2: &a.Verb, 3: &a.Group, 4: &a.Version, 5: &a.Resource, 6: &a.Subresource, 7: &a.Name}
					switch {
					case fields[num] != nil:
						*fields[num] = string(v)
					case num == 8:
						a.FieldSelector = json.RawMessage(`{}`)
					case num == 9:
						a.LabelSelector = json.RawMessage(`{}`)
					}
					return nil
				})
			case 2:
				a := &NonResourceAttributes{}
				rev.Spec.NonResourceAttributes = a
				return protoFields(v, func(num protowire.Number, v []byte) error {
					switch num {
					case 1:
						a.Path = string(v)
					case 2:
						a.Verb = string(v)
					}
					return nil
				})
			}
			return nil
		})
	})
	return rev, err
}

// protoFields calls fn with the number and bytes of every length-delimited
// field of b, skipping fields of other wire types.
func protoFields(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("protobuf: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return fmt.Errorf("protobuf: field %d: %w", num, protowire.ParseError(m))
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return fmt.Errorf("protobuf: field %d: %w", num, protowire.ParseError(m))
		}
		b = b[m:]
		if err := fn(num, v); err != nil {
			return err
		}
	}
	return nil
}

// readBodyIn reads the request body if its Content-Type is one of media
// (none given: the first), and returns that media type; another is a 415
// naming those accepted.
func readBodyIn(r *http.Request, media ...string) (string, []byte, error) {
	mt := media[0]
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil || !contains(media, mt) {
			return "", nil, &statusError{code: http.StatusUnsupportedMediaType, reason: "UnsupportedMediaType",
				msg: fmt.Sprintf("the body of the request was in an unknown format (Content-Type %q) - accepted media types include: %s", ct, strings.Join(media, ", "))}
		}
	}
	body, err := readBody(r)
	return mt, body, err
}
