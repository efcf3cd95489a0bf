package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
)

// Create stores a new object only: an existing key is ErrAlreadyExists
// (also ErrConflict) and nothing is written; a caller without `create` is
// refused the same way whether the object exists or not.
func TestCreate(t *testing.T) {
	nobody := app.Caller{Username: "mallory", Groups: []string{"system:authenticated"}}
	tests := []struct {
		name     string
		existing bool
		caller   app.Caller
		manifest string
		want     error
	}{
		{"new", false, caller, apptest.CertYAML, nil},
		{"exists", true, caller, apptest.CertYAML, app.ErrAlreadyExists},
		{"exists is a conflict", true, caller, apptest.CertYAML, app.ErrConflict},
		{"forbidden, missing", false, nobody, apptest.CertYAML, app.ErrForbidden},
		{"forbidden, existing", true, nobody, apptest.CertYAML, app.ErrForbidden},
		{"a resourceVersion", false, caller, strings.Replace(apptest.CertYAML, "namespace: default}", "namespace: default, resourceVersion: \"3\"}", 1), app.ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			if tt.existing {
				r.Apply(apptest.CertYAML)
			}
			before := int64(0)
			if tt.existing {
				before = r.Rec(apptest.CertKey).Version
			}
			res, err := r.Service.Create(r.Ctx, tt.caller, apptest.MustDecode(t, tt.manifest))
			if tt.want == nil {
				if err != nil || !res.Created || r.Get(apptest.CertKey).(*api.Certificate).Spec.SecretName != "web-tls" {
					t.Fatalf("create: %+v %v", res, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if tt.existing && r.Rec(apptest.CertKey).Version != before {
				t.Errorf("refused create wrote the object")
			}
			if !tt.existing {
				if _, err := r.Repo.Get(r.Ctx, apptest.CertKey); err == nil {
					t.Errorf("refused create stored the object")
				}
			}
		})
	}
}

// Update changes an existing object only, conditionally on the version
// it names or the one it read.
func TestUpdate(t *testing.T) {
	changed := strings.Replace(apptest.CertYAML, "secretName: web-tls", "secretName: web-tls-2", 1)
	tests := []struct {
		name     string
		existing bool
		manifest string
		want     error
	}{
		{"existing", true, changed, nil},
		{"missing", false, changed, app.ErrNotFound},
		{"stale version", true, strings.Replace(changed, "namespace: default}", "namespace: default, resourceVersion: \"99\"}", 1), app.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			if tt.existing {
				r.Apply(apptest.CertYAML)
			}
			_, err := r.Service.Update(r.Ctx, caller, apptest.MustDecode(t, tt.manifest))
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			o, getErr := r.Repo.Get(r.Ctx, apptest.CertKey)
			switch {
			case !tt.existing && getErr == nil:
				t.Error("update created the object")
			case tt.want == nil && o.(*api.Certificate).Spec.SecretName != "web-tls-2":
				t.Error("update did not write")
			case tt.existing && tt.want != nil && o.(*api.Certificate).Spec.SecretName != "web-tls":
				t.Error("refused update wrote")
			}
		})
	}
	// A Secret in the secret store has no versions to update against.
	r := apptest.NewRig(t)
	sec := apptest.MustDecode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\nstringData: {a: b}\n")
	if _, err := r.Service.Update(r.Ctx, caller, sec); !errors.Is(err, app.ErrBadRequest) {
		t.Errorf("secret update: %v", err)
	}
}
