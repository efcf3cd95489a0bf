package azuredns

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/certfn/certfn/core/errs"
)

// op is the kind of call that failed, for classify.
type op int

const (
	opList  op = iota // list the resource group's zones
	opRead            // get a record set
	opWrite           // put or delete a record set
)

// classify turns an Azure (or Entra ID, or IMDS) error into certfn's
// classes (core/errs), naming the field to fix for permanent ones, with a
// one-line description of Azure's answer instead of the SDK's multi-line
// dump:
//
//   - Entra ID refusing the service principal (400/401: AADSTS90002
//     unknown tenant, AADSTS700016 unknown application, AADSTS7000215 or
//     AADSTS7000222 wrong or expired secret, ...) is permanent on
//     tenantID, clientID or clientSecretSecretRef; the managed identity
//     endpoint refusing the identity (400) is permanent on
//     managedIdentity; their 429/5xx and an unreachable endpoint are
//     transient;
//   - a write that lost a race (412 PreconditionFailed: the set's ETag
//     changed since it was read, or a set appeared) is transient, as is
//     409 Conflict: the retry reads again. Nothing here retries in a loop;
//   - 401 and 403 (AuthorizationFailed: the identity lacks the DNS Zone
//     Contributor or Private DNS Zone Contributor role) are permanent on
//     the credentials;
//   - 404 SubscriptionNotFound is permanent on subscriptionID,
//     ResourceGroupNotFound on resourceGroupName, ParentResourceNotFound
//     (no such zone) on hostedZoneName; 409 MissingSubscriptionRegistration
//     (Microsoft.Network not registered) on subscriptionID; other 400s
//     (an invalid name or value) on hostedZoneName, or the solver when the
//     zone was found by name;
//   - 429, 5xx, network failures and anything else stay transient, with
//     Azure's Retry-After delay when it gave one.
func (p *Provider) classify(err error, what string, o op) error {
	path := p.Config.Path
	var afe *azidentity.AuthenticationFailedError
	if errors.As(err, &afe) {
		return p.classifyAuth(err, what, afe)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	desc := describe(re)
	wrap := func(field, what string) error {
		return &azureError{msg: fmt.Sprintf("%s: %s: %s", field, what, desc), err: err}
	}
	zoneField := path
	if p.Config.HostedZoneName != "" {
		zoneField = path + ".hostedZoneName"
	}
	switch code := re.StatusCode; {
	case code == http.StatusPreconditionFailed || (code == http.StatusConflict && re.ErrorCode != "MissingSubscriptionRegistration"):
		return wrap(path, what+": the record set changed while it was being updated")
	case code == http.StatusTooManyRequests || code >= 500:
		e := wrap(path, what)
		if d, ok := retryAfter(re.RawResponse); ok {
			return errs.RetryAfter(e, d)
		}
		return e
	case code == http.StatusUnauthorized:
		return errs.Permanent(wrap(p.credentialField(), what+": Azure refused the credentials"))
	case code == http.StatusForbidden:
		return errs.Permanent(wrap(p.credentialField(), fmt.Sprintf("%s: %s may not change %ss in resource group %s (it needs the %s role on the zone or the group)",
			what, p.identity(), p.kind(), p.Config.ResourceGroupName, p.role())))
	case re.ErrorCode == "SubscriptionNotFound" || re.ErrorCode == "MissingSubscriptionRegistration" || re.ErrorCode == "SubscriptionNotRegistered":
		return errs.Permanent(wrap(path+".subscriptionID", what))
	case re.ErrorCode == "ResourceGroupNotFound":
		return errs.Permanent(wrap(path+".resourceGroupName", what))
	case code == http.StatusNotFound && o != opList:
		return errs.Permanent(wrap(path+".hostedZoneName", what+": no such "+p.kind()+" in resource group "+p.Config.ResourceGroupName))
	case code == http.StatusBadRequest || code == http.StatusNotFound:
		return errs.Permanent(wrap(zoneField, what+": Azure refused the request"))
	}
	return wrap(path, what)
}

// classifyAuth classifies a refused token request.
func (p *Provider) classifyAuth(err error, what string, afe *azidentity.AuthenticationFailedError) error {
	path := p.Config.Path
	resp := afe.RawResponse
	if resp == nil {
		// The credential failed without an answer (IMDS unreachable, no
		// identity here): the deployment's configuration, retried with
		// backoff like a missing default chain.
		return &azureError{msg: fmt.Sprintf("%s: %s: no token for %s: %s", p.credentialField(), what, p.identity(), firstLine(afe.Error())), err: err}
	}
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
		Codes       []int  `json:"error_codes"`
	}
	payload, _ := runtime.Payload(resp)
	_ = json.Unmarshal(payload, &body)
	desc := fmt.Sprintf("%d %s: %s", resp.StatusCode, body.Error, firstLine(body.Description))
	e := &azureError{err: err}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		e.msg = fmt.Sprintf("%s: %s: token endpoint: %s", p.credentialField(), what, desc)
		return e
	case p.Config.ClientID == "":
		field := path + " (ambient identity)"
		if p.Config.ManagedIdentity != nil {
			field = path + ".managedIdentity"
		}
		e.msg = fmt.Sprintf("%s: %s: the identity endpoint refused %s: %s", field, what, p.identity(), desc)
		return errs.Permanent(e)
	}
	field := path + ".clientSecretSecretRef"
	for _, c := range body.Codes {
		switch c {
		case 90002, 90023, 900023:
			field = path + ".tenantID"
		case 700016, 700038:
			field = path + ".clientID"
		}
	}
	e.msg = fmt.Sprintf("%s: %s: Entra ID refused %s: %s", field, what, p.identity(), desc)
	return errs.Permanent(e)
}

// azureError is a classified Azure error: msg is its one-line text, err
// the SDK's error (kept for errors.As).
type azureError struct {
	msg string
	err error
}

func (e *azureError) Error() string { return e.msg }
func (e *azureError) Unwrap() error { return e.err }

// describe is Azure's answer in one line: status, error code and message.
func describe(re *azcore.ResponseError) string {
	msg := ""
	if re.RawResponse != nil {
		var body struct {
			Error struct {
				Code, Message string
			} `json:"error"`
		}
		if payload, err := runtime.Payload(re.RawResponse); err == nil && json.Unmarshal(payload, &body) == nil {
			msg = firstLine(body.Error.Message)
		}
	}
	return strings.TrimSuffix(fmt.Sprintf("%d %s %s", re.StatusCode, re.ErrorCode, msg), " ")
}

// firstLine returns s up to its first line break, at most 300 bytes.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return strings.TrimSpace(s)
}

// retryAfter reads a Retry-After header in seconds.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// credentialField names what to fix when the credentials are refused or
// denied.
func (p *Provider) credentialField() string {
	switch {
	case p.Config.ClientID != "":
		return p.Config.Path + ".clientID"
	case p.Config.ManagedIdentity != nil:
		return p.Config.Path + ".managedIdentity"
	}
	return p.Config.Path + " (ambient identity)"
}

// identity describes the caller for messages.
func (p *Provider) identity() string {
	c := p.Config
	switch {
	case c.ClientID != "":
		return "service principal " + c.ClientID
	case c.ManagedIdentity != nil && c.ManagedIdentity.ClientID != "":
		return "managed identity " + c.ManagedIdentity.ClientID
	case c.ManagedIdentity != nil && c.ManagedIdentity.ResourceID != "":
		return "managed identity " + c.ManagedIdentity.ResourceID
	}
	return "the function's own identity"
}

// role is the built-in role that grants what the provider does.
func (p *Provider) role() string {
	if p.Config.Private {
		return "Private DNS Zone Contributor"
	}
	return "DNS Zone Contributor"
}
