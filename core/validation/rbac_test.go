package validation

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

func TestRBACNames(t *testing.T) {
	meta := func(ns, name string) api.ObjectMeta { return api.ObjectMeta{Namespace: ns, Name: name} }
	tests := []struct {
		name string
		obj  api.Object
		want string // "" = valid
	}{
		{"docs/design/approval-policy.md ClusterRole name with a colon", &api.ClusterRole{ObjectMeta: meta("", "cert-manager-policy:hello-world")}, ""},
		{"docs/design/approval-policy.md ClusterRoleBinding", &api.ClusterRoleBinding{ObjectMeta: meta("", "cert-manager-policy:hello-world")}, ""},
		{"Role with upper case", &api.Role{ObjectMeta: meta("team-a", "Approvers")}, ""},
		{"slash", &api.RoleBinding{ObjectMeta: meta("team-a", "a/b")}, "metadata.name: may not contain '/' or '%'"},
		{"dot-dot", &api.ClusterRole{ObjectMeta: meta("", "..")}, "metadata.name: may not be '.' or '..'"},
		{"missing name", &api.ClusterRole{}, "metadata.name: required"},
		{"Role needs a namespace", &api.Role{ObjectMeta: meta("", "r")}, "metadata.namespace: required"},
		{"ClusterRole takes none", &api.ClusterRole{ObjectMeta: meta("x", "r")}, "metadata.namespace: must be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := Object(tc.obj)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs.Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
