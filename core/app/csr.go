package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/repo"
	"github.com/certfn/certfn/core/validation"
)

// setRequester records caller as the requester of a
// CertificateSigningRequest, as the Kubernetes API server does on create
// (docs/design/certificates-api.md: "the kube-apiserver also asserts authentication attributes of
// the requestor in the CertificateSigningRequest spec"): whatever the body
// says in spec.username, uid, groups and extra is overwritten. On an
// update the stored requester is kept (checkCSRUpdate).
func setRequester(obj api.Object, caller Caller) {
	if c, ok := obj.(*api.CertificateSigningRequest); ok {
		c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra = caller.Username, caller.UID, caller.Groups, caller.Extra
	}
}

// checkCSRUpdate applies an update of a stored CertificateSigningRequest:
// the requester stays the creator's, the status stays the stored one (an
// apply never writes status: conditions come only through the approval
// path and the signer, and status.approved records what was approved),
// and the spec and cert-manager's annotations (isCA, the requested
// duration, the selfSigned key) are immutable, as the Certificates API makes a spec — a changed
// field is refused naming it (validation.CertificateSigningRequestUpdate;
// field is the first one's path). Other kinds pass.
func checkCSRUpdate(key api.Key, old, obj api.Object) (field string, err error) {
	c, ok := obj.(*api.CertificateSigningRequest)
	if !ok {
		return "", nil
	}
	o := old.(*api.CertificateSigningRequest)
	c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra = o.Spec.Username, o.Spec.UID, o.Spec.Groups, o.Spec.Extra
	c.Status = o.Status
	if errl := validation.CertificateSigningRequestUpdate(o, c); len(errl) > 0 {
		return errl[0].Path, errs.Permanent(fmt.Errorf("%s: %w", key, errl.Err()))
	}
	return "", nil
}

// ApproveCSR records an approval (approve=true) or a denial on the
// CertificateSigningRequest name — the /approval subresource of docs/design/certificates-api.md
// — if caller may approve for its signer: `approve` on `signers` in
// certificates.k8s.io named spec.signerName or "<domain>/*", granted by a
// ClusterRoleBinding (rbac.CanApproveSigner). Creating a CSR does not
// grant it. Approved and Denied are permanent and mutually exclusive: a
// request already approved, denied, failed or issued is refused
// (ErrConflict). An empty reason is "certfn"; an empty message becomes
// DefaultApprovalMessage. It returns the updated request.
//
// A caller who may not read the request learns nothing from the answer:
// the same ErrForbidden whether it exists or not and whichever signer it
// names. A non-empty resourceVersion is a precondition (Kubernetes
// semantics): the decision applies only to that version, another is
// refused (ErrConflict naming metadata.resourceVersion). An approval
// records what it approved (certificatesigningrequests.Approve), which is all the signer signs.
func (s *Service) ApproveCSR(ctx context.Context, caller Caller, name string, approve bool, reason, message, resourceVersion string) (*api.CertificateSigningRequest, error) {
	key := api.Key{Kind: api.KindCertificateSigningRequest, Name: name}
	out, err := s.decide(ctx, caller, key, approve, reason, message, resourceVersion,
		func(ctx context.Context, az *authz, o api.Object) error {
			return az.checkSignerApproval(ctx, caller, o.(*api.CertificateSigningRequest).Spec.SignerName)
		},
		func(o api.Object, t string, reason, message string) error {
			c := o.(*api.CertificateSigningRequest)
			for _, d := range []string{api.CSRConditionApproved, api.CSRConditionDenied} {
				if cond := c.Status.Condition(d); cond != nil {
					return conflictf("%s is already %s (%s); approval and denial are permanent", key, d, cond.Reason)
				}
			}
			if c.IsFinal() {
				return conflictf("%s is already final", key)
			}
			if t == api.CSRConditionApproved {
				certificatesigningrequests.Approve(c, s.repo.Issuers().ClusterNamespace(), reason, message, s.clock.Now())
				return nil
			}
			c.Status.AddCondition(t, reason, message, s.clock.Now())
			return nil
		}, api.CSRConditionApproved, api.CSRConditionDenied)
	if err != nil {
		return nil, err
	}
	return out.(*api.CertificateSigningRequest), nil
}

// checkSignerApproval checks the `approve` permission on a CSR's signer.
func (a *authz) checkSignerApproval(ctx context.Context, caller Caller, signerName string) error {
	id := identity(caller)
	if isSuperuser(id) {
		return nil
	}
	az, err := a.authorizer(ctx)
	if err != nil {
		return err
	}
	if ok, why := az.CanApproveSigner(id, signerName); !ok {
		return forbidden(fmt.Errorf("%s may not approve or deny requests for signer %q: %s", id.Username, signerName, why))
	}
	return nil
}

// csrSignerWork reports whether a CertificateSigningRequest is the
// signer role's work (see Deliverer): approved, not denied, failed or
// issued, its signer name one of cert-manager's, its issuer stored and of
// a type this role hands off (or, in a signer-only role, signs), and —
// checked here by the approving role, because the signer may not read
// RBAC — its requester may reference that issuer (certificatesigningrequests.CanReference). A
// CSR whose requester may not is reconciled by this role, whose signing
// step marks it Failed.
func (d *Deliverer) csrSignerWork(ctx context.Context, c *api.CertificateSigningRequest) (bool, error) {
	if !c.Status.Has(api.CSRConditionApproved) || c.IsFinal() {
		return false, nil
	}
	rp := d.App.Repo
	cr, ours, err := certificatesigningrequests.Request(c, rp.Issuers().ClusterNamespace())
	if !ours || err != nil {
		return false, nil // not certfn's, or Failed by the signing step here
	}
	ik, _, ok := rp.Issuers().Resolve(cr.Namespace, cr.Spec.IssuerRef)
	if !ok {
		return false, nil
	}
	irec, err := rp.Store().Get(ctx, ik)
	if errors.Is(err, ports.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", ik, err)
	}
	iobj, err := repo.Decode(irec)
	if err != nil {
		return false, nil
	}
	typ := certificaterequests.IssuerType(iobj.(api.GenericIssuer).GetSpec())
	role := d.App.Role
	if !role.handsOff(typ) && !(role.SignerWorkOnly && role.signs(typ)) {
		return false, nil
	}
	if role.SignerWorkOnly {
		return true, nil
	}
	ok, _, err = certificatesigningrequests.CanReference(ctx, func(ctx context.Context) (*rbac.Authorizer, error) { return rbac.Load(ctx, rp) }, c)
	return ok, err
}

// RetainCSR is how long a final CertificateSigningRequest is kept
// (certificatesigningrequests.Retain: docs/design/request-duration.md's one hour, or until its certificate expires if
// sooner). CleanupStep deletes it then in every deployment; the cloud
// stores' TTL is the same rule.
const RetainCSR = certificatesigningrequests.Retain

// csrExpiresAt is ExpiresAt for a CertificateSigningRequest: a final one
// expires when certificatesigningrequests.KeepUntil says (from when it became final, read from
// the CSR), a pending one (neither approved nor denied) when
// certificatesigningrequests.PendingUntil says (a day after its creation), an approved one that
// is not final never (the cloud stores' TTL).
func csrExpiresAt(rec ports.Record) time.Time {
	var c api.CertificateSigningRequest
	if err := json.Unmarshal(rec.Data, &c); err != nil {
		return time.Time{}
	}
	if at, ok := certificatesigningrequests.KeepUntil(&c); ok {
		return at
	}
	at, _ := certificatesigningrequests.PendingUntil(&c)
	return at
}
