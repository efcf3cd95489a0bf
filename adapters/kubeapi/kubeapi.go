// Package kubeapi serves certfn's kinds as the Kubernetes API, so that
// kubectl and other Kubernetes clients work against certfn without a
// cluster: /version, discovery (/api, /apis), OpenAPI v2 (JSON and
// protobuf) and v3, and for each kind get and list (with Tables, label and
// field selectors, limit and continue), create, update (PUT), merge patch
// and delete, each with dryRun=All. Requests are authenticated by the
// deployment's Authenticate function and every operation on an object is
// one call of the application service (core/app), which authorizes it
// with certfn's RBAC first. Errors are metav1.Status objects with
// Kubernetes' reasons and codes. What Kubernetes offers and this package
// does not (watch, server-side apply, JSON patch, deletecollection,
// subresources) is a 400 naming it, never ignored: see
// docs/design/kubernetes-api.md.
package kubeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// DefaultMaxBody is the default limit on a request body (3 MiB, as the
// Kubernetes API server's limit on an object).
const DefaultMaxBody int64 = 3 << 20

// ErrUnauthenticated marks a request without a usable identity (401).
var ErrUnauthenticated = errors.New("unauthenticated")

// Config configures the handler.
type Config struct {
	// Service performs every operation on objects (required).
	Service *app.Service
	// Authenticate returns the caller of a request from what the platform
	// verified (a TLS client certificate), or an error (401). Required.
	Authenticate func(*http.Request) (app.Caller, error)
	// Version is what /version reports as gitVersion (default "v0.0.0").
	Version string
	// MaxBody limits request bodies in bytes (default DefaultMaxBody).
	MaxBody int64
	// Logger receives one line per failed request; never a body.
	Logger *slog.Logger
	// Now is the clock of the tables' Age column (default time.Now).
	Now func() time.Time
}

// Handler serves the Kubernetes API. It is safe for concurrent use.
type Handler struct {
	cfg Config
	svc *app.Service
}

// New checks cfg and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("kubeapi: Service is required")
	}
	if cfg.Authenticate == nil {
		return nil, errors.New("kubeapi: Authenticate is required")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = "v0.0.0"
	}
	return &Handler{cfg: cfg, svc: cfg.Service}, nil
}

// Paths lists the path prefixes the handler serves, for a caller mounting
// it beside other routes on one listener.
func Paths() []string {
	return []string{"/version", "/api", "/api/", "/apis", "/apis/", "/openapi/"}
}

// ServeHTTP authenticates every request (401 without an identity, on every
// path: discovery and OpenAPI included) and serves it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, err := h.cfg.Authenticate(r)
	if err == nil && caller.Username == "" {
		err = errors.New("the identity has no username")
	}
	if err != nil {
		h.fail(w, r, "", &statusError{code: http.StatusUnauthorized, reason: "Unauthorized", msg: "Unauthorized"}, err)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBody)
	}
	ctx := context.WithValue(r.Context(), callerKey{}, caller)
	// timeout (client-go sends it on every request) bounds the request's
	// context, as the Kubernetes API server does; it is then taken out of
	// the query each route checks.
	if q := r.URL.Query(); q.Has("timeout") {
		d, err := time.ParseDuration(q.Get("timeout"))
		if err != nil || d <= 0 || len(q["timeout"]) > 1 {
			h.fail(w, r, caller.Username, badRequest(fmt.Sprintf("timeout=%q: want one positive duration (32s)", q.Get("timeout"))), nil)
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
		q.Del("timeout")
		u := *r.URL
		u.RawQuery = q.Encode()
		r.URL = &u
	}
	r = r.WithContext(ctx)
	if err := h.serve(w, r, caller); err != nil {
		h.fail(w, r, caller.Username, err, nil)
	}
}

type callerKey struct{}

// serve routes r; an error is answered as a Status.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, caller app.Caller) error {
	p := r.URL.Path
	switch {
	case p == "/version" || p == "/version/":
		if err := onlyGet(r); err != nil {
			return err
		}
		return h.version(w, r)
	case p == "/api" || p == "/api/":
		if err := onlyGet(r); err != nil {
			return err
		}
		return h.coreVersions(w, r)
	case p == "/apis" || p == "/apis/":
		if err := onlyGet(r); err != nil {
			return err
		}
		return h.groups(w, r)
	case strings.HasPrefix(p, "/openapi/"):
		if err := onlyGet(r); err != nil {
			return err
		}
		return h.openAPI(w, r)
	case strings.HasPrefix(p, "/api/"):
		return h.routeGroupVersion(w, r, caller, "", strings.Split(strings.Trim(strings.TrimPrefix(p, "/api/"), "/"), "/"))
	case strings.HasPrefix(p, "/apis/"):
		segs := strings.Split(strings.Trim(strings.TrimPrefix(p, "/apis/"), "/"), "/")
		if len(segs) == 1 {
			if err := onlyGet(r); err != nil {
				return err
			}
			return h.group(w, r, segs[0])
		}
		return h.routeGroupVersion(w, r, caller, segs[0], segs[1:])
	}
	return notFound("the server could not find the requested resource")
}

// routeGroupVersion serves /api/v1/... (group "") and /apis/{group}/{version}/...:
// segs starts with the version.
func (h *Handler) routeGroupVersion(w http.ResponseWriter, r *http.Request, caller app.Caller, group string, segs []string) error {
	version := segs[0]
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	if gv == reviewGroupVersion {
		switch {
		case len(segs) == 1:
			if err := onlyGet(r); err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, APIResourceList{Kind: "APIResourceList", APIVersion: "v1", GroupVersion: gv, Resources: []APIResource{reviewResource()}})
			return nil
		case len(segs) == 2 && segs[1] == reviewPlural:
			return h.accessReview(w, r, caller)
		}
		return notFound("the server could not find the requested resource")
	}
	if len(resourcesOf(gv)) == 0 {
		return notFound("the server could not find the requested resource")
	}
	rest := segs[1:]
	if len(rest) == 0 {
		if err := onlyGet(r); err != nil {
			return err
		}
		return h.resourceList(w, r, gv)
	}
	ns := ""
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ns, rest = rest[1], rest[2:]
	}
	res := lookup(gv, rest[0])
	if res == nil {
		return notFound("the server could not find the requested resource")
	}
	if ns != "" && !res.info.Namespaced {
		return notFound("the server could not find the requested resource")
	}
	if r.URL.Query().Get("watch") != "" && r.URL.Query().Get("watch") != "false" {
		return badRequest("watch: watching is not supported by certfn (it has no change feed yet); list instead")
	}
	switch len(rest) {
	case 1:
		return h.collection(w, r, caller, res, ns)
	case 2:
		if rest[1] == "" {
			return notFound("the server could not find the requested resource")
		}
		if res.info.Namespaced && ns == "" {
			return notFound("the server could not find the requested resource")
		}
		return h.item(w, r, caller, res, ns, rest[1])
	}
	if len(rest) == 3 && rest[2] == "approval" && res.info.Kind == api.KindCertificateSigningRequest {
		return h.csrApproval(w, r, caller, res, rest[1])
	}
	if len(rest) == 3 && rest[2] == "status" && statusDecisions[res.info.Kind] != nil {
		return h.statusSubresource(w, r, caller, res, ns, rest[1])
	}
	return badRequest(fmt.Sprintf("subresource %q of %s is not supported by certfn (served: certificatesigningrequests/approval, certificates/status, certificaterequests/status)",
		strings.Join(rest[2:], "/"), qualified(res)))
}

func onlyGet(r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &statusError{code: http.StatusMethodNotAllowed, reason: "MethodNotAllowed",
			msg: fmt.Sprintf("the server does not allow this method on the requested resource (%s %s: only GET)", r.Method, r.URL.Path)}
	}
	if len(r.URL.RawQuery) > 0 && !strings.HasPrefix(r.URL.Path, "/openapi/") {
		for name := range r.URL.Query() {
			return badRequest(fmt.Sprintf("query parameter %q is not supported on %s (it takes none)", name, r.URL.Path))
		}
	}
	return nil
}

// writeJSON sends v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(newStatus(status, "InternalError", "encode answer: "+err.Error(), nil))
	}
	writeBytes(w, status, "application/json", b)
}

func writeBytes(w http.ResponseWriter, status int, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
