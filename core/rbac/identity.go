// Package rbac evaluates Kubernetes-style RBAC (Role, ClusterRole,
// RoleBinding, ClusterRoleBinding; rbac.authorization.k8s.io/v1) over certfn's
// stored objects, for cloud identities: who may `use` a
// CertificateRequestPolicy (docs/design/approval-policy.md), who may `approve` for a signer
// (docs/design/certificates-api.md's separate approval permission), and who may create, get, list,
// update or delete each kind in a namespace. It is pure: an Authorizer is
// built from a snapshot of objects and never reads a store.
package rbac

import (
	"fmt"
	"slices"
	"strings"
)

// Well-known groups and the ServiceAccount username form (Kubernetes').
const (
	// GroupAuthenticated: every authenticated identity is a member.
	GroupAuthenticated = "system:authenticated"
	// GroupServiceAccounts: every ServiceAccount identity is a member.
	GroupServiceAccounts = "system:serviceaccounts"
	// ServiceAccountUsernamePrefix starts system:serviceaccount:<ns>:<name>.
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	// ServiceAccountGroupPrefix starts system:serviceaccounts:<ns>.
	ServiceAccountGroupPrefix = "system:serviceaccounts:"

	// GroupAWSAccountPrefix starts the group aws:account:<account-id> given
	// to every AWS principal of that account.
	GroupAWSAccountPrefix = "aws:account:"
	// LocalUserPrefix starts the username of a local-mode user, local:<name>.
	LocalUserPrefix = "local:"
	// GroupLocal: every local-mode user is a member.
	GroupLocal = "certfn:local"

	// GroupGCPProjectPrefix starts the group gcp:project:<project-id> given
	// to every Google service account of that project.
	GroupGCPProjectPrefix = "gcp:project:"

	// ExtraAWSPrincipalARN records the caller's original ARN (for an
	// assumed role: the session ARN) in Identity.Extra.
	ExtraAWSPrincipalARN = "aws.amazon.com/principal-arn"
	// ExtraAWSSessionName records an assumed role's session name.
	ExtraAWSSessionName = "aws.amazon.com/session-name"

	// ControllerNamespace and ControllerName form the identity certfn's own
	// Certificate controllers use when they create CertificateRequests,
	// system:serviceaccount:cert-manager:cert-manager, as cert-manager's
	// controller does. Bind policies to it for requests made from
	// Certificates (docs/design/approval-policy.md's note on the cert-manager ServiceAccount).
	ControllerNamespace = "cert-manager"
	ControllerName      = "cert-manager"
)

// Identity is an authenticated caller, as recorded on a CertificateRequest
// (spec.username, uid, groups, extra; docs/design/certificates-api.md).
type Identity struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

// String renders the identity for messages: `"alice" (groups: a, b)`.
func (id Identity) String() string {
	if len(id.Groups) == 0 {
		return fmt.Sprintf("%q", id.Username)
	}
	return fmt.Sprintf("%q (groups: %s)", id.Username, strings.Join(id.Groups, ", "))
}

// Authenticated reports whether the identity names a user; every such
// identity is a member of system:authenticated.
func (id Identity) Authenticated() bool { return id.Username != "" }

// ServiceAccount returns the namespace and name when the username has the
// form system:serviceaccount:<namespace>:<name>.
func (id Identity) ServiceAccount() (namespace, name string, ok bool) {
	return SplitServiceAccountUsername(id.Username)
}

// ImplicitGroups returns the groups an identity belongs to without them
// being listed: system:authenticated for any authenticated identity and,
// for a ServiceAccount, system:serviceaccounts and
// system:serviceaccounts:<namespace>. The Authorizer always adds them.
func (id Identity) ImplicitGroups() []string {
	if !id.Authenticated() {
		return nil
	}
	out := []string{GroupAuthenticated}
	if ns, _, ok := id.ServiceAccount(); ok {
		out = append(out, GroupServiceAccounts, ServiceAccountGroupPrefix+ns)
	}
	return out
}

// WithImplicitGroups returns a copy of id whose Groups also list
// ImplicitGroups (each once), so that the groups recorded on a request are
// the ones the Authorizer uses.
func (id Identity) WithImplicitGroups() Identity {
	out := id
	out.Groups = slices.Clone(id.Groups)
	for _, g := range id.ImplicitGroups() {
		if !slices.Contains(out.Groups, g) {
			out.Groups = append(out.Groups, g)
		}
	}
	return out
}

// ServiceAccountUsername returns system:serviceaccount:<namespace>:<name>.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// SplitServiceAccountUsername parses system:serviceaccount:<ns>:<name>.
func SplitServiceAccountUsername(username string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(username, ServiceAccountUsernamePrefix)
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, ":")
	if !found || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// ForServiceAccount returns the identity of a ServiceAccount subject, with
// its implicit groups listed.
func ForServiceAccount(namespace, name string) Identity {
	return Identity{Username: ServiceAccountUsername(namespace, name)}.WithImplicitGroups()
}

// Controller returns the identity certfn's Certificate controllers record
// on the CertificateRequests they create.
func Controller() Identity { return ForServiceAccount(ControllerNamespace, ControllerName) }

// Local returns the identity of a local-mode user (the CLI on the machine
// running certfn): username local:<name>, groups as given plus certfn:local
// and system:authenticated.
func Local(name string, groups ...string) (Identity, error) {
	name = strings.TrimPrefix(strings.TrimSpace(name), LocalUserPrefix)
	if name == "" {
		return Identity{}, fmt.Errorf("local user: empty name")
	}
	gs := slices.Clone(groups)
	if !slices.Contains(gs, GroupLocal) {
		gs = append(gs, GroupLocal)
	}
	return Identity{Username: LocalUserPrefix + name, Groups: gs}.WithImplicitGroups(), nil
}

// FromAWSARN maps an authenticated AWS caller ARN (as returned by
// sts:GetCallerIdentity or an API Gateway IAM-auth request context) to an
// identity:
//
//   - arn:<p>:iam::<acct>:user/<path/>name, arn:<p>:iam::<acct>:role/<path/>name,
//     arn:<p>:iam::<acct>:root and arn:<p>:sts::<acct>:federated-user/<name>
//     keep the ARN as username;
//   - arn:<p>:sts::<acct>:assumed-role/<role>/<session> (Lambda functions,
//     SSO users, CI roles) becomes the role's ARN arn:<p>:iam::<acct>:role/<role>
//     (sessions come and go, bindings name the role; the STS ARN carries no
//     role path, so bind the role ARN without its path). The session ARN and
//     name are kept in Extra.
//
// Groups: aws:account:<acct> and system:authenticated.
func FromAWSARN(arn string) (Identity, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" {
		return Identity{}, fmt.Errorf("aws principal %q: want arn:<partition>:<service>::<account>:<resource>", arn)
	}
	partition, service, account, resource := parts[1], parts[2], parts[4], parts[5]
	if !isDigits(account) || len(account) != 12 {
		return Identity{}, fmt.Errorf("aws principal %q: account %q is not a 12-digit account id", arn, account)
	}
	id := Identity{Groups: []string{GroupAWSAccountPrefix + account}}
	switch {
	case service == "iam" && (resource == "root" || hasNamedPrefix(resource, "user/") || hasNamedPrefix(resource, "role/")):
		id.Username = arn
	case service == "sts" && hasNamedPrefix(resource, "federated-user/"):
		id.Username = arn
	case service == "sts" && strings.HasPrefix(resource, "assumed-role/"):
		role, session, ok := strings.Cut(strings.TrimPrefix(resource, "assumed-role/"), "/")
		if !ok || role == "" || session == "" {
			return Identity{}, fmt.Errorf("aws principal %q: want assumed-role/<role>/<session>", arn)
		}
		id.Username = "arn:" + partition + ":iam::" + account + ":role/" + role
		id.Extra = map[string][]string{ExtraAWSPrincipalARN: {arn}, ExtraAWSSessionName: {session}}
	default:
		return Identity{}, fmt.Errorf("aws principal %q: want an IAM user, role, root, federated user or assumed-role ARN", arn)
	}
	return id.WithImplicitGroups(), nil
}

// FromGoogleEmail maps an authenticated Google principal's e-mail (from a
// verified ID token) to an identity: the lower-cased e-mail is the username.
// A service account <name>@<project>.iam.gserviceaccount.com (or the App
// Engine default <project>@appspot.gserviceaccount.com) is also a member
// of gcp:project:<project>. Every identity is in system:authenticated.
func FromGoogleEmail(email string) (Identity, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") {
		return Identity{}, fmt.Errorf("google principal %q: want an e-mail address", email)
	}
	id := Identity{Username: e}
	switch {
	case strings.HasSuffix(domain, ".iam.gserviceaccount.com"):
		project := strings.TrimSuffix(domain, ".iam.gserviceaccount.com")
		if project != "" && !strings.Contains(project, ".") {
			id.Groups = []string{GroupGCPProjectPrefix + project}
		}
	case domain == "appspot.gserviceaccount.com":
		id.Groups = []string{GroupGCPProjectPrefix + local}
	}
	return id.WithImplicitGroups(), nil
}

func hasNamedPrefix(s, prefix string) bool {
	return strings.HasPrefix(s, prefix) && len(s) > len(prefix) && !strings.HasSuffix(s, "/")
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
