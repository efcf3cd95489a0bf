// Package ssmstore implements ports.SecretStore on AWS Systems Manager
// Parameter Store: the cheaper alternative to
// adapters/aws/secrets (Secrets Manager bills $0.40 per secret and month;
// a standard-tier parameter costs nothing to store). See docs/deploy/aws.md,
// "SSM Parameter Store secret store".
//
//   - A secret is the SecureString parameter
//     /<prefix>/<class>/<namespace>/<name>. The class (Class) follows from
//     the content by adapters/aws/secrets.RoleOf, as the Google adapter's
//     does (docs/deploy/gcp.md, "Secret IDs and classes"): tls
//     (certificates, ACME account keys), pk (next private keys), ica (CA
//     key pairs certfn issued), ca (CA key pairs operators installed) and
//     sc (solver credentials). IAM separates classes by path
//     (arn:aws:ssm:R:A:parameter/<prefix>/<class>/*): only the signer reads
//     CA key pairs.
//   - A Get has only a namespace and a name: one GetParameters call names
//     the parameter in every class the Store serves (Options.Classes), so
//     a Get, found or missing, is one request whatever the number of
//     classes (Parameter Store's standard throughput is 40 requests a
//     second per account and region). Any error, AccessDenied included,
//     is an error, never a miss.
//   - The value is the JSON payload of adapters/secretpayload, byte for
//     byte what the Secrets Manager store writes, encrypted with a
//     configurable KMS key. It is written in the standard tier when it fits
//     4096 bytes, else in the advanced tier (8192 bytes at most); larger is
//     a permanent error naming sizes.
//   - Put writes a new version only when the content changed; SSM keeps
//     the replaced version in the parameter's history, which Rollback
//     writes back as a new version.
//   - Errors name parameters, keys and sizes, never values.
package ssmstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the subset of *ssm.Client the store calls.
type API interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	GetParameters(ctx context.Context, in *ssm.GetParametersInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersOutput, error)
	PutParameter(ctx context.Context, in *ssm.PutParameterInput, optFns ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
	DeleteParameter(ctx context.Context, in *ssm.DeleteParameterInput, optFns ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error)
}

var _ API = (*ssm.Client)(nil)

// Size limits of a parameter value (bytes), by tier.
const (
	MaxStandardBytes = 4096
	MaxAdvancedBytes = 8192
)

// DefaultPrefix is the default first path segment.
const DefaultPrefix = "certfn"

// maxNameLen is Parameter Store's limit on a parameter name (the whole
// path); maxLevels its limit on the hierarchy depth.
const (
	maxNameLen = 1011
	maxLevels  = 15
)

// Class is the path segment IAM separates on (see the package comment).
type Class string

// Classes.
const (
	// ClassTLS: issued key pairs (role certificate) and ACME account keys
	// (role acme-account).
	ClassTLS Class = "tls"
	// ClassPrivateKey: next private keys (role private-key).
	ClassPrivateKey Class = "pk"
	// ClassIssuedCA: CA key pairs certfn issued (role issued-ca).
	ClassIssuedCA Class = "ica"
	// ClassCA: CA key pairs operators installed; never written by certfn.
	ClassCA Class = "ca"
	// ClassSolverCredentials: DNS-01 solver credentials operators
	// installed; never written by certfn.
	ClassSolverCredentials Class = "sc"
)

var allClasses = []Class{ClassTLS, ClassPrivateKey, ClassIssuedCA, ClassCA, ClassSolverCredentials}

// AllClasses is every class, for one identity that does everything (the
// default of Options.Classes).
func AllClasses() []Class { return slices.Clone(allClasses) }

// WorkerClasses are the classes the worker reads: tls, pk, sc, and ica
// when it manages CA certificates.
func WorkerClasses(manageCA bool) []Class {
	c := []Class{ClassTLS, ClassPrivateKey, ClassSolverCredentials}
	if manageCA {
		c = append(c, ClassIssuedCA)
	}
	return c
}

// SignerClasses are the classes the signer reads: ca, ica, pk.
func SignerClasses() []Class { return []Class{ClassCA, ClassIssuedCA, ClassPrivateKey} }

// ClassOf maps a role of secrets.RoleOf (the Secrets Manager tag
// certfn-role) to its class; "" for an unknown role.
func ClassOf(role string) Class {
	switch role {
	case secrets.RoleCertificate, secrets.RoleACMEAccount:
		return ClassTLS
	case secrets.RolePrivateKey:
		return ClassPrivateKey
	case secrets.RoleIssuedCA:
		return ClassIssuedCA
	case "ca":
		return ClassCA
	case "solver-credentials":
		return ClassSolverCredentials
	}
	return ""
}

// what describes the class in an error.
func (c Class) what() string {
	switch c {
	case ClassTLS:
		return "certificates and ACME account keys"
	case ClassPrivateKey:
		return "next private keys"
	case ClassIssuedCA:
		return "CA key pairs certfn issued"
	case ClassCA:
		return "CA key pairs operators installed"
	case ClassSolverCredentials:
		return "DNS-01 solver credentials"
	}
	return "unknown"
}

// hint says how a deployment lets its worker write the class, where it can.
func (c Class) hint() string {
	if c == ClassIssuedCA {
		return "; the worker writes the key pairs of CA Certificates only with the Terraform module's worker_manages_ca_certificates = true"
	}
	return ""
}

// writable: certfn never writes or deletes operators' classes.
func (c Class) writable() bool { return c != ClassCA && c != ClassSolverCredentials }

// segmentRE is one segment of a prefix: parameter name characters.
var segmentRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// dnsSubdomain is what a namespace and a name may be.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Options configure a Store.
type Options struct {
	// Prefix is the first part of every parameter path, without leading
	// or trailing '/' (default "certfn"): '/'-separated segments of
	// letters, digits, '_', '.' and '-', at most 11 of them, not starting
	// with "aws" or "ssm" (reserved by AWS).
	Prefix string
	// Classes are the classes this Store reads and writes, in the order a
	// Get tries them (default AllClasses(); a function's own:
	// WorkerClasses, SignerClasses). Writing a secret of another class
	// fails before any call; ca and sc are never written or deleted.
	Classes []Class
	// KMSKeyID encrypts the SecureString values (a key id, ARN or alias);
	// empty means the account's aws/ssm key.
	KMSKeyID string
	// Metrics, when set, counts certfn_ssm_requests_total{op}.
	Metrics ports.Metrics
}

// Store is the ports.SecretStore on Parameter Store. It is safe for
// concurrent use.
type Store struct {
	client  API
	prefix  string
	classes []Class
	kms     string
	m       ports.Metrics
}

var _ ports.SecretStore = (*Store)(nil)

// New returns a Store through client. It makes no call.
func New(client API, opts Options) (*Store, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	segs := strings.Split(opts.Prefix, "/")
	low := strings.ToLower(opts.Prefix)
	if len(segs) > maxLevels-4 || strings.HasPrefix(low, "aws") || strings.HasPrefix(low, "ssm") || slices.ContainsFunc(segs, func(s string) bool { return !segmentRE.MatchString(s) }) {
		return nil, errs.Permanentf("ssm store: prefix: %q is not valid: want at most %d '/'-separated segments of letters, digits, '_', '.' and '-', not starting with \"aws\" or \"ssm\"", opts.Prefix, maxLevels-4)
	}
	if len(opts.Classes) == 0 {
		opts.Classes = allClasses
	}
	for i, c := range opts.Classes {
		if !slices.Contains(allClasses, c) || slices.Contains(opts.Classes[:i], c) {
			return nil, errs.Permanentf("ssm store: classes[%d]: %q is not a class or is repeated: want distinct values of %v", i, c, allClasses)
		}
	}
	return &Store{client: client, prefix: opts.Prefix, classes: slices.Clone(opts.Classes), kms: opts.KMSKeyID, m: opts.Metrics}, nil
}

// Prefix returns the Store's path prefix.
func (s *Store) Prefix() string { return s.prefix }

// checkNames validates a namespace and a name (DNS subdomains).
func checkNames(namespace, name string) error {
	for _, f := range [][2]string{{"namespace", namespace}, {"name", name}} {
		if len(f[1]) > 253 || !dnsSubdomain.MatchString(f[1]) {
			return errs.Permanentf("%s: %q is not a valid name: want a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)", f[0], f[1])
		}
	}
	return nil
}

// ParameterName returns the parameter of namespace/name in class c,
// /<prefix>/<class>/<namespace>/<name>, after validating both.
func (s *Store) ParameterName(c Class, namespace, name string) (string, error) {
	if err := checkNames(namespace, name); err != nil {
		return "", err
	}
	if !slices.Contains(allClasses, c) {
		return "", errs.Permanentf("class %q: want one of %v", c, allClasses)
	}
	p := "/" + s.prefix + "/" + string(c) + "/" + namespace + "/" + name
	if len(p) > maxNameLen {
		return "", errs.Permanentf("parameter name %d characters long, Parameter Store allows %d", len(p), maxNameLen)
	}
	return p, nil
}

func (s *Store) inc(op string) {
	if s.m != nil {
		s.m.Inc("certfn_ssm_requests_total", "op", op)
	}
}

// permanentCodes are the service's answers no retry can change. Anything
// else (ThrottlingException, TooManyUpdates, InternalServerError, network)
// stays transient.
var permanentCodes = map[string]bool{
	"AccessDeniedException":                true,
	"ValidationException":                  true,
	"InvalidKeyId":                         true,
	"ParameterLimitExceeded":               true,
	"ParameterMaxVersionLimitExceeded":     true,
	"ParameterPatternMismatchException":    true,
	"HierarchyLevelLimitExceededException": true,
	"HierarchyTypeMismatchException":       true,
	"UnsupportedParameterType":             true,
	"InvalidAllowedPatternException":       true,
	"KMSAccessDeniedException":             true,
	"KMSDisabledException":                 true,
	"KMSNotFoundException":                 true,
	"KMSInvalidStateException":             true,
	"UnrecognizedClientException":          true,
}

// classify marks permanent errors; see permanentCodes.
func classify(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && permanentCodes[ae.ErrorCode()] {
		return errs.Permanent(err)
	}
	return err
}

func isNotFound(err error) bool {
	var nf *types.ParameterNotFound
	var vnf *types.ParameterVersionNotFound
	return errors.As(err, &nf) || errors.As(err, &vnf)
}

func isExists(err error) bool {
	var ex *types.ParameterAlreadyExists
	return errors.As(err, &ex)
}

func isValidation(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException"
}

// read returns the value of parameter p (selector: "" for the latest,
// ":<version>" for one version) and its version; ports.ErrNotFound when
// missing.
func (s *Store) read(ctx context.Context, p, selector string) (value string, version int64, err error) {
	if err := ctx.Err(); err != nil {
		return "", 0, err
	}
	out, err := s.client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p + selector), WithDecryption: aws.Bool(true)})
	s.inc("GetParameter")
	if isNotFound(err) {
		return "", 0, ports.ErrNotFound
	}
	if err != nil {
		return "", 0, classify(err)
	}
	if out.Parameter == nil {
		return "", 0, fmt.Errorf("%s: answer without a parameter", p)
	}
	return aws.ToString(out.Parameter.Value), out.Parameter.Version, nil
}

// located is where locate found a secret.
type located struct {
	class   Class
	param   string
	value   string
	version int64
}

// locate finds namespace/name in the Store's classes with one
// GetParameters call naming the parameter of every class (Parameter Store
// answers the missing ones as InvalidParameters); found is false when no
// class holds it. When two classes hold it (a Put that moved it to
// another class stopped before removing the old one), the one modified
// last is the secret. An error, AccessDenied included, is never a miss: a
// class list wider than the function's policy is a misconfiguration.
func (s *Store) locate(ctx context.Context, namespace, name string) (loc located, found bool, err error) {
	names := make([]string, 0, len(s.classes))
	byName := make(map[string]Class, len(s.classes))
	for _, c := range s.classes {
		p, err := s.ParameterName(c, namespace, name)
		if err != nil {
			return located{}, false, err
		}
		names = append(names, p)
		byName[p] = c
	}
	if err := ctx.Err(); err != nil {
		return located{}, false, err
	}
	out, err := s.client.GetParameters(ctx, &ssm.GetParametersInput{Names: names, WithDecryption: aws.Bool(true)})
	s.inc("GetParameters")
	if err != nil {
		return located{}, false, fmt.Errorf("%s: %w", strings.Join(names, ", "), classify(err))
	}
	var newest *types.Parameter
	for i := range out.Parameters {
		p := &out.Parameters[i]
		if _, ok := byName[aws.ToString(p.Name)]; !ok {
			continue
		}
		if newest == nil || aws.ToTime(p.LastModifiedDate).After(aws.ToTime(newest.LastModifiedDate)) {
			newest = p
		}
	}
	if newest == nil {
		return located{}, false, nil
	}
	n := aws.ToString(newest.Name)
	return located{class: byName[n], param: n, value: aws.ToString(newest.Value), version: newest.Version}, true, nil
}

// Get returns the secret, or ports.ErrNotFound when no class of the Store
// holds it.
func (s *Store) Get(ctx context.Context, namespace, name string) (ports.Secret, error) {
	if err := checkNames(namespace, name); err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
	}
	loc, found, err := s.locate(ctx, namespace, name)
	if err == nil && !found {
		err = ports.ErrNotFound
	}
	if err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
	}
	sec, err := s.resolve(ctx, loc.param, loc.value)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
	}
	sec.Namespace, sec.Name = namespace, name
	return sec, nil
}

// resolve decodes the payload of parameter p and, for a split secret,
// reads the companion version it names (split.go).
func (s *Store) resolve(ctx context.Context, p, value string) (ports.Secret, error) {
	sec, keyVersion, err := decodeMain(value)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("%s: %w", p, errs.Permanent(err))
	}
	if keyVersion == 0 {
		return sec, nil
	}
	kp := p + keyPartSuffix
	v, _, err := s.read(ctx, kp, ":"+strconv.FormatInt(keyVersion, 10))
	if errors.Is(err, ports.ErrNotFound) {
		return ports.Secret{}, errs.Permanentf("%s: version %d, which %s names, is gone", kp, keyVersion, p)
	}
	if err != nil {
		return ports.Secret{}, err
	}
	key, err := secretpayload.Decode([]byte(v))
	if err != nil || len(key.Data[splitKey]) == 0 {
		return ports.Secret{}, errs.Permanentf("%s: version %d holds no %s", kp, keyVersion, splitKey)
	}
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	sec.Data[splitKey] = key.Data[splitKey]
	return sec, nil
}

// ClassFor is the class sec is stored in (secrets.RoleOf).
func ClassFor(sec ports.Secret) Class { return ClassOf(secrets.RoleOf(sec)) }

// TierFor returns the tier a payload of n bytes is written in, or a
// permanent error naming the sizes when it fits no tier.
func TierFor(n int) (types.ParameterTier, error) {
	switch {
	case n <= MaxStandardBytes:
		return types.ParameterTierStandard, nil
	case n <= MaxAdvancedBytes:
		return types.ParameterTierAdvanced, nil
	}
	return "", errs.Permanentf("payload: %d bytes, over Parameter Store's limit of %d (advanced tier)", n, MaxAdvancedBytes)
}

// prepare encodes sec (split.go) and checks that this Store writes its
// class.
func (s *Store) prepare(sec ports.Secret) (enc encoded, c Class, p string, err error) {
	if err := checkNames(sec.Namespace, sec.Name); err != nil {
		return encoded{}, "", "", err
	}
	if enc, err = encode(sec); err != nil {
		return encoded{}, "", "", err
	}
	c = ClassFor(sec)
	if !slices.Contains(s.classes, c) || !c.writable() {
		return encoded{}, "", "", errs.Permanentf("class %s (%s): this store does not write it (its classes: %v)%s", c, c.what(), s.classes, c.hint())
	}
	p, err = s.ParameterName(c, sec.Namespace, sec.Name)
	if err != nil {
		return encoded{}, "", "", err
	}
	return enc, c, p, nil
}

// store writes enc at p: the companion first (overwritten), then the
// parameter with the companion's version in it (overwrite false fails with
// ports.ErrAlreadyExists when p exists).
func (s *Store) store(ctx context.Context, p string, enc encoded, overwrite bool) error {
	main := enc.main
	if enc.key != "" {
		v, err := s.write(ctx, p+keyPartSuffix, enc.key, true)
		if err != nil {
			return err
		}
		if main, err = withKeyVersion(main, v); err != nil {
			return err
		}
	}
	_, err := s.write(ctx, p, main, overwrite)
	return err
}

// write is PutParameter of payload at p: a SecureString in the tier its
// size needs. overwrite false fails with ports.ErrAlreadyExists when p
// exists. An advanced parameter cannot go back to the standard tier: a
// standard write the service refuses (ValidationException) is tried once
// more in the advanced tier. It returns the version written.
func (s *Store) write(ctx context.Context, p, payload string, overwrite bool) (int64, error) {
	tier, err := TierFor(len(payload))
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	in := &ssm.PutParameterInput{
		Name:      aws.String(p),
		Value:     aws.String(payload),
		Type:      types.ParameterTypeSecureString,
		Tier:      tier,
		Overwrite: aws.Bool(overwrite),
	}
	if s.kms != "" {
		in.KeyId = aws.String(s.kms)
	}
	out, err := s.client.PutParameter(ctx, in)
	s.inc("PutParameter")
	if err != nil && tier == types.ParameterTierStandard && overwrite && isValidation(err) {
		in.Tier = types.ParameterTierAdvanced
		out, err = s.client.PutParameter(ctx, in)
		s.inc("PutParameter")
	}
	if isExists(err) {
		return 0, ports.ErrAlreadyExists
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, classify(err))
	}
	return out.Version, nil
}

// Create writes a new secret; ports.ErrAlreadyExists if it exists in any
// class of the Store (one of concurrent creators wins).
func (s *Store) Create(ctx context.Context, sec ports.Secret) error {
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: create: %w", sec.Namespace, sec.Name, err) }
	enc, _, p, err := s.prepare(sec)
	if err != nil {
		return fail(err)
	}
	loc, found, err := s.locate(ctx, sec.Namespace, sec.Name)
	if err != nil {
		return fail(err)
	}
	if found {
		return fail(fmt.Errorf("%s: %w", loc.param, ports.ErrAlreadyExists))
	}
	if err := s.store(ctx, p, enc, false); err != nil {
		return fail(err)
	}
	return nil
}

// Put creates the secret or replaces its whole content. Unchanged content
// writes nothing, so a retried Put never pushes the real previous version
// out of the top of the history (for a split secret this costs one more
// read: the companion). Content whose class changed is written in its new
// class and removed from the old one.
func (s *Store) Put(ctx context.Context, sec ports.Secret) error {
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: put: %w", sec.Namespace, sec.Name, err) }
	enc, c, p, err := s.prepare(sec)
	if err != nil {
		return fail(err)
	}
	loc, found, err := s.locate(ctx, sec.Namespace, sec.Name)
	if err != nil {
		return fail(err)
	}
	if found && !loc.class.writable() {
		return fail(errs.Permanentf("%s is in class %s (%s), which operators own: certfn does not write it", loc.param, loc.class, loc.class.what()))
	}
	if found {
		if cur, _, err := decodeMain(loc.value); err == nil {
			if err := secrets.Replaces(cur, sec); err != nil {
				return fail(fmt.Errorf("%s: %w", loc.param, err))
			}
		}
	}
	if found && loc.class == c {
		if enc.key == "" && loc.value == enc.main {
			return nil
		}
		if cur, err := s.resolve(ctx, loc.param, loc.value); err == nil && enc.key != "" && same(cur, sec) {
			return nil
		}
	}
	if err := s.store(ctx, p, enc, true); err != nil {
		return fail(err)
	}
	if found && loc.class != c && loc.class.writable() {
		if err := s.deleteWithKey(ctx, loc.param); err != nil {
			return fail(fmt.Errorf("removing it from class %s: %w", loc.class, err))
		}
	}
	return nil
}

// deleteWithKey removes parameter p and its companion (split.go).
func (s *Store) deleteWithKey(ctx context.Context, p string) error {
	if err := s.delete(ctx, p); err != nil {
		return err
	}
	return s.delete(ctx, p+keyPartSuffix)
}

// delete removes parameter p; nil if missing.
func (s *Store) delete(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := s.client.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(p)})
	s.inc("DeleteParameter")
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("%s: %w", p, classify(err))
	}
	return nil
}

// Delete removes the secret from every class the Store writes (with its
// history and its key part, split.go); nil if it is missing. ca and sc
// are never deleted. One GetParameters call finds which of those
// parameters exist, so a delete costs one read and one DeleteParameter
// per parameter found, not one per class and part.
func (s *Store) Delete(ctx context.Context, namespace, name string) error {
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err) }
	if err := checkNames(namespace, name); err != nil {
		return fail(err)
	}
	var names []string
	for _, c := range s.classes {
		if !c.writable() {
			continue
		}
		p, err := s.ParameterName(c, namespace, name)
		if err != nil {
			return fail(err)
		}
		names = append(names, p, p+keyPartSuffix)
	}
	if len(names) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	out, err := s.client.GetParameters(ctx, &ssm.GetParametersInput{Names: names})
	s.inc("GetParameters")
	if err != nil {
		return fail(fmt.Errorf("%s: %w", strings.Join(names, ", "), classify(err)))
	}
	for _, p := range out.Parameters {
		if err := s.delete(ctx, aws.ToString(p.Name)); err != nil {
			return fail(err)
		}
	}
	return nil
}

// previous locates namespace/name and reads the version before the
// current one, whole (a split one's key version must still be in the
// companion's history): its raw payload and the secret.
func (s *Store) previous(ctx context.Context, namespace, name string) (loc located, raw string, sec ports.Secret, err error) {
	if err := checkNames(namespace, name); err != nil {
		return located{}, "", ports.Secret{}, err
	}
	loc, found, err := s.locate(ctx, namespace, name)
	if err != nil {
		return located{}, "", ports.Secret{}, err
	}
	if !found {
		return located{}, "", ports.Secret{}, ports.ErrNotFound
	}
	if loc.version < 2 {
		return located{}, "", ports.Secret{}, errs.Permanentf("%s: no previous version kept", loc.param)
	}
	raw, _, err = s.read(ctx, loc.param, ":"+strconv.FormatInt(loc.version-1, 10))
	if errors.Is(err, ports.ErrNotFound) {
		return located{}, "", ports.Secret{}, errs.Permanentf("%s: no previous version kept (version %d is gone from the history)", loc.param, loc.version-1)
	}
	if err != nil {
		return located{}, "", ports.Secret{}, err
	}
	if sec, err = s.resolve(ctx, loc.param, raw); err != nil {
		return located{}, "", ports.Secret{}, fmt.Errorf("version %d: %w", loc.version-1, err)
	}
	sec.Namespace, sec.Name = namespace, name
	return loc, raw, sec, nil
}

// Previous returns the version of the secret before the current one (what
// Rollback would restore). ports.ErrNotFound if the secret is missing; a
// permanent error if it has no previous version.
func (s *Store) Previous(ctx context.Context, namespace, name string) (ports.Secret, error) {
	_, _, sec, err := s.previous(ctx, namespace, name)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: previous: %w", namespace, name, err)
	}
	return sec, nil
}

// Rollback writes the version before the current one back as a new
// version (a second Rollback undoes the first, since the rolled-back
// content is then the previous version). ports.ErrNotFound if the secret
// is missing; a permanent error if it has no previous version in the
// parameter's history (a new parameter, or one whose class changed).
func (s *Store) Rollback(ctx context.Context, namespace, name string) error {
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: rollback: %w", namespace, name, err) }
	loc, prev, _, err := s.previous(ctx, namespace, name)
	if err != nil {
		return fail(err)
	}
	if !loc.class.writable() || !slices.Contains(s.classes, loc.class) {
		return fail(errs.Permanentf("class %s: this store does not write it", loc.class))
	}
	if _, err := s.write(ctx, loc.param, prev, true); err != nil {
		return fail(err)
	}
	return nil
}

// TLSPath returns the Parameter Store path /<prefix>/tls/<namespace>/<name>
// under which a certificate secret's parameters are kept (prefix
// DefaultPrefix when empty), without validating it: what the API reports
// as the secret's reference.
func TLSPath(prefix, namespace, name string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return "/" + prefix + "/" + string(ClassTLS) + "/" + namespace + "/" + name
}
