// Package acm imports certfn's key pairs into AWS Certificate Manager: the
// AWS implementation of ports.CertificateImporter used by the Certificate
// step core/certificates/acmimport.go (annotation certfn.io/acm-import).
//
// A first import creates an ACM certificate tagged certfn-deployment (the
// deployment's name: the worker's IAM policy only lets it import with that
// tag and re-import certificates that carry it) and certfn-certificate
// (<namespace>/<name>); a renewal re-imports into the same ARN, so ALB
// listeners and CloudFront distributions attached to it follow. Before
// importing, DescribeCertificate tells whether ACM already holds the
// serial (nothing is sent then). When no ARN was recorded (a crash between
// the import and the status write), the earlier import is found again by
// its tags instead of creating a duplicate.
package acm

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/acm/types"
	"github.com/aws/smithy-go"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// API is the part of the ACM client the importer uses (*acm.Client
// implements it).
type API interface {
	ImportCertificate(ctx context.Context, in *awsacm.ImportCertificateInput, optFns ...func(*awsacm.Options)) (*awsacm.ImportCertificateOutput, error)
	DescribeCertificate(ctx context.Context, in *awsacm.DescribeCertificateInput, optFns ...func(*awsacm.Options)) (*awsacm.DescribeCertificateOutput, error)
	ListCertificates(ctx context.Context, in *awsacm.ListCertificatesInput, optFns ...func(*awsacm.Options)) (*awsacm.ListCertificatesOutput, error)
	ListTagsForCertificate(ctx context.Context, in *awsacm.ListTagsForCertificateInput, optFns ...func(*awsacm.Options)) (*awsacm.ListTagsForCertificateOutput, error)
}

// Tags certfn puts on the certificates it imports.
const (
	// TagDeployment holds Options.Deployment; infra/terraform/aws/iam.tf
	// conditions the worker's ACM permissions on it.
	TagDeployment = "certfn-deployment"
	// TagCertificate holds the Certificate's "<namespace>/<name>".
	TagCertificate = "certfn-certificate"
)

// DefaultMaxListPages bounds the search for an unrecorded earlier import.
const DefaultMaxListPages = 10

// Options configure an Importer.
type Options struct {
	// Deployment is the certfn-deployment tag of new imports (required).
	Deployment string
	// Tags are added to new imports (ACM cannot tag on re-import).
	Tags map[string]string
	// MaxListPages bounds ListCertificates pages read when looking for an
	// earlier import (default DefaultMaxListPages, 1000 certificates each).
	MaxListPages int
}

// Importer implements ports.CertificateImporter over ACM. Safe for
// concurrent use.
type Importer struct {
	api  API
	opts Options
}

var _ ports.CertificateImporter = (*Importer)(nil)

// New returns an Importer over api. A missing client or deployment is a
// permanent error.
func New(api API, opts Options) (*Importer, error) {
	if api == nil {
		return nil, errs.Permanentf("acm importer: no ACM client")
	}
	if strings.TrimSpace(opts.Deployment) == "" {
		return nil, errs.Permanentf("acm importer: the deployment name (tag %s) is required", TagDeployment)
	}
	if opts.MaxListPages <= 0 {
		opts.MaxListPages = DefaultMaxListPages
	}
	return &Importer{api: api, opts: opts}, nil
}

// DeploymentFromEnv returns the deployment's name for TagDeployment:
// CERTFN_DEPLOYMENT when set, else the Lambda function's name
// (AWS_LAMBDA_FUNCTION_NAME, "<name_prefix>-worker" in
// infra/terraform/aws) without its "-<role>" suffix, else fallback.
func DeploymentFromEnv(getenv func(string) string, fallback string) string {
	if v := strings.TrimSpace(getenv("CERTFN_DEPLOYMENT")); v != "" {
		return v
	}
	if fn := strings.TrimSpace(getenv("AWS_LAMBDA_FUNCTION_NAME")); fn != "" {
		if i := strings.LastIndex(fn, "-"); i > 0 {
			return fn[:i]
		}
	}
	return fallback
}

// Import implements ports.CertificateImporter (see its contract). It makes
// at most: one DescribeCertificate (when a reference is known), the
// ListCertificates/ListTagsForCertificate calls of the search (only when
// none is), and one ImportCertificate. No error it returns quotes the
// private key.
func (im *Importer) Import(ctx context.Context, req ports.CertificateImport) (ports.CertificateImported, error) {
	res, err := im.importOnce(ctx, req)
	return res, redact(err, req.PrivateKey)
}

func (im *Importer) importOnce(ctx context.Context, req ports.CertificateImport) (ports.CertificateImported, error) {
	leaf, err := parseLeaf(req.Certificate)
	if err != nil {
		return ports.CertificateImported{}, errs.Permanent(fmt.Errorf("acm import of %s: %w", req.Owner, err))
	}
	// ACM refuses a key that is not the leaf's (emulators do not): refused
	// here, before any call, for good and without the key in the error.
	if key, err := pki.DecodePrivateKeyPEM(req.PrivateKey); err != nil || !pki.PublicKeysEqual(key.Public(), leaf.PublicKey) {
		return ports.CertificateImported{}, errs.Permanent(fmt.Errorf("acm import of %s: the private key does not decode or does not match the certificate", req.Owner))
	}
	serial := req.Serial
	if serial == nil {
		serial = leaf.SerialNumber
	}
	ref := req.Ref
	if ref == "" {
		if ref, err = im.find(ctx, req, leaf); err != nil {
			return ports.CertificateImported{}, err
		}
	}
	if ref != "" {
		out, err := im.api.DescribeCertificate(ctx, &awsacm.DescribeCertificateInput{CertificateArn: aws.String(ref)})
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf):
			ref = "" // deleted in ACM: import anew
		case err != nil:
			return ports.CertificateImported{}, classify(fmt.Errorf("acm: describe %s: %w", ref, err))
		case out.Certificate != nil && SameSerial(aws.ToString(out.Certificate.Serial), serial):
			return ports.CertificateImported{Ref: ref}, nil
		}
	}
	in := &awsacm.ImportCertificateInput{Certificate: req.Certificate, PrivateKey: req.PrivateKey}
	if len(strings.TrimSpace(string(req.Chain))) > 0 {
		in.CertificateChain = req.Chain
	}
	if ref != "" {
		in.CertificateArn = aws.String(ref)
	} else {
		in.Tags = im.tags(req)
	}
	out, err := im.api.ImportCertificate(ctx, in)
	if err != nil {
		into := "a new certificate"
		if ref != "" {
			into = ref
		}
		return ports.CertificateImported{}, classify(fmt.Errorf("acm: import %s into %s: %w", req.Owner, into, err))
	}
	return ports.CertificateImported{Ref: aws.ToString(out.CertificateArn), Imported: true}, nil
}

// tags returns the tags of a new import.
func (im *Importer) tags(req ports.CertificateImport) []types.Tag {
	keys := make([]string, 0, len(im.opts.Tags))
	for k := range im.opts.Tags {
		if k != TagDeployment && k != TagCertificate {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	tags := []types.Tag{
		{Key: aws.String(TagDeployment), Value: aws.String(im.opts.Deployment)},
		{Key: aws.String(TagCertificate), Value: aws.String(ownerTag(req))},
	}
	for _, k := range keys {
		tags = append(tags, types.Tag{Key: aws.String(k), Value: aws.String(im.opts.Tags[k])})
	}
	return tags
}

// ownerTag is the TagCertificate value of req: "<namespace>/<name>".
func ownerTag(req ports.CertificateImport) string {
	if req.Owner.Namespace == "" {
		return req.Owner.Name
	}
	return req.Owner.Namespace + "/" + req.Owner.Name
}

// allKeyTypes makes ListCertificates return every key type (its default
// is RSA_2048 only).
var allKeyTypes = []types.KeyAlgorithm{
	types.KeyAlgorithmRsa1024, types.KeyAlgorithmRsa2048, types.KeyAlgorithmRsa3072, types.KeyAlgorithmRsa4096,
	types.KeyAlgorithmEcPrime256v1, types.KeyAlgorithmEcSecp384r1, types.KeyAlgorithmEcSecp521r1,
}

// find returns the ARN of an earlier import for req.Owner in this
// deployment ("" when there is none): imported certificates whose domain
// name is one of the leaf's names, whose tags say so. Tags that may not be
// read (another deployment's certificate: AccessDenied) rule a candidate
// out.
func (im *Importer) find(ctx context.Context, req ports.CertificateImport, leaf *x509.Certificate) (string, error) {
	names := map[string]bool{}
	for _, n := range append([]string{leaf.Subject.CommonName}, leaf.DNSNames...) {
		if n != "" {
			names[strings.ToLower(n)] = true
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	owner := ownerTag(req)
	var token *string
	for page := 0; page < im.opts.MaxListPages; page++ {
		out, err := im.api.ListCertificates(ctx, &awsacm.ListCertificatesInput{
			Includes: &types.Filters{KeyTypes: allKeyTypes}, MaxItems: aws.Int32(1000), NextToken: token,
		})
		if err != nil {
			return "", classify(fmt.Errorf("acm: look for an earlier import of %s: %w", req.Owner, err))
		}
		for _, s := range out.CertificateSummaryList {
			if s.Type != "" && s.Type != types.CertificateTypeImported {
				continue
			}
			if !names[strings.ToLower(aws.ToString(s.DomainName))] {
				continue
			}
			tags, err := im.api.ListTagsForCertificate(ctx, &awsacm.ListTagsForCertificateInput{CertificateArn: s.CertificateArn})
			var nf *types.ResourceNotFoundException
			if isAccessDenied(err) || errors.As(err, &nf) {
				continue
			}
			if err != nil {
				return "", classify(fmt.Errorf("acm: tags of %s: %w", aws.ToString(s.CertificateArn), err))
			}
			if tagValue(tags.Tags, TagDeployment) == im.opts.Deployment && tagValue(tags.Tags, TagCertificate) == owner {
				return aws.ToString(s.CertificateArn), nil
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		token = out.NextToken
	}
	return "", nil
}

func tagValue(tags []types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// parseLeaf parses the first certificate of a PEM bundle.
func parseLeaf(pemBytes []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("the certificate is not PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}

// SameSerial reports whether ACM's serial (colon-separated hex octets,
// "0a:1b:...") is n. A serial without colons is also read as decimal, as
// some emulators write it.
func SameSerial(acmSerial string, n *big.Int) bool {
	s := strings.TrimSpace(acmSerial)
	if s == "" || n == nil {
		return false
	}
	if v, ok := new(big.Int).SetString(strings.ReplaceAll(s, ":", ""), 16); ok && v.Cmp(n) == 0 {
		return true
	}
	if !strings.Contains(s, ":") {
		if v, ok := new(big.Int).SetString(s, 10); ok && v.Cmp(n) == 0 {
			return true
		}
	}
	return false
}

// permanentCodes are ACM errors that retrying cannot fix.
var permanentCodes = map[string]bool{
	"ValidationException":         true, // certificate, chain or key refused
	"InvalidParameterException":   true,
	"InvalidArnException":         true,
	"InvalidTagException":         true,
	"TooManyTagsException":        true,
	"TagPolicyException":          true,
	"LimitExceededException":      true, // the account's import quota
	"ResourceNotFoundException":   true,
	"AccessDeniedException":       true,
	"AccessDenied":                true,
	"UnrecognizedClientException": true,
	"InvalidSignatureException":   true,
}

// classify marks ACM errors permanent or transient (core/errs).
func classify(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && permanentCodes[ae.ErrorCode()] {
		return errs.Permanent(err)
	}
	return err
}

func isAccessDenied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "AccessDeniedException" || ae.ErrorCode() == "AccessDenied")
}

// redact replaces err by an error without its text when that text quotes
// any line of the private key's PEM body (ACM does not, but an emulator or
// a proxy could); the API error code and the class are kept.
func redact(err error, key []byte) error {
	if err == nil || len(key) == 0 {
		return err
	}
	msg := err.Error()
	leaks := strings.Contains(msg, "PRIVATE KEY")
	for _, line := range strings.Split(string(key), "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
			leaks = true
			break
		}
	}
	if !leaks {
		return err
	}
	code := "unknown"
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	if errs.IsPermanent(err) {
		return errs.Permanent(&redactedError{code: code})
	}
	return &redactedError{code: code}
}

// redactedError stands for an error whose message quoted key material.
type redactedError struct{ code string }

func (e *redactedError) Error() string {
	return "acm: " + e.code + " (message withheld: it quoted the private key)"
}
func (e *redactedError) ErrorCode() string             { return e.code }
func (e *redactedError) ErrorMessage() string          { return e.Error() }
func (e *redactedError) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }
