package localmode

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/app"
)

// Open hands the quotas to app.Build: the engine counts issuances and
// a negative quota is refused naming the setting.
func TestOpenQuotas(t *testing.T) {
	rt, err := Open(Options{DataDir: t.TempDir(), Quotas: app.Quotas{ObjectsPerNamespace: 10, IssuancesPerHourPerNamespace: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if n := rt.App.Wiring().IssuancesPerHourPerNamespace; n != 3 {
		t.Fatalf("engine issuance quota %d, want 3", n)
	}
	if _, err := Open(Options{DataDir: t.TempDir(), Quotas: app.Quotas{ObjectsPerNamespace: -1}}); err == nil ||
		!strings.Contains(err.Error(), "ObjectsPerNamespace is -1") {
		t.Fatalf("negative quota: %v", err)
	}
}
