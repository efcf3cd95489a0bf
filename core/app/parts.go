package app

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// The parts a role uses where it lacks a permission (see Role).

// HandoffMessage is the Ready=False/Pending message of a request handed
// to the signer by the signing step.
const HandoffMessage = "Waiting for the signer function"

// handoff is the signer of the issuer types a role hands off
// (Role.HandsOff): the role holds no CA key. A runtime normally routes such
// approved requests to the signer queue before any step runs, so the
// signing step reaches handoff only if the request or its issuer changed
// in between. It then sends the request to the signer queue and leaves it
// Pending with a fixed message (written once).
type handoff struct{ q ports.Queue }

// Sign implements signers.Signer.
func (h handoff) Sign(ctx context.Context, req signers.Request) (signers.Result, error) {
	key := api.Key{Kind: api.KindCertificateRequest, Namespace: req.CR.Namespace, Name: req.CR.Name}
	if h.q == nil {
		return signers.Result{}, errs.Permanentf("no signer queue is configured (CERTFN_SIGNER_QUEUE_URL)")
	}
	if err := h.q.Enqueue(ctx, key, 0); err != nil {
		return signers.Result{}, fmt.Errorf("hand %s to the signer queue: %w", key, err)
	}
	return signers.Result{}, signers.Pending("%s", HandoffMessage)
}

// refuseApprover is the approver of a role that never approves (docs/design/certificates-api.md:
// approver and signer are separate actors). A request without a decision
// that reaches it is acknowledged with this error; the approving role
// decides it.
type refuseApprover struct{ role string }

var _ certificaterequests.Refuser = refuseApprover{}

// RefusesApproval implements certificaterequests.Refuser: the approval step leaves
// even a denial of invalid names to the approving role.
func (refuseApprover) RefusesApproval() {}

// Decide implements certificaterequests.Approver.
func (r refuseApprover) Decide(_ context.Context, cr *api.CertificateRequest) (certificaterequests.Decision, error) {
	return certificaterequests.Decision{}, errs.Permanentf("the %s function never approves: CertificateRequest %s/%s has no approval decision yet (the worker makes it)", r.role, cr.Namespace, cr.Name)
}

// refuseSecrets is the secret store of a role without Secrets: every call
// fails permanently, naming the secret (never a value).
type refuseSecrets struct{ role string }

func (d refuseSecrets) err(op, ns, name string) error {
	return errs.Permanentf("%s function: %s secret %s/%s: the secret store is not part of this role (docs/design/roles.md)", d.role, op, ns, name)
}

// Get implements ports.SecretStore.
func (d refuseSecrets) Get(_ context.Context, ns, name string) (ports.Secret, error) {
	return ports.Secret{}, d.err("get", ns, name)
}

// Create implements ports.SecretStore.
func (d refuseSecrets) Create(_ context.Context, s ports.Secret) error {
	return d.err("create", s.Namespace, s.Name)
}

// Put implements ports.SecretStore.
func (d refuseSecrets) Put(_ context.Context, s ports.Secret) error {
	return d.err("put", s.Namespace, s.Name)
}

// Delete implements ports.SecretStore.
func (d refuseSecrets) Delete(_ context.Context, ns, name string) error {
	return d.err("delete", ns, name)
}
