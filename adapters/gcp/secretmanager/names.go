package secretmanager

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/certfn/certfn/core/errs"
)

// Class is the segment of a secret ID that IAM conditions separate on: it
// groups the roles that the same functions may read and write (the table
// in the package documentation). A secret's class follows from its
// content (ClassOf), so a Get, which has only a namespace and a name,
// looks in each class the Store serves (Options.Classes).
type Class string

// Classes, by ID segment.
const (
	// ClassTLS: issued key pairs and ACME account keys (roles certificate,
	// acme-account). Worker: read and write.
	ClassTLS Class = "tls"
	// ClassPrivateKey: next private keys (role private-key). Worker: read
	// and write; signer: read (a selfSigned request is signed with its own
	// key).
	ClassPrivateKey Class = "pk"
	// ClassIssuedCA: CA key pairs certfn issued from an isCA Certificate
	// (role issued-ca). Signer: read; worker: read and write only where it
	// is allowed to manage CA certificates.
	ClassIssuedCA Class = "ica"
	// ClassCA: CA key pairs installed by operators (role ca). Signer: read.
	// certfn never writes or deletes them.
	ClassCA Class = "ca"
	// ClassSolverCredentials: DNS-01 solver credentials installed by
	// operators (role solver-credentials). Worker: read. certfn never
	// writes or deletes them.
	ClassSolverCredentials Class = "sc"
)

// allClasses is every class, the most used first.
var allClasses = []Class{ClassTLS, ClassPrivateKey, ClassIssuedCA, ClassCA, ClassSolverCredentials}

// AllClasses returns the default of Options.Classes: every class, the most
// used first (one identity that does everything: local tests, a
// single-function deployment).
func AllClasses() []Class { return slices.Clone(allClasses) }

// WorkerClasses returns the classes of the worker function: key pairs,
// ACME account keys, next private keys, solver credentials, and with
// manageCA the CA key pairs certfn issues (the AWS deployment's
// worker_manages_ca_certificates).
func WorkerClasses(manageCA bool) []Class {
	c := []Class{ClassTLS, ClassPrivateKey, ClassSolverCredentials}
	if manageCA {
		c = append(c, ClassIssuedCA)
	}
	return c
}

// SignerClasses returns the classes of the signer function: CA key pairs
// (installed or issued) and next private keys.
func SignerClasses() []Class { return []Class{ClassCA, ClassIssuedCA, ClassPrivateKey} }

// ClassOf returns the class of a role.
func ClassOf(r Role) Class {
	switch r {
	case RolePrivateKey:
		return ClassPrivateKey
	case RoleIssuedCA:
		return ClassIssuedCA
	case RoleCA:
		return ClassCA
	case RoleSolverCredentials:
		return ClassSolverCredentials
	}
	return ClassTLS
}

// writable reports whether certfn writes and deletes secrets of class c
// (operators own ca and sc).
func (c Class) writable() bool { return c != ClassCA && c != ClassSolverCredentials }

func (c Class) valid() bool { return slices.Contains(allClasses, c) }

// DefaultPrefix is the default first segment of secret IDs.
const DefaultPrefix = "certfn"

// prefixRE is what a prefix may be: no '_' (the segment separator), so
// that "<prefix>_<class>_" is never the start of another prefix's IDs.
var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,29}$`)

// maxIDLen is Secret Manager's limit on a secret ID.
const maxIDLen = 255

// hashMark starts the suffix of an ID whose name was shortened; readable
// IDs never hold an upper-case letter.
const hashMark = "-H"

// hashLen is the number of hex digits of the name hash in a shortened ID.
const hashLen = 32

// secretID returns the ID of namespace/name in class c:
//
//	<prefix>_<class>_<namespace>_<name with '.' as '_'>
//
// for example certfn_tls_default_web-tls, certfn_ca_cert-manager_my-ca or
// certfn_tls_team-a_www_example_com. Namespaces and names are DNS names,
// which hold no '_' and no upper-case letter, so the encoding is
// reversible (ParseSecretID) and every ID of a class, or of a class and a
// namespace, starts with the same string: what IAM conditions test with
// resource.name.startsWith. An ID over 255 characters keeps its first 255
// - 34 characters and ends with "-H" and 32 hex digits of SHA-256 of
// "namespace/name": still unique and still under the same prefixes, but
// not reversible (the secret's annotations certfn-namespace and
// certfn-name hold the names).
func secretID(prefix string, c Class, namespace, name string) string {
	id := prefix + "_" + string(c) + "_" + namespace + "_" + strings.ReplaceAll(name, ".", "_")
	if len(id) <= maxIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	suffix := hashMark + hex.EncodeToString(sum[:])[:hashLen]
	return strings.TrimRight(id[:maxIDLen-len(suffix)], "_") + suffix
}

// SecretID returns the Secret Manager ID of namespace/name in class c,
// after validating both names.
func (s *Store) SecretID(c Class, namespace, name string) (string, error) {
	if err := checkNames(namespace, name); err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	if !c.valid() {
		return "", errs.Permanentf("secret %s/%s: class %q is not one of %v", namespace, name, c, allClasses)
	}
	return secretID(s.prefix, c, namespace, name), nil
}

// ParseSecretID reverses SecretID for this Store's prefix. ok is false for
// an ID of another prefix or class, and for a shortened ID (whose names are
// only in its annotations).
func (s *Store) ParseSecretID(id string) (c Class, namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(id, s.prefix+"_")
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "_", 3)
	if len(parts) != 3 || !Class(parts[0]).valid() || strings.Contains(parts[2], hashMark) {
		return "", "", "", false
	}
	c, namespace, name = Class(parts[0]), parts[1], strings.ReplaceAll(parts[2], "_", ".")
	if checkNames(namespace, name) != nil {
		return "", "", "", false
	}
	return c, namespace, name, true
}

// ResourceName returns the Secret Manager resource name
// projects/<project>/secrets/<ID> of the certificate (class tls) secret
// namespace/name under prefix (DefaultPrefix when empty), without
// validating or reading anything: what the API reports as the secret's
// reference.
func ResourceName(project, prefix, namespace, name string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return "projects/" + project + "/secrets/" + secretID(prefix, ClassTLS, namespace, name)
}
