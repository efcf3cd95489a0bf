package ports

import (
	"context"
	"fmt"
	"math/big"

	"github.com/certfn/certfn/core/api"
)

// CertificateImporter copies issued key pairs into an external certificate
// manager (AWS Certificate Manager), so that services that only take
// certificates from there (load balancers, CDNs) can use them. The
// Certificate step core/certificates/acmimport.go calls it for Certificates
// annotated certfn.io/acm-import: "true"; adapters/aws/acm implements it.
type CertificateImporter interface {
	// Import makes one entry of the certificate manager hold req's key
	// pair and returns that entry's reference (an ARN):
	//   - req.Ref empty: the entry an earlier import for req.Owner left
	//     (whose reference may never have been recorded) is reused if the
	//     importer can find it, else a new entry is created;
	//   - req.Ref set: that entry is re-imported in place (its reference
	//     stays, so what uses it keeps working); if it no longer exists a
	//     new entry is created and its reference returned;
	//   - an entry that already holds the certificate with req.Serial is
	//     not imported again (Imported false).
	// An error that retrying cannot fix (the certificate or key refused,
	// a permission missing) is permanent (core/errs); others are
	// transient. The private key never appears in an error or a log.
	Import(ctx context.Context, req CertificateImport) (CertificateImported, error)
}

// CertificateImport is one request to a CertificateImporter. Its String
// and GoString methods never show the private key.
type CertificateImport struct {
	// Ref is the entry of the previous import (status.acmCertificateARN);
	// empty for the first.
	Ref string
	// Owner is the Certificate whose key pair this is; importers tag the
	// entry with it.
	Owner api.Key
	// Serial is the leaf's serial number.
	Serial *big.Int
	// Certificate is the leaf, PEM.
	Certificate []byte
	// Chain holds the certificates that follow the leaf (intermediates),
	// PEM; empty when the issuer sent none.
	Chain []byte
	// PrivateKey is the leaf's key, PEM (PKCS#1, SEC 1 or PKCS#8).
	PrivateKey []byte
}

// String describes r without its private key.
func (r CertificateImport) String() string {
	return fmt.Sprintf("import of %s (serial %x) into %q", r.Owner, r.Serial, r.Ref)
}

// GoString is String, so that %#v cannot print the key either.
func (r CertificateImport) GoString() string { return r.String() }

// CertificateImported is what Import did.
type CertificateImported struct {
	// Ref is the entry that holds the key pair now.
	Ref string
	// Imported is false when the entry already held this certificate.
	Imported bool
}
