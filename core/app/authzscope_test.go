package app_test

import (
	"errors"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
)

const grantBobGet = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: default}
rules:
- apiGroups: [cert-manager.io]
  resources: [certificates]
  verbs: [get, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-reads, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: User, name: bob}
`

// Each service call decides against one RBAC snapshot: an apply of many
// objects lists each RBAC kind once, and a grant written after a call is
// seen by the next one.
func TestAuthorizationScope(t *testing.T) {
	r := apptest.NewRig(t)
	bob := app.Caller{Username: "bob"}
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}

	if _, err := r.Service.Get(r.Ctx, bob, key); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("bob without a grant: %v", err)
	}
	r.Store.Listed(api.KindRoleBinding)
	r.Apply(grantBobGet)
	if _, err := r.Service.Get(r.Ctx, bob, key); !errors.Is(err, app.ErrNotFound) {
		t.Fatalf("the next call does not see the grant: %v", err)
	}
	r.Store.Listed(api.KindRoleBinding)
	var objs []api.Object
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		o := apptest.MustDecode(t, apptest.CertYAML)
		o.GetObjectMeta().Name = n
		objs = append(objs, o)
	}
	if _, err := r.Service.Apply(r.Ctx, bob, objs); err != nil {
		t.Fatalf("bob applies 10 certificates: %v", err)
	}
	if n := r.Store.Listed(api.KindRoleBinding); n != 1 {
		t.Fatalf("an apply of 10 objects listed RoleBindings %d times, want 1", n)
	}
}
