package httpapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/validation"
	"github.com/certfn/certfn/internal/explain"
)

// Service performs certfn's API operations on behalf of a caller. Every
// method checks the caller's permission with the engine's bindings
// (Engine.Authorize, or Engine.AuthorizeApproval for approvals) before it
// reads or writes anything else, so the HTTP API and the CLI's local mode
// behave the same. It never reads key material.
type Service struct {
	Engine *engine.Engine
	// Secrets, when set, lets Status describe the secret's tls.crt (local
	// mode). The HTTP API leaves it nil: it never reads the secret store.
	Secrets explain.SecretReader
}

// ValidationError reports the objects of an apply batch that failed
// validation; nothing of the batch was stored.
type ValidationError struct {
	// Message is every problem, as Engine.ValidateAll reports them.
	Message string
	// Details lists one entry per invalid object.
	Details []ErrorDetail
}

// ErrorDetail is one invalid object: its key, the first field path found
// (when known) and its error.
type ErrorDetail struct {
	Object string `json:"object,omitempty"`
	Field  string `json:"field,omitempty"`
	Error  string `json:"error"`
}

func (e *ValidationError) Error() string { return e.Message }

// Apply validates every object, checks that caller may create (or update,
// when it exists) each of them, and only then applies them in order, as
// `certfn apply` does: if any object is invalid or forbidden nothing is
// stored. Invalid input returns a *ValidationError.
func (s *Service) Apply(ctx context.Context, caller engine.Caller, objs []api.Object) ([]engine.ApplyResult, error) {
	ctx = engine.WithAuthorizationScope(ctx) // every object against one RBAC snapshot
	if len(objs) == 0 {
		return nil, badRequestf("", "no resources to apply")
	}
	if err := s.Engine.ValidateAll(objs); err != nil {
		verr := &ValidationError{Message: err.Error()}
		for _, o := range objs {
			if err := s.Engine.ValidateAll([]api.Object{o}); err != nil {
				verr.Details = append(verr.Details, ErrorDetail{Object: api.KeyOf(o).String(), Field: firstField(o), Error: err.Error()})
			}
		}
		return nil, verr
	}
	for _, o := range objs {
		key := api.KeyOf(o)
		verb := rbac.VerbCreate
		_, err := s.Engine.Get(ctx, key)
		switch {
		case err == nil:
			verb = rbac.VerbUpdate
		case !errors.Is(err, ports.ErrNotFound):
			return nil, err
		}
		if err := s.Engine.Authorize(ctx, caller, verb, key); err != nil {
			return nil, err
		}
		if err := s.authorizeEscalation(ctx, caller, o); err != nil {
			return nil, err
		}
	}
	out := make([]engine.ApplyResult, 0, len(objs))
	for _, o := range objs {
		res, err := s.Engine.Apply(ctx, o, caller)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// Verbs that guard RBAC objects against privilege escalation, as in
// Kubernetes.
const (
	// VerbBind on a Role or ClusterRole (named by resourceNames) allows
	// writing bindings that grant it.
	VerbBind = "bind"
	// VerbEscalate on roles or clusterroles allows writing their rules.
	VerbEscalate = "escalate"
)

// authorizeEscalation keeps create/update on RBAC objects from granting
// more than the caller may grant: writing a Role or ClusterRole also needs
// `escalate` on it, writing a binding also needs `bind` on the role it
// refers to. This is stricter than Kubernetes, which also accepts a caller
// who already holds every permission of the role; here such callers need
// an explicit grant (system:masters has all of them).
func (s *Service) authorizeEscalation(ctx context.Context, caller engine.Caller, o api.Object) error {
	var ref api.RoleRef
	ns := o.GetObjectMeta().Namespace
	switch v := o.(type) {
	case *api.Role, *api.ClusterRole:
		return s.Engine.Authorize(ctx, caller, VerbEscalate, api.KeyOf(o))
	case *api.RoleBinding:
		ref = v.RoleRef
	case *api.ClusterRoleBinding:
		ref, ns = v.RoleRef, ""
	default:
		return nil
	}
	// As in Kubernetes, `bind` for a RoleBinding is checked in the
	// binding's namespace, also for a ClusterRole it refers to.
	info, ok := api.KindInfoFor(ref.Kind)
	if !ok {
		return fmt.Errorf("roleRef.kind %q is not a role kind", ref.Kind)
	}
	attrs := rbac.Attributes{Verb: VerbBind, APIGroup: api.RBACGroup, Resource: info.Plural, Namespace: ns, Name: ref.Name}
	return s.authorizeAttrs(ctx, caller, attrs)
}

// authorizeAttrs checks attrs for caller as Engine.Authorize does for a key.
func (s *Service) authorizeAttrs(ctx context.Context, caller engine.Caller, attrs rbac.Attributes) error {
	id := rbac.Identity{Username: caller.Username, UID: caller.UID, Groups: caller.Groups, Extra: caller.Extra}.WithImplicitGroups()
	if slices.Contains(id.Groups, engine.SuperuserGroup) {
		return nil
	}
	az, err := s.Engine.Authorizer(ctx)
	if err != nil {
		return err
	}
	if ok, why := az.Allowed(id, attrs); !ok {
		target := attrs.Resource + "/" + attrs.Name
		if attrs.Namespace != "" {
			target += " in namespace " + attrs.Namespace
		}
		return fmt.Errorf("%w: %s may not %s %s: %s", engine.ErrForbidden, id.Username, attrs.Verb, target, why)
	}
	return nil
}

// firstField returns the path of the first field rule obj breaks, if the
// validation knows one.
func firstField(obj api.Object) string {
	if l := validation.Object(obj); len(l) > 0 {
		return l[0].Path
	}
	var fe api.FieldErrors
	if err := rbac.Validate(obj); errors.As(err, &fe) && len(fe) > 0 {
		return fe[0].Path
	}
	return ""
}

// Get returns the object at key if caller may get it.
func (s *Service) Get(ctx context.Context, caller engine.Caller, key api.Key) (api.Object, error) {
	if err := s.Engine.Authorize(ctx, caller, rbac.VerbGet, key); err != nil {
		return nil, err
	}
	return s.Engine.Get(ctx, key)
}

// List returns the objects of kind in namespace ("" = every namespace, or
// a cluster-scoped kind) if caller may list them there.
func (s *Service) List(ctx context.Context, caller engine.Caller, kind, namespace string) ([]api.Object, error) {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return nil, notFoundf("unknown kind %q", kind)
	}
	if !info.Namespaced {
		namespace = ""
	}
	if err := s.Engine.Authorize(ctx, caller, rbac.VerbList, api.Key{Kind: kind, Namespace: namespace}); err != nil {
		return nil, err
	}
	return s.Engine.List(ctx, kind, namespace)
}

// Delete removes the object at key and what it owns (Engine.Delete) if
// caller may delete it; a missing object is an error wrapping
// ports.ErrNotFound.
func (s *Service) Delete(ctx context.Context, caller engine.Caller, key api.Key) error {
	if err := s.Engine.Authorize(ctx, caller, rbac.VerbDelete, key); err != nil {
		return err
	}
	if _, err := s.Engine.Get(ctx, key); err != nil {
		return err
	}
	return s.Engine.Delete(ctx, key)
}

// Renew forces the re-issuance of the Certificate at key (Engine.Renew)
// if caller may update it, and returns the updated Certificate.
func (s *Service) Renew(ctx context.Context, caller engine.Caller, key api.Key) (*api.Certificate, error) {
	if key.Kind != api.KindCertificate {
		return nil, badRequestf("", "renew applies to certificates, not %s", key.Kind)
	}
	if err := s.Engine.Authorize(ctx, caller, rbac.VerbUpdate, key); err != nil {
		return nil, err
	}
	if err := s.Engine.Renew(ctx, key); err != nil {
		return nil, err
	}
	o, err := s.Engine.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return o.(*api.Certificate), nil
}

// DefaultApprovalMessage is the message recorded on an approval or denial
// that gives none: "manually approved by <username>".
func DefaultApprovalMessage(approve bool, username string) string {
	if approve {
		return "manually approved by " + username
	}
	return "manually denied by " + username
}

// Approve records an approval (approve=true) or a denial on the
// CertificateRequest at key if caller may approve for its signer (seed
// 004: `approve` on `signers`, separate from creating requests). An empty
// message becomes DefaultApprovalMessage. It returns the updated request.
func (s *Service) Approve(ctx context.Context, caller engine.Caller, key api.Key, approve bool, reason, message string) (*api.CertificateRequest, error) {
	if key.Kind != api.KindCertificateRequest {
		return nil, badRequestf("", "approval applies to certificaterequests, not %s", key.Kind)
	}
	if _, err := s.Engine.RequestForApproval(ctx, caller, key); err != nil {
		return nil, err
	}
	if strings.TrimSpace(message) == "" {
		message = DefaultApprovalMessage(approve, caller.Username)
	}
	if err := s.Engine.SetApproval(ctx, key, approve, reason, message); err != nil {
		return nil, err
	}
	o, err := s.Engine.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return o.(*api.CertificateRequest), nil
}

// Status explains the Certificate at key (the report `certfn status`
// prints) if caller may get it. The request and issuer in the chain are
// shown only if caller may get them too; the secret only if s.Secrets is set.
func (s *Service) Status(ctx context.Context, caller engine.Caller, key api.Key) (*explain.Report, error) {
	ctx = engine.WithAuthorizationScope(ctx)
	if key.Kind != api.KindCertificate {
		return nil, badRequestf("", "status applies to certificates, not %s", key.Kind)
	}
	lookup := func(ctx context.Context, k api.Key) (api.Object, error) {
		if err := s.Engine.Authorize(ctx, caller, rbac.VerbGet, k); err != nil {
			return nil, err
		}
		return s.Engine.Get(ctx, k)
	}
	return explain.Certificate(ctx, lookup, s.Secrets, key)
}

// requestError is a problem with the HTTP request itself (400, 404, 405, 415).
type requestError struct {
	status int
	field  string
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequestf(field, format string, a ...any) error {
	return &requestError{status: 400, field: field, msg: fmt.Sprintf(format, a...)}
}

func notFoundf(format string, a ...any) error {
	return &requestError{status: 404, msg: fmt.Sprintf(format, a...)}
}
