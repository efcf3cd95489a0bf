package policy_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/repo"
)

func TestNewControllerRequiresTheEvaluator(t *testing.T) {
	pending := repo.New(memory.NewStore(), api.IssuerScope{})
	if _, err := policy.NewController(nil, pending); err == nil || !strings.Contains(err.Error(), "Evaluator is required") {
		t.Fatalf("evaluator missing: err = %v", err)
	}
	ev, err := policy.NewEvaluator(policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.NewController(ev, pending); err != nil {
		t.Fatal(err)
	}
}
