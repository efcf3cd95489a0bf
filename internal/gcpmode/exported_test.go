package gcpmode

import (
	"testing"

	"github.com/certfn/certfn/core/metrics"
)

// Every metric written as a log line is one certfn emits on Google Cloud
// (a row of core/metrics.Catalog): a renamed metric cannot leave the
// log-based metric, and the alert on it, silently empty.
func TestExportedMetricsAreInTheCatalog(t *testing.T) {
	for name := range ExportedMetrics {
		d, ok := metrics.Lookup(name)
		if !ok || (d.Where != metrics.All && d.Where != metrics.GCP && d.Where != metrics.Cloud) {
			t.Errorf("ExportedMetrics[%s]: catalog row %+v (found %t), want one emitted on Google Cloud", name, d, ok)
		}
	}
}
