// Package httpapi is certfn's cloud-neutral HTTP API as an
// http.Handler: create/apply, get, list and delete every kind, the approval
// subresource of CertificateRequests, renewal, and the status explanation
// of a Certificate. The caller's identity comes from an Authenticate
// function supplied by the cloud entry point (on AWS: the IAM identity a
// Lambda Function URL with AWS_IAM auth puts in the request context; see
// functions/aws/api); it feeds the RBAC bindings and is recorded as the
// requester of the CertificateRequests the caller creates (docs/design/certificates-api.md).
//
// Requests and answers are JSON (apply also takes YAML with Content-Type:
// application/yaml). Errors are JSON objects {"error", "reason", "field",
// "details"} with 400 (malformed), 401 (no or invalid identity), 403
// (bindings deny), 404, 405, 409 (conflict with the stored state), 413
// (body larger than MaxBody), 415, 422 (validation, with field paths) or
// 500. Kubernetes' parameters mean what they mean there (labelSelector and
// fieldSelector on lists, dryRun and DeleteOptions preconditions on
// deletes, a manifest's metadata.resourceVersion on apply); a query
// parameter a route does not implement, or one given twice, is a 400
// naming it (params.go). The API has no secret endpoint and never reads
// the secret store. See docs/reference/api.md.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/validation"
)

// DefaultMaxBody is the default limit on a request body (1 MiB).
const DefaultMaxBody int64 = 1 << 20

// ErrUnauthenticated marks a request without a usable identity (401).
// Authenticate functions should wrap it.
var ErrUnauthenticated = errors.New("unauthenticated")

// Config configures the API handler.
type Config struct {
	// Service performs the operations (required): the application
	// service of the deployment's role (core/app).
	Service *app.Service
	// Authenticate returns the caller of a request, or an error (401). It
	// must take the identity from something the platform verified (a
	// request context set by the function runtime), never from a header
	// or body the client chose. Required.
	Authenticate func(*http.Request) (app.Caller, error)
	// MaxBody limits request bodies in bytes (default DefaultMaxBody);
	// larger bodies are refused with 413.
	MaxBody int64
	// Logger receives one line per failed request (5xx at error level,
	// others at info level); never a body. Default: slog.Default().
	Logger *slog.Logger
}

// Handler serves the API. It is safe for concurrent use.
type Handler struct {
	cfg Config
	svc *app.Service
	mux *http.ServeMux
}

// New checks cfg and returns the API handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("httpapi: Service is required")
	}
	if cfg.Authenticate == nil {
		return nil, errors.New("httpapi: Authenticate is required")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{cfg: cfg, svc: cfg.Service, mux: http.NewServeMux()}
	h.route("/v1/apply", h.apply, on(http.MethodPost, "dryRun"))
	// A collection has no DELETE (Kubernetes' deletecollection): 405.
	h.route("/v1/{plural}", h.collection, on(http.MethodGet, listParams...))
	h.route("/v1/namespaces/{ns}/{plural}", h.collection, on(http.MethodGet, listParams...))
	h.route("/v1/{plural}/{name}", h.item, on(http.MethodGet), on(http.MethodDelete, deleteParams...))
	h.route("/v1/namespaces/{ns}/{plural}/{name}", h.item, on(http.MethodGet), on(http.MethodDelete, deleteParams...))
	h.route("/v1/namespaces/{ns}/certificaterequests/{name}/approval", h.approval, on(http.MethodPost))
	h.route("/v1/certificatesigningrequests/{name}/approval", h.csrApproval, on(http.MethodPost))
	h.route("/v1/namespaces/{ns}/certificates/{name}/renew", h.renew, on(http.MethodPost))
	h.route("/v1/namespaces/{ns}/certificates/{name}/status", h.status, on(http.MethodGet))
	h.route("/", func(*http.Request, app.Caller) (int, any, error) {
		return 0, nil, notFoundf("no such route (see docs/reference/api.md)")
	}, on(""))
	return h, nil
}

// endpoint handles an authenticated request and returns the status and
// value to send as JSON, or an error.
type endpoint func(r *http.Request, caller app.Caller) (int, any, error)

// route registers ep for pattern with its verbs (on("") = any method,
// any query): another method is a 405, a query parameter the verb does
// not list a 400 naming it, before ep runs.
func (h *Handler) route(pattern string, ep endpoint, verbs ...verb) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := checkAllowed(r, verbs); err != nil {
			var re *requestError
			if errors.As(err, &re) && re.allow != "" {
				w.Header().Set("Allow", re.allow)
			}
			h.fail(w, r, callerFrom(r.Context()).Username, err)
			return
		}
		caller := callerFrom(r.Context())
		status, v, err := ep(r, caller)
		if err != nil {
			h.fail(w, r, caller.Username, err)
			return
		}
		writeJSON(w, status, v)
	})
}

type callerKey struct{}

func callerFrom(ctx context.Context) app.Caller {
	c, _ := ctx.Value(callerKey{}).(app.Caller)
	return c
}

// ServeHTTP authenticates the request (401 without an identity) and routes it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, err := h.cfg.Authenticate(r)
	if err == nil && caller.Username == "" {
		err = errors.New("the identity has no username")
	}
	if err != nil {
		if !errors.Is(err, ErrUnauthenticated) {
			err = fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		h.fail(w, r, "", err)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBody)
	}
	ctx := context.WithValue(r.Context(), callerKey{}, caller)
	h.mux.ServeHTTP(w, r.WithContext(ctx))
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error   string            `json:"error"`
	Reason  string            `json:"reason"`
	Field   string            `json:"field,omitempty"`
	Details []app.ErrorDetail `json:"details,omitempty"`
}

// classify maps an error to its HTTP status and the error body's reason and
// field path: the transport's own errors, then the application service's
// domain errors (core/app), then what the store or a step said.
func classify(err error) (status int, reason, field string, details []app.ErrorDetail) {
	var (
		reqErr *requestError
		fldErr *app.FieldError
		maxErr *http.MaxBytesError
		valErr *app.ValidationError
		vl     validation.ErrorList
		fe     api.FieldErrors
	)
	switch {
	case errors.As(err, &maxErr):
		return http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "", nil
	case errors.As(err, &reqErr):
		return reqErr.status, strings.ReplaceAll(http.StatusText(reqErr.status), " ", ""), reqErr.field, nil
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, "Unauthorized", "", nil
	case errors.As(err, &fldErr):
		return http.StatusBadRequest, "BadRequest", fldErr.Field, nil
	case errors.Is(err, app.ErrBadRequest):
		return http.StatusBadRequest, "BadRequest", "", nil
	case errors.Is(err, ports.ErrInvalidContinue):
		return http.StatusBadRequest, "BadRequest", "continue", nil
	case errors.Is(err, app.ErrForbidden):
		return http.StatusForbidden, "Forbidden", "", nil
	case errors.As(err, &valErr):
		if len(valErr.Details) > 0 {
			field = valErr.Details[0].Field
		}
		return http.StatusUnprocessableEntity, "Invalid", field, valErr.Details
	case errors.As(err, &vl) && len(vl) > 0:
		return http.StatusUnprocessableEntity, "Invalid", vl[0].Path, nil
	case errors.As(err, &fe) && len(fe) > 0:
		return http.StatusUnprocessableEntity, "Invalid", fe[0].Path, nil
	case errors.Is(err, ports.ErrNotFound):
		return http.StatusNotFound, "NotFound", "", nil
	case errors.Is(err, app.ErrConflict), errors.Is(err, ports.ErrConflict), errors.Is(err, ports.ErrAlreadyExists):
		return http.StatusConflict, "Conflict", "", nil
	case errs.IsPermanent(err):
		// A refusal by the stored state: already approved, already issuing.
		return http.StatusConflict, "Conflict", "", nil
	}
	return http.StatusInternalServerError, "InternalError", "", nil
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, user string, err error) {
	status, reason, field, details := classify(err)
	msg := err.Error()
	if status == http.StatusRequestEntityTooLarge {
		msg = fmt.Sprintf("request body is larger than the limit of %d bytes", h.cfg.MaxBody)
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	h.cfg.Logger.Log(r.Context(), level, "api request failed", "method", r.Method, "path", r.URL.Path,
		"status", status, "caller", user, "err", msg)
	writeJSON(w, status, errorBody{Error: msg, Reason: reason, Field: field, Details: details})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "encode answer: " + err.Error(), Reason: "InternalError"})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// resource resolves the {plural} path segment and checks the route's
// scope: a namespaced kind is addressed under /v1/namespaces/{ns}/, a
// cluster-scoped one under /v1/.
func resource(r *http.Request, needName bool) (api.KindInfo, api.Key, error) {
	plural := r.PathValue("plural")
	info, ok := api.KindForName(plural)
	if !ok || info.Plural != plural {
		return info, api.Key{}, notFoundf("unknown resource type %q (want one of: %s)", plural, strings.Join(plurals(), ", "))
	}
	ns := r.PathValue("ns")
	name := r.PathValue("name")
	if ns != "" && !info.Namespaced {
		return info, api.Key{}, notFoundf("%s are cluster-scoped: use /v1/%s%s", info.Plural, info.Plural, suffix(name))
	}
	if ns == "" && info.Namespaced && needName {
		return info, api.Key{}, notFoundf("%s are namespaced: use /v1/namespaces/{namespace}/%s%s", info.Plural, info.Plural, suffix(name))
	}
	return info, api.Key{Kind: info.Kind, Namespace: ns, Name: name}, nil
}

func suffix(name string) string {
	if name == "" {
		return ""
	}
	return "/" + name
}

func plurals() []string {
	var out []string
	for _, k := range api.Kinds() {
		out = append(out, k.Plural)
	}
	sort.Strings(out)
	return out
}

// List is the answer of a list request, as Kubernetes' List.
type List struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   ListMeta     `json:"metadata"`
	Items      []api.Object `json:"items"`
}

// ListMeta is a List's metadata: Continue is the token of the next page
// of a paged list (omitted after the last page), as Kubernetes' ListMeta.
type ListMeta struct {
	Continue string `json:"continue,omitempty"`
}

// collection: GET /v1/{plural}[?namespace=NS] and GET
// /v1/namespaces/{ns}/{plural}, with Kubernetes' paging parameters:
// limit=N returns at most N items and metadata.continue when more follow;
// continue=TOKEN returns the next page (with the same limit, namespace and
// kind). Without them the whole list is returned, sorted by namespace and
// name; pages come in the store's key order. labelSelector and
// fieldSelector (metadata.name, metadata.namespace) select as in
// Kubernetes; a page may then hold fewer than limit items before its
// continue token.
func (h *Handler) collection(r *http.Request, caller app.Caller) (int, any, error) {
	info, key, err := resource(r, false)
	if err != nil {
		return 0, nil, err
	}
	ns := key.Namespace
	query := r.URL.Query()
	if q := query.Get("namespace"); q != "" {
		if ns != "" && q != ns {
			return 0, nil, badRequestf("namespace", "query namespace %q differs from the path's %q", q, ns)
		}
		ns = q
	}
	var (
		objs []api.Object
		cont string
	)
	if query.Has("limit") || query.Has("continue") {
		limit := 0
		if v := query.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, nil, badRequestf("limit", "limit %q: want a whole number >= 0 (0 = no limit)", v)
			}
			limit = n
		}
		objs, cont, err = h.svc.ListPage(r.Context(), caller, info.Kind, ns, listOptions(query), limit, query.Get("continue"))
	} else {
		objs, err = h.svc.List(r.Context(), caller, info.Kind, ns, listOptions(query))
	}
	if err != nil {
		return 0, nil, err
	}
	if objs == nil {
		objs = []api.Object{}
	}
	return http.StatusOK, List{APIVersion: "v1", Kind: "List", Metadata: ListMeta{Continue: cont}, Items: objs}, nil
}

// Deleted is the answer of a delete request. With dryRun=All, Deleted is
// false and DryRun true: the delete would have happened.
type Deleted struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Deleted   bool   `json:"deleted"`
	DryRun    bool   `json:"dryRun,omitempty"`
}

// item: GET and DELETE /v1/{plural}/{name} and
// /v1/namespaces/{ns}/{plural}/{name}. A DELETE takes Kubernetes'
// DeleteOptions in its body or as query parameters (deleteOptions).
func (h *Handler) item(r *http.Request, caller app.Caller) (int, any, error) {
	_, key, err := resource(r, true)
	if err != nil {
		return 0, nil, err
	}
	if r.Method == http.MethodDelete {
		opts, err := deleteOptions(r, r.URL.Query())
		if err != nil {
			return 0, nil, err
		}
		if err := h.svc.Delete(r.Context(), caller, key, opts); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, Deleted{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Deleted: !opts.DryRun, DryRun: opts.DryRun}, nil
	}
	o, err := h.svc.Get(r.Context(), caller, key)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, o, nil
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
		return nil, badRequestf("", "read body: %v", err)
	}
	return b, nil
}

// AppliedObject reports what apply did with one object.
type AppliedObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Action is "created", "configured" or "unchanged".
	Action string `json:"action"`
	// Ignored lists cert-manager fields accepted but not acted on.
	Ignored []string `json:"ignored,omitempty"`
}

// ApplyResponse is the answer of POST /v1/apply.
type ApplyResponse struct {
	Results []AppliedObject `json:"results"`
	// Warnings are what decoding changed, e.g. the namespace of a
	// cluster-scoped object, ignored as the Kubernetes API server does.
	Warnings []string `json:"warnings,omitempty"`
	// DryRun holds the results of POST /v1/apply?dryRun=All (Results is
	// then empty): what apply would do, nothing written.
	DryRun []app.DryRunResult `json:"dryRun,omitempty"`
}

// Action names what Apply did: created, configured or unchanged.
func Action(res app.ApplyResult) string {
	switch {
	case res.Created:
		return "created"
	case res.Changed:
		return "configured"
	}
	return "unchanged"
}

// apply: POST /v1/apply with one or many documents (JSON, or YAML with
// Content-Type: application/yaml).
func (h *Handler) apply(r *http.Request, caller app.Caller) (int, any, error) {
	isYAML := false
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return 0, nil, &requestError{status: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("Content-Type %q: %v", ct, err)}
		}
		switch mt {
		case "application/json":
		case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
			isYAML = true
		default:
			return 0, nil, &requestError{status: http.StatusUnsupportedMediaType,
				msg: fmt.Sprintf("Content-Type %q: want application/json or application/yaml", mt)}
		}
	}
	body, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		return 0, nil, badRequestf("", "body: no resources found")
	}
	if !isYAML && trimmed[0] != '{' && trimmed[0] != '[' {
		return 0, nil, badRequestf("", "body is not JSON (send YAML with Content-Type: application/yaml)")
	}
	objs, warns, err := api.DecodeWarnings(body)
	if err != nil {
		field := ""
		var fe api.FieldErrors
		if errors.As(err, &fe) && len(fe) > 0 {
			field = fe[0].Path
		}
		return 0, nil, badRequestf(field, "body: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if len(objs) == 0 {
		return 0, nil, badRequestf("", "body: no resources found")
	}
	switch dry := r.URL.Query().Get("dryRun"); dry {
	case "":
	case "All":
		// Kubernetes' dryRun=All: every check, nothing written.
		res, err := h.svc.DryRun(r.Context(), caller, objs)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, ApplyResponse{Results: []AppliedObject{}, Warnings: warns, DryRun: res}, nil
	default:
		return 0, nil, badRequestf("dryRun", "dryRun=%q: want All (or leave it out)", dry)
	}
	results, err := h.svc.Apply(r.Context(), caller, objs)
	if err != nil {
		return 0, nil, err
	}
	out := ApplyResponse{Results: make([]AppliedObject, len(results)), Warnings: warns}
	for i, res := range results {
		out.Results[i] = AppliedObject{Kind: res.Key.Kind, Namespace: res.Key.Namespace, Name: res.Key.Name, Action: Action(res), Ignored: res.Ignored}
	}
	return http.StatusOK, out, nil
}

// ApprovalRequest is the body of POST .../certificaterequests/{name}/approval.
type ApprovalRequest struct {
	// Approve: true approves, false denies (required; both are permanent).
	Approve *bool `json:"approve"`
	// Reason recorded on the condition (default "certfn").
	Reason string `json:"reason,omitempty"`
	// Message recorded on the condition (default "manually approved by <caller>").
	Message string `json:"message,omitempty"`
	// ResourceVersion, when set, is a precondition: the decision applies
	// only to that version of the request (metadata.resourceVersion as the
	// caller read it); another version is 409 Conflict.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// decodeJSON decodes a JSON body strictly (unknown fields are errors).
func decodeJSON(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return err
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return badRequestf(f, "body: %s: unknown field", f)
		}
		return badRequestf("", "body is not a valid JSON object: %v", err)
	}
	if dec.More() {
		return badRequestf("", "body: want one JSON object")
	}
	return nil
}

// approval: POST /v1/namespaces/{ns}/certificaterequests/{name}/approval.
func (h *Handler) approval(r *http.Request, caller app.Caller) (int, any, error) {
	var req ApprovalRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Approve == nil {
		return 0, nil, badRequestf("approve", "approve: required (true to approve, false to deny)")
	}
	key := api.Key{Kind: api.KindCertificateRequest, Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	cr, err := h.svc.Approve(r.Context(), caller, key, *req.Approve, req.Reason, req.Message, req.ResourceVersion)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, cr, nil
}

// renew: POST /v1/namespaces/{ns}/certificates/{name}/renew.
func (h *Handler) renew(r *http.Request, caller app.Caller) (int, any, error) {
	key := api.Key{Kind: api.KindCertificate, Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	res, err := h.svc.Renew(r.Context(), caller, key)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, res, nil
}

// status: GET /v1/namespaces/{ns}/certificates/{name}/status.
func (h *Handler) status(r *http.Request, caller app.Caller) (int, any, error) {
	key := api.Key{Kind: api.KindCertificate, Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	rep, err := h.svc.Status(r.Context(), caller, key)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, rep, nil
}

// requestError is a problem with the HTTP request itself (400, 404, 405, 415).
type requestError struct {
	status int
	field  string
	msg    string
	allow  string // the Allow header of a 405
}

func (e *requestError) Error() string { return e.msg }

func badRequestf(field, format string, a ...any) error {
	return &requestError{status: 400, field: field, msg: fmt.Sprintf(format, a...)}
}

func notFoundf(format string, a ...any) error {
	return &requestError{status: 404, msg: fmt.Sprintf(format, a...)}
}
