package engine_test

import (
	"errors"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/engine"
)

const grantBobGet = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: default}
rules:
- apiGroups: [cert-manager.io]
  resources: [certificates]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-reads, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: User, name: bob}
`

// Within an authorization scope the RBAC snapshot is built once: many
// checks cost one List per RBAC kind, and a grant written after the first
// check is not seen until the next scope. Outside a scope every check
// lists anew.
func TestAuthorizationScope(t *testing.T) {
	r := newRig(t)
	bob := engine.Caller{Username: "bob"}
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}

	ctx := engine.WithAuthorizationScope(r.ctx)
	if engine.WithAuthorizationScope(ctx) != ctx {
		t.Fatal("a scoped context was wrapped again")
	}
	for range 10 {
		if err := r.eng.Authorize(ctx, bob, "get", key); !errors.Is(err, engine.ErrForbidden) {
			t.Fatalf("bob without a grant: %v", err)
		}
	}
	if n := r.store.listed(api.KindRoleBinding); n != 1 {
		t.Fatalf("10 checks in one scope listed RoleBindings %d times, want 1", n)
	}
	r.apply(grantBobGet)
	if err := r.eng.Authorize(ctx, bob, "get", key); !errors.Is(err, engine.ErrForbidden) {
		t.Fatalf("a grant written during the scope was used: %v", err)
	}
	if err := r.eng.Authorize(engine.WithAuthorizationScope(r.ctx), bob, "get", key); err != nil {
		t.Fatalf("a new scope does not see the grant: %v", err)
	}
	r.store.listed(api.KindRoleBinding)
	for range 3 {
		if err := r.eng.Authorize(r.ctx, bob, "get", key); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.store.listed(api.KindRoleBinding); n != 3 {
		t.Fatalf("3 checks without a scope listed RoleBindings %d times, want 3", n)
	}
}
