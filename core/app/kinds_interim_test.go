package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/repo"
)

func TestNewCertificateControllerRequiresItsPorts(t *testing.T) {
	reads := repo.New(memory.NewStore(), api.IssuerScope{})
	for _, tc := range []struct {
		name string
		cfg  app.CertificateConfig
		want string
	}{
		{"secrets", app.CertificateConfig{Reads: reads}, "Secrets is required"},
		{"reads", app.CertificateConfig{Secrets: memory.NewSecrets()}, "Reads is required"},
	} {
		if _, err := app.NewCertificateController(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s missing: err = %v", tc.name, err)
		}
	}
	c, err := app.NewCertificateController(app.CertificateConfig{Secrets: memory.NewSecrets(), Reads: reads})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.Config(); cfg.WaitPoll != 10*time.Minute || cfg.ResyncInterval != 24*time.Hour || cfg.Identity.Username == "" || cfg.Keys == nil {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
}

// What Build assembles without settings: the cluster resource namespace,
// an approver (certfn's policy approver) and certfn's identity.
func TestBuildDefaults(t *testing.T) {
	w := apptest.NewPolicyRig(t).App.Wiring()
	if w.ClusterResourceNamespace != "cert-manager" || w.Approver == nil || w.Identity.Username == "" || w.Evaluator == nil {
		t.Fatalf("defaults not applied: %+v", w)
	}
}
