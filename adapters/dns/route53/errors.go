package route53

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/certfn/certfn/core/errs"
)

// classify turns an AWS error into certfn's classes (core/errs), naming
// the field to fix for permanent ones:
//
//   - an STS failure to assume the role (access denied, unknown role or
//     key, invalid signature) is permanent on .role; throttling or 5xx
//     there is transient;
//   - NoSuchHostedZone is permanent on .hostedZoneID;
//   - InvalidChangeBatch is permanent (a name outside the zone, a bad
//     value), except when the set changed between our read and our write
//     ("not found" on DELETE, "values provided do not match", "already
//     exists"): that is a race, transient, and the retry reads again;
//   - access denied is permanent on .role, .accessKeyID or the solver
//     (ambient credentials); an unknown key or a bad signature on
//     .accessKeyID / .secretAccessKeySecretRef;
//   - everything else (Throttling, PriorRequestNotComplete, 5xx, network,
//     what the SDK retryer gave up on) stays transient.
//
// zoneID is the zone the call used ("" for calls without one).
func (p *Provider) classify(err error, zoneID string) error {
	path := p.Config.Path
	if code, ok := stsCode(err); ok {
		switch code {
		case "AccessDenied", "InvalidClientTokenId", "SignatureDoesNotMatch", "ValidationError", "RegionDisabledException", "MalformedPolicyDocument":
			return errs.Permanent(fmt.Errorf("%s.role: cannot assume role %s: %w", path, p.Config.Role, err))
		}
		return fmt.Errorf("%s.role: assume role %s: %w", path, p.Config.Role, err)
	}
	zoneField := path
	if p.Config.HostedZoneID != "" {
		zoneField = path + ".hostedZoneID"
	}
	var icb *types.InvalidChangeBatch
	if errors.As(err, &icb) {
		msgs := strings.Join(icb.Messages, "; ")
		if isRace(msgs) {
			return fmt.Errorf("%s: the record set changed while it was being updated (%s): %w", path, msgs, err)
		}
		return errs.Permanent(fmt.Errorf("%s: Route53 refused the change in zone %s (%s): %w", zoneField, zoneID, msgs, err))
	}
	var nshz *types.NoSuchHostedZone
	if errors.As(err, &nshz) {
		return errs.Permanent(fmt.Errorf("%s.hostedZoneID: hosted zone %s does not exist: %w", path, zoneID, err))
	}
	var ii *types.InvalidInput
	if errors.As(err, &ii) {
		return errs.Permanent(fmt.Errorf("%s: %w", zoneField, err))
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.ErrorCode() {
	case "AccessDenied", "AccessDeniedException":
		return errs.Permanent(fmt.Errorf("%s: %w", p.credentialField(false), err))
	case "InvalidClientTokenId", "SignatureDoesNotMatch", "IncompleteSignature", "UnrecognizedClientException", "InvalidSignatureException":
		return errs.Permanent(fmt.Errorf("%s: credentials refused: %w", p.credentialField(true), err))
	}
	return err
}

// credentialField names what to fix when AWS refuses the credentials
// (secret: the key pair itself) or denies a call.
func (p *Provider) credentialField(secret bool) string {
	path := p.Config.Path
	switch {
	case p.Config.Role != "" && !secret:
		return path + ".role"
	case p.Config.AccessKeyID != "" && secret:
		return path + ".secretAccessKeySecretRef"
	case p.Config.AccessKeyID != "":
		return path + ".accessKeyID"
	}
	return path + " (ambient credentials)"
}

// isRace reports whether InvalidChangeBatch messages say the set changed
// under us.
func isRace(msgs string) bool {
	m := strings.ToLower(msgs)
	return strings.Contains(m, "but it was not found") ||
		strings.Contains(m, "values provided do not match") ||
		strings.Contains(m, "but it already exists")
}

// stsCode returns the error code of an STS call in err's chain (the
// credential fetch of an assumed role), if there is one.
func stsCode(err error) (string, bool) {
	for e := err; e != nil; {
		var op *smithy.OperationError
		if !errors.As(e, &op) {
			return "", false
		}
		if op.ServiceID == "STS" {
			var ae smithy.APIError
			if errors.As(op.Err, &ae) {
				return ae.ErrorCode(), true
			}
			return "", true
		}
		e = op.Err
	}
	return "", false
}
