package acm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/acm/types"

	"github.com/certfn/certfn/core/ports/porttest"
)

// The ports.CertificateImporter contract, on the double, moto and an
// external endpoint when one is given (forEachBackend).
func TestImporterContract(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		porttest.ImporterSuite(t, func(t *testing.T) porttest.ImporterHarness {
			im := newImporter(t, b, fmt.Sprintf("porttest-%d", uniq.Add(1)))
			return porttest.ImporterHarness{Importer: im, Now: time.Now(),
				Held: func(t *testing.T, ref string) (string, bool) {
					out, err := b.client.GetCertificate(context.Background(), &awsacm.GetCertificateInput{CertificateArn: aws.String(ref)})
					var nf *types.ResourceNotFoundException
					if errors.As(err, &nf) {
						return "", false
					}
					if err != nil {
						t.Fatalf("GetCertificate %s: %v", ref, err)
					}
					return strings.TrimSpace(aws.ToString(out.Certificate)), true
				},
				Delete: func(t *testing.T, ref string) {
					if b.fake != nil {
						b.fake.Delete(ref)
						return
					}
					if _, err := b.client.DeleteCertificate(context.Background(), &awsacm.DeleteCertificateInput{CertificateArn: aws.String(ref)}); err != nil {
						t.Fatalf("DeleteCertificate %s: %v", ref, err)
					}
				}}
		})
	})
}
