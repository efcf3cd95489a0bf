package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/ports"
)

// cloudflareSecret is the credentials Secret of cert-manager's Cloudflare
// documentation (docs/configuration/acme/dns01/cloudflare), as people copy it.
const cloudflareSecret = `apiVersion: v1
kind: Secret
metadata:
  name: cloudflare-api-token-secret
  namespace: cert-manager
type: Opaque
stringData:
  api-token: s3cr3t-token
`

// A Secret manifest is applied into the secret store (never the state
// store), re-applying it unchanged writes nothing, a change replaces it
// whole, delete removes it, and nobody reads it back through the service.
func TestApplySecretManifest(t *testing.T) {
	r := apptest.NewRig(t)
	key := api.Key{Kind: api.KindSecret, Namespace: "cert-manager", Name: "cloudflare-api-token-secret"}
	res := r.Apply(cloudflareSecret)
	if !res.Created || !res.Changed || res.Key != key {
		t.Fatalf("result %+v", res)
	}
	sec, err := r.Secrets.Get(r.Ctx, "cert-manager", "cloudflare-api-token-secret")
	if err != nil || string(sec.Data["api-token"]) != "s3cr3t-token" || len(sec.Data) != 1 {
		t.Fatalf("stored %v, %v", sec.Data, err)
	}
	if _, err := r.Store.Get(r.Ctx, key); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("the state store holds the secret: %v", err)
	}
	if res := r.Apply(cloudflareSecret); res.Created || res.Changed {
		t.Fatalf("unchanged re-apply: %+v", res)
	}
	// data (base64) and stringData merge, stringData winning; the type is kept.
	res = r.Apply(`apiVersion: v1
kind: Secret
metadata: {name: cloudflare-api-token-secret, namespace: cert-manager, labels: {team: a}}
type: kubernetes.io/tls
data: {tls.crt: ` + apptest.B64([]byte("crt")) + `, tls.key: ` + apptest.B64([]byte("old")) + `}
stringData: {tls.key: new}
`)
	if res.Created || !res.Changed {
		t.Fatalf("update result %+v", res)
	}
	sec, _ = r.Secrets.Get(r.Ctx, "cert-manager", "cloudflare-api-token-secret")
	if string(sec.Data["tls.key"]) != "new" || string(sec.Data["tls.crt"]) != "crt" || sec.Data["api-token"] != nil ||
		sec.Labels["team"] != "a" || sec.Annotations[app.SecretTypeAnnotation] != api.SecretTypeTLS {
		t.Fatalf("after update: keys %v labels %v annotations %v", api.SortedSecretKeys(sec.Data), sec.Labels, sec.Annotations)
	}

	if _, err := r.Service.Get(r.Ctx, apptest.Caller, key); !errors.Is(err, app.ErrBadRequest) || strings.Contains(err.Error(), "new") {
		t.Fatalf("get: %v", err)
	}
	if _, err := r.Service.List(r.Ctx, apptest.Caller, api.KindSecret, "cert-manager", app.ListOptions{}); !errors.Is(err, app.ErrBadRequest) {
		t.Fatalf("list: %v", err)
	}
	if err := r.Service.Delete(r.Ctx, apptest.Caller, key, app.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Secrets.Get(r.Ctx, "cert-manager", "cloudflare-api-token-secret"); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := r.Service.Delete(r.Ctx, apptest.Caller, key, app.DeleteOptions{}); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("delete of a missing secret: %v", err)
	}
}

// Invalid Secret manifests are refused naming the field and the rule,
// never a value, and nothing of the batch is stored.
func TestApplySecretInvalid(t *testing.T) {
	big := strings.Repeat("x", api.MaxSecretDataBytes+1)
	for _, tc := range []struct {
		name, body, field, rule string
	}{
		{"bad key", "stringData: {\"a/b\": topsecret}", "stringData", `key "a/b"`},
		{"dot key", "stringData: {\"..\": topsecret}", "stringData", "not allowed"},
		{"too large", "stringData: {k: " + big + "}", "data", "at most 65536"},
		{"immutable", "immutable: true\nstringData: {k: topsecret}", "immutable", "not supported"},
		{"summary", "summary: {keys: [k]}\nstringData: {k: topsecret}", "summary", "set by certfn when it lists secrets"},
		{"tls without key", "type: kubernetes.io/tls\nstringData: {tls.crt: topsecret}", "data", `requires the key "tls.key"`},
		{"bad name", "stringData: {k: topsecret}", "metadata.name", "" /* set below */},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			name := "ok"
			if tc.field == "metadata.name" {
				name = "Not_Valid"
			}
			objs := mustDecodeAll(t, apptest.SelfSignedYAML+"---\napiVersion: v1\nkind: Secret\nmetadata: {name: "+name+", namespace: team}\n"+tc.body+"\n")
			_, err := r.Service.Apply(r.Ctx, apptest.Caller, objs)
			var verr *app.ValidationError
			if !errors.As(err, &verr) || len(verr.Details) != 1 || verr.Details[0].Field != tc.field {
				t.Fatalf("err %v (details %+v), want a validation error on %s", err, verr, tc.field)
			}
			if !strings.Contains(err.Error(), tc.rule) || strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), big[:100]) {
				t.Fatalf("err %q: want the rule %q and no value", err, tc.rule)
			}
			if _, err := r.Secrets.Get(r.Ctx, "team", name); !errors.Is(err, ports.ErrNotFound) {
				t.Fatalf("secret stored: %v", err)
			}
			if _, err := r.Store.Get(r.Ctx, api.Key{Kind: api.KindClusterIssuer, Name: "selfsigned"}); !errors.Is(err, ports.ErrNotFound) {
				t.Fatalf("the rest of the batch was stored: %v", err)
			}
		})
	}
}

// Who may write a secret is decided by the bindings; a role whose service
// has no secret store (the cloud APIs) refuses Secret manifests with what
// to do instead.
func TestApplySecretAuthorization(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: dns-creds, namespace: cert-manager}
rules: [{apiGroups: [""], resources: [secrets], verbs: [create, update]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dns-creds, namespace: cert-manager}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: dns-creds}
subjects: [{kind: User, name: bob}]
`)
	bob := app.Caller{Username: "bob", Groups: []string{"system:authenticated"}}
	if _, err := r.Service.Apply(r.Ctx, bob, mustDecodeAll(t, cloudflareSecret)); err != nil {
		t.Fatalf("bob with create on secrets: %v", err)
	}
	other := strings.Replace(cloudflareSecret, "namespace: cert-manager", "namespace: team", 1)
	if _, err := r.Service.Apply(r.Ctx, bob, mustDecodeAll(t, other)); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("bob in another namespace: %v", err)
	}
	if err := r.Service.Delete(r.Ctx, bob, api.Key{Kind: api.KindSecret, Namespace: "cert-manager", Name: "cloudflare-api-token-secret"}, app.DeleteOptions{}); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("bob without delete: %v", err)
	}

	a, err := app.Build(app.Ports{Store: r.Store, Queue: r.Queue, Clock: r.Clock}, app.Settings{}, app.API)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Service.Apply(r.Ctx, apptest.Caller, mustDecodeAll(t, cloudflareSecret))
	if !errors.Is(err, app.ErrForbidden) || !strings.Contains(err.Error(), "no access to the secret store") {
		t.Fatalf("api role: %v", err)
	}
}

func mustDecodeAll(t *testing.T, manifest string) []api.Object {
	t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
