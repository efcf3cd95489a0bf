package certificatesigningrequests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Reasons of the Failed condition of an approved CSR that the signing step
// refuses to sign because it cannot tell that it signs what was approved.
const (
	// ReasonChangedAfterApproval: the request's evaluated view (Request)
	// differs from the one its approval recorded.
	ReasonChangedAfterApproval = "ChangedAfterApproval"
	// ReasonApprovalNotRecorded: the request is Approved but carries no
	// record of what was approved (status.approved).
	ReasonApprovalNotRecorded = "ApprovalNotRecorded"
)

// Approve records an approval of c: the Approved condition and, for a CSR
// of one of cert-manager's signer names whose view Request can read, what
// was approved (status.approved: the parameters of that view, its digest,
// and c's resourceVersion). It is the one place an approval of a CSR is
// recorded — the approval step and the API's approval subresource both
// call it on the object they read — so the approval covers exactly the
// version that was evaluated. A CSR already Approved is left as it is.
// The signing step signs the recorded parameters only (SigningStep).
func Approve(c *api.CertificateSigningRequest, clusterResourceNamespace, reason, message string, now time.Time) {
	if c.Status.Condition(api.CSRConditionApproved) != nil {
		return
	}
	if cr, ours, err := Request(c, clusterResourceNamespace); ours && err == nil {
		a := approvalOf(c, cr)
		a.ResourceVersion = c.ResourceVersion
		c.Status.Approved = &a
	}
	c.Status.AddCondition(api.CSRConditionApproved, reason, message, now)
}

// approvalOf is the record of cr, the view Request read of c: what its
// signer would sign, and the digest of that view with c's signer name and
// requester.
func approvalOf(c *api.CertificateSigningRequest, cr *api.CertificateRequest) api.CSRApproval {
	sum := sha256.Sum256(c.Spec.Request)
	a := api.CSRApproval{RequestSHA256: hex.EncodeToString(sum[:]), IsCA: cr.Spec.IsCA,
		Usages: slices.Clone(cr.Spec.Usages), PrivateKeySecretName: cr.Annotations[api.AnnotationPrivateKeySecretName]}
	if e := cr.Spec.ExpirationSeconds; e != nil {
		v := *e
		a.ExpirationSeconds = &v
	}
	if d := cr.Spec.Duration; d != nil {
		a.Duration = api.NewDuration(d.Duration)
	}
	// json.Marshal sorts map keys: the digest does not depend on map order.
	b, err := json.Marshal(struct {
		View       api.CSRApproval     `json:"view"`
		SignerName string              `json:"signerName"`
		Namespace  string              `json:"namespace"`
		Username   string              `json:"username"`
		UID        string              `json:"uid"`
		Groups     []string            `json:"groups"`
		Extra      map[string][]string `json:"extra"`
	}{a, c.Spec.SignerName, cr.Namespace, c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra})
	if err != nil {
		// Not expected: every field marshals. An empty digest matches no
		// record, so the request is refused rather than signed.
		return a
	}
	d := sha256.Sum256(b)
	a.Digest = hex.EncodeToString(d[:])
	return a
}

// approvedRequest checks that cr, the view Request reads of c now, is the
// view c's approval recorded, and sets cr's signing parameters from that
// record (isCA, lifetime, usages, the selfSigned key), so that the signer
// signs what was approved and nothing read later. ok is false, with the
// Failed reason and a message naming what differs, when c has no record
// or its view changed since.
func approvedRequest(c *api.CertificateSigningRequest, cr *api.CertificateRequest) (reason, msg string, ok bool) {
	a := c.Status.Approved
	if a == nil || a.Digest == "" {
		return ReasonApprovalNotRecorded, "the request is Approved but status.approved does not record what was approved " +
			"(an approval recorded before certfn recorded approvals); it is not signed: create the request again", false
	}
	now := approvalOf(c, cr)
	if now.Digest != a.Digest {
		return ReasonChangedAfterApproval, fmt.Sprintf("the request changed after it was approved (%s); it is not signed: create a new request and have it approved",
			strings.Join(changes(a, &now), "; ")), false
	}
	cr.Spec.IsCA, cr.Spec.ExpirationSeconds, cr.Spec.Duration, cr.Spec.Usages = a.IsCA, a.ExpirationSeconds, a.Duration, a.Usages
	if a.PrivateKeySecretName != "" {
		cr.Annotations[api.AnnotationPrivateKeySecretName] = a.PrivateKeySecretName
	} else {
		delete(cr.Annotations, api.AnnotationPrivateKeySecretName)
	}
	return "", "", true
}

// changes names the fields whose approved value (was) differs from the
// current one (now).
func changes(was, now *api.CSRApproval) []string {
	var out []string
	add := func(field string, w, n any) {
		if !reflect.DeepEqual(w, n) {
			out = append(out, fmt.Sprintf("%s: approved %s, now %s", field, show(w), show(n)))
		}
	}
	add("spec.request", "sha256:"+short(was.RequestSHA256), "sha256:"+short(now.RequestSHA256))
	add(fmt.Sprintf("metadata.annotations[%q]", api.AnnotationCSRIsCA), was.IsCA, now.IsCA)
	add("spec.expirationSeconds", was.ExpirationSeconds, now.ExpirationSeconds)
	add(fmt.Sprintf("metadata.annotations[%q]", api.AnnotationCSRDuration), was.Duration, now.Duration)
	add("spec.usages", was.Usages, now.Usages)
	add(fmt.Sprintf("metadata.annotations[%q]", api.AnnotationCSRPrivateKeySecretName), was.PrivateKeySecretName, now.PrivateKeySecretName)
	if len(out) == 0 {
		out = append(out, "spec.signerName or the requester")
	}
	return out
}

// short is a digest's first 12 hex digits.
func short(digest string) string { return digest[:min(12, len(digest))] }

// show renders a recorded value for a message: a pointer's value, "unset" for nil.
func show(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "unset"
		}
		return fmt.Sprintf("%q", x)
	case *int32:
		if x == nil {
			return "unset"
		}
		return fmt.Sprint(*x)
	case *api.Duration:
		if x == nil {
			return "unset"
		}
		return x.Duration.String()
	case []api.KeyUsage:
		if len(x) == 0 {
			return "unset"
		}
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}
