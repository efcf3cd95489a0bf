package clouddns

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"cloud.google.com/go/auth"
	"google.golang.org/api/googleapi"

	"github.com/certfn/certfn/core/errs"
)

// op is the kind of call that failed, for classify.
type op int

const (
	opListZones op = iota // managedZones.list
	opRead                // resourceRecordSets.list, changes.get
	opChange              // changes.create
)

// classify turns a Cloud DNS (or token endpoint) error into certfn's
// classes (core/errs), naming the field to fix for permanent ones:
//
//   - the token endpoint refusing a service-account key (invalid_grant:
//     deleted or disabled key or account) is permanent on
//     .serviceAccountSecretRef; its 5xx/429 are transient;
//   - a change that lost a race (412 conditionNotMet: the set differs from
//     what was read; 409 alreadyExists: a set appeared; 404 on a deletion:
//     the set went away) is transient: the retry reads again. Nothing here
//     retries in a loop;
//   - 401 is permanent on the credentials; 403 too (missing
//     dns.changes.create etc.), except the rate limits Google reports as
//     403, which are transient, and a disabled API, permanent on .project;
//   - 404 is permanent on .project (unknown project) or .hostedZoneName
//     (unknown zone); 400 (a name outside the zone, an invalid value) is
//     permanent on .hostedZoneName, or the solver when the zone was found
//     by name;
//   - 429, 5xx, network failures and anything else stay transient.
func (p *Provider) classify(err error, o op) error {
	path := p.Config.Path
	var ae *auth.Error
	if errors.As(err, &ae) {
		if ae.Temporary() || ae.Response == nil || ae.Response.StatusCode >= 500 {
			return err
		}
		return errs.Permanent(fmt.Errorf("%s: the token endpoint refused the credentials: %w", p.credentialField(), err))
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return err
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	zoneField := path
	if p.Config.HostedZoneName != "" {
		zoneField = path + ".hostedZoneName"
	}
	switch code := ge.Code; {
	case o == opChange && (code == http.StatusPreconditionFailed || code == http.StatusConflict ||
		(code == http.StatusNotFound && strings.Contains(ge.Message, "entity.change"))):
		return fmt.Errorf("%s: the record set changed while it was being updated (%s): %w", path, reason, err)
	case code == http.StatusTooManyRequests || code >= 500:
		return err
	case code == http.StatusUnauthorized:
		return errs.Permanent(fmt.Errorf("%s: credentials refused: %w", p.credentialField(), err))
	case code == http.StatusForbidden:
		switch reason {
		case "rateLimitExceeded", "userRateLimitExceeded":
			return err
		case "accessNotConfigured":
			return errs.Permanent(fmt.Errorf("%s.project: the Cloud DNS API is not enabled in project %s: %w", path, p.Config.Project, err))
		}
		return errs.Permanent(fmt.Errorf("%s: %s may not use Cloud DNS in project %s (it needs roles/dns.admin or dns.managedZones.list, dns.resourceRecordSets.list, dns.changes.create and dns.changes.get): %w",
			p.credentialField(), p.identity(), p.Config.Project, err))
	case code == http.StatusNotFound && (o == opListZones || strings.Contains(ge.Message, "parameters.project")):
		return errs.Permanent(fmt.Errorf("%s.project: project %s not found: %w", path, p.Config.Project, err))
	case code == http.StatusNotFound && strings.Contains(ge.Message, "parameters.managedZone"):
		return errs.Permanent(fmt.Errorf("%s.hostedZoneName: managed zone not found in project %s: %w", path, p.Config.Project, err))
	case code == http.StatusBadRequest:
		return errs.Permanent(fmt.Errorf("%s: Cloud DNS refused the request: %w", zoneField, err))
	}
	return err
}

// credentialField names what to fix when the credentials are refused or
// denied.
func (p *Provider) credentialField() string {
	if p.Config.ServiceAccount != nil {
		return p.Config.Path + ".serviceAccountSecretRef"
	}
	return p.Config.Path + " (ambient credentials)"
}

// identity describes the caller for messages.
func (p *Provider) identity() string {
	if sa := p.Config.ServiceAccount; sa != nil {
		return sa.ClientEmail
	}
	return "the function's own service account"
}
