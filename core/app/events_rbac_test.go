package app_test

import (
	"errors"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
)

// tenantRBAC lets tina get and list Certificates and list Events in
// team-a only.
const tenantRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: team-a}
rules:
- {apiGroups: [cert-manager.io], resources: [certificates], verbs: [get, list]}
- {apiGroups: [""], resources: [events], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tina-reads, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: User, name: tina}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cert-getter, namespace: team-b}
rules:
- {apiGroups: [cert-manager.io], resources: [certificates], verbs: [get], resourceNames: [web]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tina-gets-web, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cert-getter}
subjects: [{kind: User, name: tina}]
`

// A tenant sees the Events of the namespaces RBAC lets it list, and,
// elsewhere, only those of an object it may get, pinned by the field
// selector as kubectl describe sends it; everything else is the same 403
// whether the object exists or not. Selectors on Event fields select.
func TestEventsListedAsRBACAllows(t *testing.T) {
	r := apptest.NewRig(t)
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		r.Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n")
		r.Apply("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: ss, namespace: " + ns + "}\nspec: {selfSigned: {}}\n")
		for _, name := range []string{"web", "api"} {
			r.Apply("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {secretName: " + name +
				"-tls, dnsNames: [" + name + ".example.com], issuerRef: {name: ss}}\n")
		}
	}
	r.Apply(tenantRBAC)
	r.Drain()
	tina := app.Caller{Username: "tina", Groups: []string{"system:authenticated"}}
	pin := func(ns, name string) app.ListOptions {
		return app.ListOptions{FieldSelector: "involvedObject.kind=Certificate,involvedObject.name=" + name + ",involvedObject.namespace=" + ns}
	}
	for _, tc := range []struct {
		name      string
		namespace string
		opts      app.ListOptions
		forbidden bool
		want      func(e *api.Event) bool // every Event listed satisfies it
		min       int
	}{
		{"her namespace", "team-a", app.ListOptions{}, false, func(e *api.Event) bool { return e.Namespace == "team-a" }, 4},
		{"her namespace, one type", "team-a", app.ListOptions{FieldSelector: "type=Normal,involvedObject.kind!=Issuer"}, false,
			func(e *api.Event) bool {
				return e.Type == api.EventTypeNormal && e.InvolvedObject.Kind != api.KindIssuer
			}, 8},
		{"her namespace, one reason", "team-a", app.ListOptions{FieldSelector: "reason=Issued,involvedObject.name=api"}, false,
			func(e *api.Event) bool { return e.Reason == "Issued" && e.InvolvedObject.Name == "api" }, 1},
		{"every namespace", "", app.ListOptions{}, true, nil, 0},
		{"another namespace", "team-b", app.ListOptions{}, true, nil, 0},
		{"another namespace, an object she may get", "team-b", pin("team-b", "web"), false,
			func(e *api.Event) bool {
				return e.InvolvedObject.Namespace == "team-b" && e.InvolvedObject.Name == "web"
			}, 4},
		{"another namespace, an object she may not get", "team-b", pin("team-b", "api"), true, nil, 0},
		{"another namespace, an object that does not exist", "team-b", pin("team-b", "nope"), true, nil, 0},
		{"a namespace she has nothing in", "team-c", pin("team-c", "web"), true, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := r.Service.List(r.Ctx, tina, api.KindEvent, tc.namespace, tc.opts)
			if tc.forbidden {
				if !errors.Is(err, app.ErrForbidden) {
					t.Fatalf("err = %v (%d objects), want forbidden", err, len(objs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) < tc.min {
				t.Fatalf("%d Events, want at least %d", len(objs), tc.min)
			}
			for _, o := range objs {
				if e := o.(*api.Event); !tc.want(e) {
					t.Errorf("listed %s: %s %s on %s/%s", e.Name, e.Type, e.Reason, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
				}
			}
			// ListPage (the API's paged listing) decides the same.
			page, _, err := r.Service.ListPage(r.Ctx, tina, api.KindEvent, tc.namespace, tc.opts, 0, "")
			if err != nil || len(page) != len(objs) {
				t.Fatalf("ListPage: %d objects, %v; List: %d", len(page), err, len(objs))
			}
		})
	}
}
