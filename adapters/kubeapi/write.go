package kubeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// decodeObject reads the body of a POST or PUT as one object of res
// (JSON; unknown fields refused as fieldValidation=Strict words it).
func decodeObject(r *http.Request, res *resource) (api.Object, []string, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, nil, &statusError{code: http.StatusUnsupportedMediaType, reason: "UnsupportedMediaType",
				msg: fmt.Sprintf("the body of the request was in an unknown format (Content-Type %q) - accepted media types include: application/json", ct)}
		}
	}
	body, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	return decodeBytes(body, res)
}

// decodeBytes decodes one JSON object of res.
func decodeBytes(body []byte, res *resource) (api.Object, []string, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil, badRequest("the body of the request must be one JSON object")
	}
	objs, warns, err := api.DecodeWarnings(trimmed)
	if err != nil {
		return nil, nil, decodeError(res, err)
	}
	if len(objs) != 1 {
		return nil, nil, badRequest(fmt.Sprintf("the body of the request must be one %s, got %d objects", res.info.Kind, len(objs)))
	}
	o := objs[0]
	if tm := o.GetTypeMeta(); tm.Kind != res.info.Kind || tm.APIVersion != res.info.APIVersion {
		return nil, nil, badRequest(fmt.Sprintf("the API version in the data (%s) and the kind (%s) do not match the resource %s (%s, %s)",
			tm.APIVersion, tm.Kind, qualified(res), res.info.APIVersion, res.info.Kind))
	}
	return o, warns, nil
}

// decodeError words a decoding failure as the Kubernetes API server does
// for custom resources: unknown fields as strict decoding errors, the
// rest as a body that cannot be handled; each a 400.
func decodeError(res *resource, err error) error {
	var fe api.FieldErrors
	prefix := fmt.Sprintf("%s in version %q cannot be handled as a %s: ", res.info.Kind, res.version, res.info.Kind)
	if errors.As(err, &fe) && len(fe) > 0 {
		var unknown, other []string
		for _, e := range fe {
			if e.Rule == "unknown field" {
				unknown = append(unknown, fmt.Sprintf("unknown field %q", e.Path))
			} else {
				other = append(other, e.Path+": "+e.Rule)
			}
		}
		if len(other) == 0 {
			return badRequest(prefix + "strict decoding error: " + strings.Join(unknown, ", "))
		}
		return badRequest(prefix + strings.Join(append(other, unknown...), ", "))
	}
	return badRequest(prefix + strings.ReplaceAll(err.Error(), "\n", "; "))
}

// warn sends decoding warnings as Warning headers (kubectl prints them).
func warn(w http.ResponseWriter, warns []string) {
	for _, m := range warns {
		w.Header().Add("Warning", "299 - "+strconv.Quote(m))
	}
}

// placed checks the object's name and namespace against the URL (the
// namespace is taken from the URL when the object has none).
func placed(res *resource, o api.Object, ns, name string) error {
	m := o.GetObjectMeta()
	if res.info.Namespaced {
		if m.Namespace == "" {
			m.Namespace = ns
		}
		if m.Namespace != ns {
			return badRequest(fmt.Sprintf("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.Namespace, ns))
		}
	}
	if name != "" && m.Name != name {
		return badRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.Name, name))
	}
	if m.Name == "" {
		if m.GenerateName != "" {
			return badRequest("metadata.generateName is not supported by certfn: give metadata.name")
		}
		return &statusError{code: http.StatusUnprocessableEntity, reason: "Invalid",
			msg:     fmt.Sprintf("%s %q is invalid: metadata.name: Required value: name or generateName is required", res.info.Kind, ""),
			details: &StatusDetails{Group: res.group, Kind: res.info.Kind, Causes: []StatusCause{{Type: "FieldValueRequired", Field: "metadata.name", Message: "Required value: name or generateName is required"}}}}
	}
	return nil
}

// answer sends the object at key as the service stores it now (what
// the caller may read), or o when the caller may not read it.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, status int, o api.Object) error {
	if stored, err := h.svc.Get(r.Context(), caller, api.KeyOf(o)); err == nil {
		o = stored
	}
	raw, err := encode(res, o)
	if err != nil {
		return err
	}
	writeBytes(w, status, "application/json", raw)
	return nil
}

// dryRun runs every check of writing o (core/app's DryRun) and returns
// what the write would do: created or configured/unchanged.
func (h *Handler) dryRun(r *http.Request, caller app.Caller, res *resource, o api.Object) (created bool, err error) {
	out, err := h.svc.DryRun(r.Context(), caller, []api.Object{o})
	if err != nil {
		return false, &objectError{res: res, name: o.GetObjectMeta().Name, err: err}
	}
	return len(out) == 1 && out[0].Action == "created", nil
}

// create: POST on a collection (201; an existing object is 409 AlreadyExists).
func (h *Handler) create(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, ns string) error {
	q, err := checkQuery(r, writeParams)
	if err != nil {
		return err
	}
	o, warns, err := decodeObject(r, res)
	if err != nil {
		return err
	}
	if err := placed(res, o, ns, ""); err != nil {
		return err
	}
	name := o.GetObjectMeta().Name
	warn(w, warns)
	if q.Get("dryRun") == "All" {
		if err := h.svc.Authorize(r.Context(), caller, "create", api.KeyOf(o)); err != nil {
			return &objectError{res: res, name: name, err: err}
		}
		created, err := h.dryRun(r, caller, res, o)
		if err != nil {
			return err
		}
		if !created {
			return &objectError{res: res, name: name, err: app.ErrAlreadyExists}
		}
		raw, err := encode(res, o)
		if err != nil {
			return err
		}
		writeBytes(w, http.StatusCreated, "application/json", raw)
		return nil
	}
	if _, err := h.svc.Create(r.Context(), caller, o); err != nil {
		return &objectError{res: res, name: name, err: err}
	}
	return h.answer(w, r, caller, res, http.StatusCreated, o)
}

// update: PUT on an object (404 when it does not exist: PUT never creates).
func (h *Handler) update(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, key api.Key) error {
	q, err := checkQuery(r, writeParams)
	if err != nil {
		return err
	}
	o, warns, err := decodeObject(r, res)
	if err != nil {
		return err
	}
	if err := placed(res, o, key.Namespace, key.Name); err != nil {
		return err
	}
	warn(w, warns)
	return h.write(w, r, caller, res, q.Get("dryRun") == "All", o)
}

// write updates o (a PUT, or a patch's result).
func (h *Handler) write(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, dry bool, o api.Object) error {
	name := o.GetObjectMeta().Name
	if dry {
		if err := h.svc.Authorize(r.Context(), caller, "update", api.KeyOf(o)); err != nil {
			return &objectError{res: res, name: name, err: err}
		}
		created, err := h.dryRun(r, caller, res, o)
		if err != nil {
			return err
		}
		if created {
			return &objectError{res: res, name: name, err: fmt.Errorf("%s: %w", api.KeyOf(o), app.ErrNotFound)}
		}
		raw, err := encode(res, o)
		if err != nil {
			return err
		}
		writeBytes(w, http.StatusOK, "application/json", raw)
		return nil
	}
	if _, err := h.svc.Update(r.Context(), caller, o); err != nil {
		return &objectError{res: res, name: name, err: err}
	}
	return h.answer(w, r, caller, res, http.StatusOK, o)
}

// builtinGroups are Kubernetes' own groups, whose kinds kubectl patches
// with strategic merge patches.
var builtinGroups = map[string]bool{"": true, "rbac.authorization.k8s.io": true, "certificates.k8s.io": true}

// maxPatchAttempts bounds a patch's read-merge-write retries after a lost
// race (when the patch names no resourceVersion of its own).
const maxPatchAttempts = 3

// patch: PATCH on an object with a JSON merge patch (RFC 7386; what
// `kubectl apply` sends for custom resources), or for Kubernetes' own kinds
// a strategic merge patch without directives, which is then the same
// merge.
func (h *Handler) patch(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, key api.Key) error {
	q, err := checkQuery(r, writeParams)
	if err != nil {
		return err
	}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/merge-patch+json":
	case "application/strategic-merge-patch+json":
		if !builtinGroups[res.group] {
			return &statusError{code: http.StatusUnsupportedMediaType, reason: "UnsupportedMediaType",
				msg: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/merge-patch+json (%s is not a built-in kind: no strategic merge patch)", qualified(res))}
		}
	case "application/json-patch+json":
		return badRequest("JSON patch (application/json-patch+json) is not supported by certfn: send a merge patch (application/merge-patch+json)")
	case "application/apply-patch+yaml", "application/apply-patch+cbor":
		return badRequest("server-side apply is not supported by certfn: use client-side kubectl apply (--server-side=false)")
	default:
		return &statusError{code: http.StatusUnsupportedMediaType, reason: "UnsupportedMediaType",
			msg: fmt.Sprintf("the body of the request was in an unknown format (Content-Type %q) - accepted media types include: application/merge-patch+json", ct)}
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var patch map[string]any
	if err := json.Unmarshal(body, &patch); err != nil || patch == nil {
		return badRequest("the patch must be one JSON object")
	}
	if mt == "application/strategic-merge-patch+json" {
		if path := directive(patch, ""); path != "" {
			return badRequest(fmt.Sprintf("strategic merge patch directive %q is not supported by certfn (only directive-free patches, applied as merge patches)", path))
		}
	}
	ownVersion := false
	if m, ok := patch["metadata"].(map[string]any); ok {
		_, ownVersion = m["resourceVersion"]
	}
	for attempt := 1; ; attempt++ {
		stored, err := h.svc.Get(r.Context(), caller, key)
		if err != nil {
			return &objectError{res: res, name: key.Name, err: err}
		}
		raw, err := encode(res, stored)
		if err != nil {
			return err
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		merged, err := json.Marshal(mergePatch(doc, patch))
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		o, warns, err := decodeBytes(merged, res)
		if err != nil {
			return err
		}
		if err := placed(res, o, key.Namespace, key.Name); err != nil {
			return err
		}
		if attempt == 1 {
			warn(w, warns)
		}
		err = h.write(w, r, caller, res, q.Get("dryRun") == "All", o)
		if err == nil || ownVersion || attempt >= maxPatchAttempts || !errors.Is(err, app.ErrConflict) {
			return err
		}
	}
}

// mergePatch applies an RFC 7386 merge patch to doc.
func mergePatch(doc any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}

// directive returns the path of the first strategic merge patch
// directive ("$patch", "$setElementOrder/...", "$retainKeys", ...) in p.
func directive(p any, path string) string {
	switch v := p.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.HasPrefix(k, "$") {
				return strings.TrimPrefix(path+"."+k, ".")
			}
			if d := directive(e, path+"."+k); d != "" {
				return d
			}
		}
	case []any:
		for i, e := range v {
			if d := directive(e, fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	}
	return ""
}

// deleteOptions is metav1.DeleteOptions as a DELETE's body may carry it.
type deleteOptions struct {
	Kind               string            `json:"kind,omitempty"`
	APIVersion         string            `json:"apiVersion,omitempty"`
	DryRun             []string          `json:"dryRun,omitempty"`
	GracePeriodSeconds *int64            `json:"gracePeriodSeconds,omitempty"`
	PropagationPolicy  *string           `json:"propagationPolicy,omitempty"`
	Preconditions      app.Preconditions `json:"preconditions,omitzero"`
}

// delete: DELETE on an object, with DeleteOptions in the body and/or
// dryRun, propagationPolicy and gracePeriodSeconds as query parameters.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, key api.Key) error {
	q, err := checkQuery(r, deleteParams)
	if err != nil {
		return err
	}
	var body deleteOptions
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				return badRequest(fmt.Sprintf("DeleteOptions field %s is not supported by certfn (supported: dryRun, preconditions, propagationPolicy, gracePeriodSeconds)", f))
			}
			return badRequest("the body is not a DeleteOptions JSON object: " + err.Error())
		}
		if body.Kind != "" && body.Kind != "DeleteOptions" {
			return badRequest(fmt.Sprintf("kind %q: want DeleteOptions", body.Kind))
		}
	}
	var opts app.DeleteOptions
	dry := body.DryRun
	if v := q.Get("dryRun"); v != "" {
		dry = append(dry, v)
	}
	for _, d := range dry {
		if d != "All" {
			return badRequest(fmt.Sprintf("dryRun=%q: want All (or leave it out)", d))
		}
		opts.DryRun = true
	}
	policies := []string{q.Get("propagationPolicy")}
	if body.PropagationPolicy != nil {
		policies = append(policies, *body.PropagationPolicy)
	}
	for _, p := range policies {
		switch p {
		case "", "Background", "Foreground":
		case "Orphan":
			return badRequest("propagationPolicy=Orphan is not supported by certfn: what an object owns is always deleted with it (want Background or Foreground)")
		default:
			return badRequest(fmt.Sprintf("propagationPolicy=%q: want Background or Foreground", p))
		}
	}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return badRequest(fmt.Sprintf("gracePeriodSeconds=%q: want a whole number >= 0 (deletion is immediate whatever it is)", v))
		}
	}
	if body.GracePeriodSeconds != nil && *body.GracePeriodSeconds < 0 {
		return badRequest("gracePeriodSeconds: want a whole number >= 0")
	}
	opts.Preconditions = body.Preconditions
	if err := h.svc.Delete(r.Context(), caller, key, opts); err != nil {
		return &objectError{res: res, name: key.Name, err: err}
	}
	writeJSON(w, http.StatusOK, Status{Kind: "Status", APIVersion: "v1", Status: "Success",
		Details: &StatusDetails{Name: key.Name, Group: res.group, Kind: res.info.Plural}})
	return nil
}
