// Package certmanager imports certfn's key pairs into Google Cloud
// Certificate Manager as self-managed certificates: the Google Cloud
// implementation of ports.CertificateImporter (the analogue of
// adapters/aws/acm), used by the Certificate step
// core/certificates/acmimport.go (annotation certfn.io/acm-import).
//
// Each Certificate gets one Certificate Manager certificate,
//
//	projects/<project>/locations/<location>/certificates/<id>
//
// whose ID is derived from the deployment and the Certificate
// (CertificateID: "certfn-<namespace>-<name>-<hash>"), labelled
// certfn-deployment, certfn-namespace, certfn-certificate (sanitised to
// Google's label rules) and certfn-owner (an exact hash of the three). A
// renewal replaces the PEM of the same certificate (UpdateCertificate with
// the update mask "self_managed"), so certificate map entries and target
// proxies that reference it follow. Before writing, the certificate is
// read (GetCertificate): when it already holds the leaf's serial nothing
// is sent. When no resource name was recorded (a crash between the import
// and the status write), the derived ID finds the earlier import with one
// GetCertificate; a certificate labelled for the owner under another ID
// (an earlier NamePrefix) is found with ListCertificates filtered on
// certfn-owner.
//
// Certificate Manager creates and updates through long-running operations.
// A handler does not wait for them: Import polls the operation once (one
// GetOperation) and, when it is not done, returns a transient error
// wrapping ErrPending and carrying errs.RetryAfter(Options.PendingRetry).
// The next attempt needs no operation name: it reads the certificate at
// its derived name again, finds the serial there once the operation is
// done (nothing is sent then) and records the result.
//
// The resource name is what Import returns as the reference; the
// acmimport step stores it in status.acmCertificateARN (the field keeps its
// AWS name; on Google Cloud it holds this resource name).
//
// Build the client with NewClient: it turns off the client library's
// request logging, which would otherwise print the private key of a
// CreateCertificate or UpdateCertificate request when
// GOOGLE_SDK_GO_LOGGING_LEVEL=debug is set.
package certmanager

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"strings"
	"time"

	certificatemanager "cloud.google.com/go/certificatemanager/apiv1"
	cmpb "cloud.google.com/go/certificatemanager/apiv1/certificatemanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the part of the Certificate Manager client the importer uses
// (*certificatemanager.Client implements it).
type API interface {
	GetCertificate(ctx context.Context, req *cmpb.GetCertificateRequest, opts ...gax.CallOption) (*cmpb.Certificate, error)
	ListCertificates(ctx context.Context, req *cmpb.ListCertificatesRequest, opts ...gax.CallOption) *certificatemanager.CertificateIterator
	CreateCertificate(ctx context.Context, req *cmpb.CreateCertificateRequest, opts ...gax.CallOption) (*certificatemanager.CreateCertificateOperation, error)
	UpdateCertificate(ctx context.Context, req *cmpb.UpdateCertificateRequest, opts ...gax.CallOption) (*certificatemanager.UpdateCertificateOperation, error)
}

var _ API = (*certificatemanager.Client)(nil)

// NewClient returns a Certificate Manager client (gRPC, Application Default
// Credentials unless opts say otherwise) whose request logging is off
// whatever GOOGLE_SDK_GO_LOGGING_LEVEL says: a logged CreateCertificate or
// UpdateCertificate request would contain the private key.
func NewClient(ctx context.Context, opts ...option.ClientOption) (*certificatemanager.Client, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	return certificatemanager.NewClient(ctx, append(opts, option.WithLogger(quiet))...)
}

// DefaultLocation is Options.Location's default: global certificates, for
// global external Application Load Balancers (through certificate maps)
// and cross-region internal ones.
const DefaultLocation = "global"

// DefaultMaxListItems bounds the certificates read when looking for an
// earlier import under another ID.
const DefaultMaxListItems = 500

// Options configure an Importer.
type Options struct {
	// Project is the Google Cloud project that holds the certificates
	// (required).
	Project string
	// Location is "global" (DefaultLocation, when empty) or a region such
	// as "europe-west1" for regional load balancers, which only take
	// certificates of their own region.
	Location string
	// Deployment is the certfn-deployment label of new certificates and
	// part of their ID (required). Two deployments that share a project
	// never take each other's certificates.
	Deployment string
	// NamePrefix starts the IDs of new certificates (DefaultNamePrefix
	// when empty): a lower-case letter, then up to 19 lower-case letters,
	// digits or hyphens.
	NamePrefix string
	// Labels are added to new certificates (updates change only the PEM,
	// so labels edited in the console are kept). Keys starting with
	// certfn- are refused.
	Labels map[string]string
	// Scope of new certificates: DEFAULT (when unspecified); ALL_REGIONS
	// for cross-region internal Application Load Balancers (global
	// location only). Certificate Manager does not change it later.
	Scope cmpb.Certificate_Scope
	// PendingRetry is the delay suggested (errs.RetryAfter) when an
	// operation is not done yet (10 s when zero).
	PendingRetry time.Duration
	// MaxListItems bounds the search for an import under another ID
	// (DefaultMaxListItems when zero).
	MaxListItems int
}

// Importer implements ports.CertificateImporter over Certificate Manager.
// Safe for concurrent use.
type Importer struct {
	api    API
	opts   Options
	parent string // projects/<project>/locations/<location>
}

var _ ports.CertificateImporter = (*Importer)(nil)

// New returns an Importer over api (NewClient). A missing client, project
// or deployment, or an invalid location, prefix or label is a permanent
// error.
func New(api API, opts Options) (*Importer, error) {
	if api == nil {
		return nil, errs.Permanentf("certificate manager importer: no client")
	}
	opts.Project = strings.TrimSpace(opts.Project)
	if !projectRe.MatchString(opts.Project) {
		return nil, errs.Permanentf("certificate manager importer: project %q is not a Google Cloud project ID", opts.Project)
	}
	if opts.Location = strings.TrimSpace(opts.Location); opts.Location == "" {
		opts.Location = DefaultLocation
	}
	if !locationRe.MatchString(opts.Location) {
		return nil, errs.Permanentf("certificate manager importer: location %q is neither \"global\" nor a region", opts.Location)
	}
	if strings.TrimSpace(opts.Deployment) == "" || LabelValue(opts.Deployment) == "" {
		return nil, errs.Permanentf("certificate manager importer: the deployment name (label %s) is required", LabelDeployment)
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = DefaultNamePrefix
	}
	if !prefixRe.MatchString(opts.NamePrefix) {
		return nil, errs.Permanentf("certificate manager importer: name prefix %q: want a lower-case letter, then up to 19 lower-case letters, digits or hyphens", opts.NamePrefix)
	}
	if err := checkLabels(opts.Labels); err != nil {
		return nil, errs.Permanentf("certificate manager importer: %v", err)
	}
	if opts.Scope == cmpb.Certificate_ALL_REGIONS && opts.Location != DefaultLocation {
		return nil, errs.Permanentf("certificate manager importer: scope ALL_REGIONS needs location %q, not %q", DefaultLocation, opts.Location)
	}
	if opts.PendingRetry <= 0 {
		opts.PendingRetry = defaultPendingRetry
	}
	if opts.MaxListItems <= 0 {
		opts.MaxListItems = DefaultMaxListItems
	}
	return &Importer{api: api, opts: opts, parent: "projects/" + opts.Project + "/locations/" + opts.Location}, nil
}

// Name returns the resource name of the certificate the importer creates
// for owner.
func (im *Importer) Name(owner api.Key) string {
	return im.parent + "/certificates/" + CertificateID(im.opts.NamePrefix, im.opts.Deployment, owner)
}

// Import implements ports.CertificateImporter (see its contract). It makes
// at most: one GetCertificate of the recorded name, one of the derived
// name and a filtered ListCertificates (only for what the previous ones
// did not find), one CreateCertificate or UpdateCertificate, and one
// GetOperation. No error it returns quotes the private key.
func (im *Importer) Import(ctx context.Context, req ports.CertificateImport) (ports.CertificateImported, error) {
	res, err := im.importOnce(ctx, req)
	return res, redact(err, req.PrivateKey)
}

func (im *Importer) importOnce(ctx context.Context, req ports.CertificateImport) (ports.CertificateImported, error) {
	leaf, err := parseLeaf(req.Certificate)
	if err != nil {
		return ports.CertificateImported{}, errs.Permanent(fmt.Errorf("certificate manager import of %s: %w", req.Owner, err))
	}
	if len(bytes.TrimSpace(req.PrivateKey)) == 0 {
		return ports.CertificateImported{}, errs.Permanentf("certificate manager import of %s: no private key", req.Owner)
	}
	serial := req.Serial
	if serial == nil {
		serial = leaf.SerialNumber
	}
	name, cur, err := im.find(ctx, req)
	if err != nil {
		return ports.CertificateImported{}, err
	}
	if cur == nil {
		return im.create(ctx, req, serial)
	}
	if holds(cur, serial) {
		return ports.CertificateImported{Ref: name}, nil
	}
	return im.update(ctx, req, name)
}

// find returns the certificate that holds (or held) req.Owner's key pair
// and the name to use for it, or a nil certificate when there is none:
//  1. req.Ref, when it names a certificate of this project and location
//     (another location, after Options.Location changed, or an ACM ARN
//     copied from another deployment is not ours to update);
//  2. the derived name (Name);
//  3. a certificate labelled certfn-owner for the owner under another ID.
//
// A certificate at 1 or 2 that is not labelled for the owner is a
// permanent error: certfn does not overwrite what it did not create.
func (im *Importer) find(ctx context.Context, req ports.CertificateImport) (string, *cmpb.Certificate, error) {
	owner := OwnerHash(im.opts.Deployment, req.Owner)
	derived := im.Name(req.Owner)
	names := []string{derived}
	if im.ours(req.Ref) && req.Ref != derived {
		names = []string{req.Ref, derived}
	}
	for _, name := range names {
		c, err := im.get(ctx, name)
		if err != nil {
			return "", nil, err
		}
		if c == nil {
			continue
		}
		if err := im.check(c, name, req.Owner, owner); err != nil {
			return "", nil, err
		}
		return name, c, nil
	}
	c, err := im.search(ctx, req, owner)
	if err != nil || c == nil {
		return "", nil, err
	}
	return c.GetName(), c, nil
}

// ours reports whether ref names a certificate in the importer's project
// (as its ID or its number) and location.
func (im *Importer) ours(ref string) bool {
	project, location, _, ok := parseName(ref)
	if !ok || location != im.opts.Location {
		return false
	}
	return project == im.opts.Project || strings.Trim(project, "0123456789") == ""
}

// get reads name; a certificate that does not exist is (nil, nil).
func (im *Importer) get(ctx context.Context, name string) (*cmpb.Certificate, error) {
	c, err := im.api.GetCertificate(ctx, &cmpb.GetCertificateRequest{Name: name})
	switch {
	case status.Code(err) == codes.NotFound:
		return nil, nil
	case err != nil:
		return nil, classify(fmt.Errorf("certificate manager: get %s: %w", name, err))
	}
	return c, nil
}

// check refuses a certificate that is not certfn's import for the owner.
func (im *Importer) check(c *cmpb.Certificate, name string, owner api.Key, hash string) error {
	if c.GetManaged() != nil {
		return errs.Permanentf("certificate manager: %s is a Google-managed certificate, not the import of %s: certfn does not replace it", name, owner)
	}
	if got := c.GetLabels()[LabelOwner]; got != hash {
		return errs.Permanentf("certificate manager: %s is not certfn's import of %s in deployment %q (label %s is %q, want %q): certfn does not overwrite it; delete or rename it",
			name, owner, im.opts.Deployment, LabelOwner, got, hash)
	}
	return nil
}

// search lists the certificates labelled for the owner (at most
// MaxListItems) and returns the first self-managed one. The search is
// best effort: the derived name, already read, is the import's identity,
// and this search only recovers certificates made under another
// NamePrefix. So a filter the service refuses (InvalidArgument) or a
// missing certificatemanager.certs.list permission (PermissionDenied) ends
// it with nothing found; a missing create permission is reported by the
// create that follows.
func (im *Importer) search(ctx context.Context, req ports.CertificateImport, hash string) (*cmpb.Certificate, error) {
	it := im.api.ListCertificates(ctx, &cmpb.ListCertificatesRequest{
		Parent: im.parent, Filter: fmt.Sprintf("labels.%s=%q", LabelOwner, hash), PageSize: 100,
	})
	for n := 0; n < im.opts.MaxListItems; n++ {
		c, err := it.Next()
		switch {
		case errors.Is(err, iterator.Done):
			return nil, nil
		case status.Code(err) == codes.InvalidArgument, status.Code(err) == codes.PermissionDenied:
			return nil, nil
		case err != nil:
			return nil, classify(fmt.Errorf("certificate manager: look for an earlier import of %s: %w", req.Owner, err))
		}
		if c.GetLabels()[LabelOwner] == hash && c.GetManaged() == nil && im.ours(c.GetName()) {
			return c, nil
		}
	}
	return nil, nil
}

// create creates the certificate at the derived name. When that name is
// taken (a concurrent import, or a create whose operation is still
// running), the certificate there is read and updated instead.
func (im *Importer) create(ctx context.Context, req ports.CertificateImport, serial *big.Int) (ports.CertificateImported, error) {
	id := CertificateID(im.opts.NamePrefix, im.opts.Deployment, req.Owner)
	name := im.parent + "/certificates/" + id
	op, err := im.api.CreateCertificate(ctx, &cmpb.CreateCertificateRequest{
		Parent: im.parent, CertificateId: id,
		Certificate: &cmpb.Certificate{
			Description: fmt.Sprintf("Imported by certfn (deployment %s) for Certificate %s; renewals replace it in place.", im.opts.Deployment, req.Owner),
			Labels:      im.labels(req.Owner),
			Scope:       im.opts.Scope,
			Type:        &cmpb.Certificate_SelfManaged{SelfManaged: selfManaged(req)},
		},
	})
	if status.Code(err) == codes.AlreadyExists {
		c, gerr := im.get(ctx, name)
		switch {
		case gerr != nil:
			return ports.CertificateImported{}, gerr
		case c == nil: // taken, not readable yet: its create is running
			return ports.CertificateImported{}, errs.RetryAfter(fmt.Errorf("certificate manager: create of %s: %w (the name is taken by a create whose operation is not done yet)",
				name, ErrPending), im.opts.PendingRetry)
		}
		if err := im.check(c, name, req.Owner, OwnerHash(im.opts.Deployment, req.Owner)); err != nil {
			return ports.CertificateImported{}, err
		}
		if holds(c, serial) {
			return ports.CertificateImported{Ref: name}, nil
		}
		return im.update(ctx, req, name)
	}
	if err != nil {
		return ports.CertificateImported{}, classify(fmt.Errorf("certificate manager: create %s for %s: %w", name, req.Owner, err))
	}
	if _, err := op.Poll(ctx); err != nil || !op.Done() {
		return ports.CertificateImported{}, im.settle(err, op.Done(), "create", name, op.Name())
	}
	return ports.CertificateImported{Ref: name, Imported: true}, nil
}

// update replaces the PEM certificate and key of name.
func (im *Importer) update(ctx context.Context, req ports.CertificateImport, name string) (ports.CertificateImported, error) {
	op, err := im.api.UpdateCertificate(ctx, &cmpb.UpdateCertificateRequest{
		Certificate: &cmpb.Certificate{Name: name, Type: &cmpb.Certificate_SelfManaged{SelfManaged: selfManaged(req)}},
		UpdateMask:  &fieldmaskpb.FieldMask{Paths: []string{"self_managed"}},
	})
	if status.Code(err) == codes.NotFound { // deleted since it was read
		return ports.CertificateImported{}, fmt.Errorf("certificate manager: update %s for %s: deleted meanwhile: %w", name, req.Owner, err)
	}
	if err != nil {
		return ports.CertificateImported{}, classify(fmt.Errorf("certificate manager: update %s for %s: %w", name, req.Owner, err))
	}
	if _, err := op.Poll(ctx); err != nil || !op.Done() {
		return ports.CertificateImported{}, im.settle(err, op.Done(), "update", name, op.Name())
	}
	return ports.CertificateImported{Ref: name, Imported: true}, nil
}

// settle turns the result of one Poll into Import's error: the operation
// failed (done, with err: classified), could not be polled (transient) or
// is still running (ErrPending).
func (im *Importer) settle(err error, done bool, what, name, op string) error {
	switch {
	case err != nil && done:
		return classify(fmt.Errorf("certificate manager: %s of %s failed (operation %s): %w", what, name, op, err))
	case err != nil:
		return errs.RetryAfter(fmt.Errorf("certificate manager: %s of %s: %w; polling operation %s: %v", what, name, ErrPending, op, err), im.opts.PendingRetry)
	}
	return im.pending(what, name, op)
}

// labels returns the labels of a new certificate.
func (im *Importer) labels(owner api.Key) map[string]string {
	l := map[string]string{
		LabelDeployment:  LabelValue(im.opts.Deployment),
		LabelNamespace:   LabelValue(owner.Namespace),
		LabelCertificate: LabelValue(owner.Name),
		LabelOwner:       OwnerHash(im.opts.Deployment, owner),
	}
	for k, v := range im.opts.Labels {
		l[k] = v
	}
	return l
}

// selfManaged is the certificate data of req: the leaf then the chain, and
// the key.
func selfManaged(req ports.CertificateImport) *cmpb.Certificate_SelfManagedCertificate {
	chain := string(bytes.TrimSpace(req.Certificate)) + "\n"
	if c := bytes.TrimSpace(req.Chain); len(c) > 0 {
		chain += string(c) + "\n"
	}
	return &cmpb.Certificate_SelfManagedCertificate{PemCertificate: chain, PemPrivateKey: string(req.PrivateKey)}
}

// holds reports whether c's leaf (the first certificate of its
// pem_certificate) has serial.
func holds(c *cmpb.Certificate, serial *big.Int) bool {
	leaf, err := parseLeaf([]byte(c.GetPemCertificate()))
	return err == nil && leaf.SerialNumber.Cmp(serial) == 0
}

// parseLeaf parses the first certificate of a PEM bundle.
func parseLeaf(pemBytes []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("the certificate is not PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}
