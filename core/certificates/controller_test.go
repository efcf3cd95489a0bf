package certificates_test

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/repo"
)

func TestNewControllerRequiresItsPorts(t *testing.T) {
	reads := repo.New(memory.NewStore(), api.IssuerScope{})
	for _, tc := range []struct {
		name string
		cfg  certificates.Config
		want string
	}{
		{"secrets", certificates.Config{Reads: reads}, "Secrets is required"},
		{"reads", certificates.Config{Secrets: memory.NewSecrets()}, "Reads is required"},
	} {
		if _, err := certificates.NewController(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s missing: err = %v", tc.name, err)
		}
	}
	c, err := certificates.NewController(certificates.Config{Secrets: memory.NewSecrets(), Reads: reads})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.Config(); cfg.WaitPoll != 10*time.Minute || cfg.ResyncInterval != 24*time.Hour || cfg.Identity.Username == "" {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
}
