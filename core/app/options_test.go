package app_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/ports"
)

// labelledCert is a Certificate manifest in default with labels.
func labelledCert(name, labels string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default, labels: {%s}}
spec: {secretName: %s-tls, dnsNames: [%s.example.com], issuerRef: {name: selfsigned}}
`, name, labels, name, name)
}

func selectorRig(t *testing.T) *apptest.Rig {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML)
	for _, c := range [][2]string{{"web", "app: web, tier: frontend, rank: '3'"}, {"db", "app: db, tier: backend, rank: '7'"}, {"bare", ""}} {
		r.Apply(labelledCert(c[0], c[1]))
	}
	return r
}

func names(objs []api.Object) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetObjectMeta().Name)
	}
	slices.Sort(out)
	return out
}

// List and ListPage select with Kubernetes' label and field selectors;
// a selector they cannot honour is refused, naming it, never ignored.
func TestListSelectors(t *testing.T) {
	r := selectorRig(t)
	for _, tc := range []struct {
		labels, fields string
		want           []string
		err            string // the FieldError's field
	}{
		{"", "", []string{"bare", "db", "web"}, ""},
		{"app=does-not-exist", "", []string{}, ""},
		{"app=web", "", []string{"web"}, ""},
		{"app!=web", "", []string{"bare", "db"}, ""},
		{"!app", "", []string{"bare"}, ""},
		{"tier in (backend, frontend), app notin (web)", "", []string{"db"}, ""},
		{"rank>5", "", []string{"db"}, ""},
		{"rank<5", "", []string{"web"}, ""},
		{"", "metadata.name=web", []string{"web"}, ""},
		{"", "metadata.name==web", []string{"web"}, ""},
		{"", "metadata.name!=web", []string{"bare", "db"}, ""},
		{"", "metadata.namespace=default,metadata.name!=bare", []string{"db", "web"}, ""},
		{"", "metadata.namespace!=default", []string{}, ""},
		{"app", "metadata.name!=db", []string{"web"}, ""},
		{"app in web", "", nil, "labelSelector"},
		{"a b", "", nil, "labelSelector"},
		{"", "spec.secretName=web-tls", nil, "fieldSelector"},
		{"", "status.conditions=x", nil, "fieldSelector"},
		{"", "metadata.name", nil, "fieldSelector"},
	} {
		t.Run(tc.labels+"|"+tc.fields, func(t *testing.T) {
			opts := app.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields}
			got, err := r.Service.List(r.Ctx, apptest.Caller, api.KindCertificate, "default", opts)
			var page []api.Object
			for cont, i := "", 0; err == nil; i++ {
				var objs []api.Object
				objs, cont, err = r.Service.ListPage(r.Ctx, apptest.Caller, api.KindCertificate, "default", opts, 1, cont)
				page = append(page, objs...)
				if cont == "" || i > 10 {
					break
				}
			}
			if tc.err != "" {
				var fe *app.FieldError
				if !errors.As(err, &fe) || fe.Field != tc.err || !errors.Is(err, app.ErrBadRequest) {
					t.Fatalf("err %v, want a bad request naming %s", err, tc.err)
				}
				if tc.err == "fieldSelector" && strings.Contains(tc.fields, "=") && !strings.Contains(err.Error(), "field label not supported") {
					t.Fatalf("err %v, want field label not supported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := names(got); !slices.Equal(n, tc.want) {
				t.Errorf("List: %v, want %v", n, tc.want)
			}
			if n := names(page); !slices.Equal(n, tc.want) {
				t.Errorf("ListPage by 1: %v, want %v", n, tc.want)
			}
		})
	}
}

// A dry-run delete makes every check and deletes nothing; preconditions
// that the stored object does not meet are a conflict and delete nothing.
func TestDeleteOptions(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		opts    func(uid, rv string) app.DeleteOptions
		deleted bool
		err     error
	}{
		{"dry run", func(string, string) app.DeleteOptions { return app.DeleteOptions{DryRun: true} }, false, nil},
		{"dry run with a stale resourceVersion", func(_, rv string) app.DeleteOptions {
			return app.DeleteOptions{DryRun: true, Preconditions: app.Preconditions{ResourceVersion: str(rv + "0")}}
		}, false, app.ErrConflict},
		{"stale resourceVersion", func(_, rv string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{ResourceVersion: str(rv + "0")}}
		}, false, app.ErrConflict},
		{"another uid", func(string, string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{UID: str("another")}}
		}, false, app.ErrConflict},
		{"empty uid", func(string, string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{UID: str("")}}
		}, false, app.ErrConflict},
		{"matching preconditions", func(uid, rv string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{UID: &uid, ResourceVersion: &rv}}
		}, true, nil},
		{"none", func(string, string) app.DeleteOptions { return app.DeleteOptions{} }, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := selectorRig(t)
			key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
			m := r.Get(key).GetObjectMeta()
			err := r.Service.Delete(r.Ctx, apptest.Caller, key, tc.opts(m.UID, m.ResourceVersion))
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("Delete: %v, want %v", err, tc.err)
			}
			_, gerr := r.Store.Store.Get(r.Ctx, key)
			if deleted := errors.Is(gerr, ports.ErrNotFound); deleted != tc.deleted {
				t.Fatalf("deleted %t, want %t (%v)", deleted, tc.deleted, gerr)
			}
		})
	}
	t.Run("dry run of a missing object", func(t *testing.T) {
		r := selectorRig(t)
		err := r.Service.Delete(r.Ctx, apptest.Caller, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "missing"}, app.DeleteOptions{DryRun: true})
		if !errors.Is(err, app.ErrNotFound) {
			t.Fatalf("Delete: %v, want not found", err)
		}
	})
}

// A write between Delete's check of a uid precondition and its delete
// (a controller's status update) is not the caller's conflict: the
// object is checked again and deleted. A resourceVersion precondition the
// write made stale is a conflict, and an object that never stays still
// is a conflict after a bounded number of checks.
func TestDeleteRacesAWriter(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		writes  int // writes after a Get, one per Get
		opts    func(uid, rv string) app.DeleteOptions
		deleted bool
		errHas  string
	}{
		{"uid, one write", 1, func(uid, _ string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{UID: &uid}}
		}, true, ""},
		{"uid, three writes", 3, func(uid, _ string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{UID: &uid}}
		}, true, ""},
		{"resourceVersion, one write", 1, func(_, rv string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{ResourceVersion: str(rv)}}
		}, false, "preconditions.resourceVersion"},
		{"uid, a write after every read", 1000, func(uid, _ string) app.DeleteOptions {
			return app.DeleteOptions{Preconditions: app.Preconditions{UID: &uid}}
		}, false, "conflict"},
		{"no preconditions, a write after every read", 1000, func(string, string) app.DeleteOptions { return app.DeleteOptions{} }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := selectorRig(t)
			key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
			m := r.Get(key).GetObjectMeta()
			writes := 0
			r.Store.SetAfterGet(func(k api.Key) {
				if k != key || writes >= tc.writes {
					return
				}
				writes++
				rec, err := r.Store.Store.Get(r.Ctx, k)
				if err != nil {
					t.Errorf("writer: %v", err)
					return
				}
				if _, err := r.Store.Store.Update(r.Ctx, rec); err != nil {
					t.Errorf("writer: %v", err)
				}
			})
			err := r.Service.Delete(r.Ctx, apptest.Caller, key, tc.opts(m.UID, m.ResourceVersion))
			r.Store.SetAfterGet(nil)
			if tc.errHas == "" && err != nil || tc.errHas != "" && (!errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), tc.errHas)) {
				t.Fatalf("Delete: %v, want a conflict containing %q", err, tc.errHas)
			}
			_, gerr := r.Store.Store.Get(r.Ctx, key)
			if deleted := errors.Is(gerr, ports.ErrNotFound); deleted != tc.deleted {
				t.Fatalf("deleted %t, want %t (%v)", deleted, tc.deleted, gerr)
			}
		})
	}
}

// A manifest's metadata.resourceVersion is a precondition of apply (and
// of its dry run): only that version of the stored object is updated.
func TestApplyResourceVersion(t *testing.T) {
	r := selectorRig(t)
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	rv := r.Get(key).GetObjectMeta().ResourceVersion
	versioned := func(name, rv, dnsName string) []api.Object {
		return []api.Object{apptest.MustDecode(t, fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default, resourceVersion: %q}
spec: {secretName: %s-tls, dnsNames: [%s], issuerRef: {name: selfsigned}}
`, name, rv, name, dnsName))}
	}
	for _, tc := range []struct {
		name string
		objs []api.Object
	}{
		{"stale", versioned("web", rv+"0", "changed.example.com")},
		{"missing object", versioned("new", "1", "new.example.com")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Service.DryRun(r.Ctx, apptest.Caller, tc.objs); !errors.Is(err, app.ErrConflict) {
				t.Fatalf("DryRun: %v, want a conflict", err)
			}
			if _, err := r.Service.Apply(r.Ctx, apptest.Caller, tc.objs); !errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), "metadata.resourceVersion") {
				t.Fatalf("Apply: %v, want a conflict naming metadata.resourceVersion", err)
			}
		})
	}
	if got := r.Get(key).(*api.Certificate); got.ResourceVersion != rv || got.Spec.DNSNames[0] != "web.example.com" {
		t.Fatalf("a refused apply wrote: %s %v", got.ResourceVersion, got.Spec.DNSNames)
	}
	if _, err := r.Service.Apply(r.Ctx, apptest.Caller, versioned("web", rv, "changed.example.com")); err != nil {
		t.Fatalf("Apply over the current version: %v", err)
	}
	if got := r.Get(key).(*api.Certificate); got.Spec.DNSNames[0] != "changed.example.com" {
		t.Fatalf("not applied: %v", got.Spec.DNSNames)
	}
	if _, err := r.Service.Apply(r.Ctx, apptest.Caller, versioned("web", rv, "again.example.com")); !errors.Is(err, app.ErrConflict) {
		t.Fatalf("Apply over the old version again: %v, want a conflict", err)
	}
}
