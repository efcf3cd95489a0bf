package awsmode_test

import (
	"testing"

	"github.com/certfn/certfn/core/metrics"
	"github.com/certfn/certfn/internal/awsmode"
)

// Every metric sent to CloudWatch is one certfn emits on AWS (a row of
// core/metrics.Catalog): a renamed metric cannot leave the export, and the
// Terraform alarm on it, silently empty.
func TestExportedMetricsAreInTheCatalog(t *testing.T) {
	for name := range awsmode.ExportedMetrics {
		d, ok := metrics.Lookup(name)
		if !ok || (d.Where != metrics.All && d.Where != metrics.AWS && d.Where != metrics.Cloud) {
			t.Errorf("ExportedMetrics[%s]: catalog row %+v (found %t), want one emitted on AWS", name, d, ok)
		}
	}
}
