package kubeapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// The query parameters each verb implements; any other is a 400 naming
// it (unimplemented names a reason, below).
var (
	listParams   = []string{"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "includeObject", "watch"}
	getParams    = []string{"resourceVersion"}
	writeParams  = []string{"dryRun", "fieldManager", "fieldValidation"}
	deleteParams = []string{"dryRun", "propagationPolicy", "gracePeriodSeconds"}
)

// unimplemented says why a Kubernetes parameter certfn knows is refused.
var unimplemented = map[string]string{
	"resourceVersionMatch": "certfn serves the latest version only",
	"allowWatchBookmarks":  "watching is not supported",
	"timeoutSeconds":       "watching is not supported",
	"sendInitialEvents":    "watching is not supported",
	"force":                "server-side apply is not supported",
	"orphanDependents":     "what an object owns is always deleted with it",
	"pretty":               "answers are compact JSON",
}

// checkQuery refuses every parameter not in allowed, and repeated ones.
func checkQuery(r *http.Request, allowed []string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("query string: " + err.Error())
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !contains(allowed, name) {
			why := unimplemented[name]
			if why == "" {
				why = "supported: " + strings.Join(allowed, ", ")
			}
			return nil, badRequest(fmt.Sprintf("query parameter %q is not supported by certfn on %s %s (%s)", name, r.Method, r.URL.Path, why))
		}
		if len(q[name]) > 1 {
			return nil, badRequest(fmt.Sprintf("query parameter %q is given %d times: give it once", name, len(q[name])))
		}
	}
	if rv := q.Get("resourceVersion"); rv != "" && rv != "0" {
		return nil, badRequest(fmt.Sprintf("resourceVersion=%q is not supported: certfn serves the latest version only (leave it out or give 0)", rv))
	}
	if v, ok := q["fieldValidation"]; ok && v[0] != "Strict" {
		return nil, badRequest(fmt.Sprintf("fieldValidation=%q is not supported: certfn refuses unknown and duplicate fields always (Strict)", v[0]))
	}
	if v, ok := q["dryRun"]; ok && v[0] != "All" {
		return nil, badRequest(fmt.Sprintf("dryRun=%q: want All (or leave it out)", v[0]))
	}
	if v, ok := q["fieldManager"]; ok && len(v[0]) > 128 {
		return nil, badRequest("fieldManager: must be at most 128 characters")
	}
	return q, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// collection: GET (list) and POST (create) on /.../{plural}.
func (h *Handler) collection(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, ns string) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return h.list(w, r, caller, res, ns)
	case http.MethodPost:
		if !res.can("create") {
			return notAllowed(r, res)
		}
		return h.create(w, r, caller, res, ns)
	case http.MethodDelete:
		return badRequest(fmt.Sprintf("deletecollection (DELETE on %s) is not supported by certfn: delete the objects one by one", qualified(res)))
	}
	return notAllowed(r, res)
}

// item: GET, PUT, PATCH and DELETE on /.../{plural}/{name}.
func (h *Handler) item(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, ns, name string) error {
	key := api.Key{Kind: res.info.Kind, Namespace: ns, Name: name}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return h.get(w, r, caller, res, key)
	case http.MethodPut:
		if !res.can("update") {
			return notAllowed(r, res)
		}
		return h.update(w, r, caller, res, key)
	case http.MethodPatch:
		if !res.can("patch") {
			return notAllowed(r, res)
		}
		return h.patch(w, r, caller, res, key)
	case http.MethodDelete:
		return h.delete(w, r, caller, res, key)
	}
	return notAllowed(r, res)
}

func notAllowed(r *http.Request, res *resource) error {
	return &statusError{code: http.StatusMethodNotAllowed, reason: "MethodNotAllowed",
		msg: fmt.Sprintf("the server does not allow this method on the requested resource (%s on %s; verbs: %s)",
			r.Method, qualified(res), strings.Join(res.verbs, ", "))}
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, key api.Key) error {
	if _, err := checkQuery(r, getParams); err != nil {
		return err
	}
	form, err := negotiate(r)
	if err != nil {
		return err
	}
	o, err := h.svc.Get(r.Context(), caller, key)
	if err != nil {
		return &objectError{res: res, name: key.Name, err: err}
	}
	raw, err := encode(res, o)
	if err != nil {
		return err
	}
	if form.table {
		t, err := h.table(res, form, []json.RawMessage{raw}, ListMeta{ResourceVersion: o.GetObjectMeta().ResourceVersion})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, t)
		return nil
	}
	writeBytes(w, http.StatusOK, "application/json", raw)
	return nil
}

// list answers a kind's list (CertificateList, ...) or its Table. The
// list's metadata.resourceVersion is the highest resourceVersion of its
// items: certfn has no global revision, so it cannot start a watch.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, caller app.Caller, res *resource, ns string) error {
	q, err := checkQuery(r, listParams)
	if err != nil {
		return err
	}
	if q.Has("includeObject") {
		switch q.Get("includeObject") {
		case "None", "Metadata", "Object":
		default:
			return badRequest(fmt.Sprintf("includeObject=%q: want None, Metadata or Object", q.Get("includeObject")))
		}
	}
	form, err := negotiate(r)
	if err != nil {
		return err
	}
	form.include = q.Get("includeObject")
	if form.include != "" && !form.table {
		return badRequest("includeObject applies to Table answers only (Accept: application/json;as=Table;v=v1;g=meta.k8s.io)")
	}
	// The service reads every field selector, the Events' involvedObject.*
	// ones too (a caller who may get an object may list its Events so
	// pinned: kubectl describe).
	opts := app.ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}
	var (
		objs []api.Object
		cont string
	)
	if q.Has("limit") || q.Has("continue") {
		limit := 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return badRequest(fmt.Sprintf("limit=%q: want a whole number >= 0", v))
			}
			limit = n
		}
		objs, cont, err = h.svc.ListPage(r.Context(), caller, res.info.Kind, ns, opts, limit, q.Get("continue"))
	} else {
		objs, err = h.svc.List(r.Context(), caller, res.info.Kind, ns, opts)
	}
	if err != nil {
		return &objectError{res: res, err: err}
	}
	meta := ListMeta{Continue: cont}
	items := make([]json.RawMessage, 0, len(objs))
	var highest int64
	for _, o := range objs {
		raw, err := encode(res, o)
		if err != nil {
			return err
		}
		items = append(items, raw)
		if v, err := strconv.ParseInt(o.GetObjectMeta().ResourceVersion, 10, 64); err == nil && v > highest {
			highest = v
		}
	}
	if highest > 0 {
		meta.ResourceVersion = strconv.FormatInt(highest, 10)
	} else {
		meta.ResourceVersion = "0"
	}
	if form.table {
		t, err := h.table(res, form, items, meta)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, t)
		return nil
	}
	writeJSON(w, http.StatusOK, List{Kind: res.info.Kind + "List", APIVersion: res.groupVersion(), Metadata: meta, Items: items})
	return nil
}

// encode marshals o with its apiVersion and kind.
func encode(res *resource, o api.Object) (json.RawMessage, error) {
	tm := o.GetTypeMeta()
	tm.APIVersion, tm.Kind = res.info.APIVersion, res.info.Kind
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", api.KeyOf(o), err)
	}
	return b, nil
}

// form is what the client accepts: a Table (as=Table; v1 or v1beta1) or
// the object itself.
type form struct {
	table        bool
	tableVersion string
	include      string
}

// negotiate reads the Accept header: the first media type it lists that
// certfn serves (JSON, or a meta.k8s.io Table as JSON); 406 when none is.
func negotiate(r *http.Request) (form, error) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		return form{}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*", "application/*":
			return form{}, nil
		case "application/json":
			switch params["as"] {
			case "":
				return form{}, nil
			case "Table":
				if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
					return form{table: true, tableVersion: params["v"]}, nil
				}
			}
		}
	}
	return form{}, &statusError{code: http.StatusNotAcceptable, reason: "NotAcceptable",
		msg: fmt.Sprintf("only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io (Accept: %q)", accept)}
}

// readBody reads the whole (size-limited) body.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, err
		}
		return nil, badRequest("read body: " + err.Error())
	}
	return b, nil
}
