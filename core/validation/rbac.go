package validation

import (
	"strings"

	"github.com/certfn/certfn/core/api"
)

// rbacMetadata checks the metadata of a Role, ClusterRole, RoleBinding or
// ClusterRoleBinding. Kubernetes validates RBAC object names as path
// segments, not DNS names, so "cert-manager-policy:hello-world" (docs/design/approval-policy.md's
// example) is valid: any name except "." and "..", without '/' or '%'.
// The rules and subjects themselves are checked by rbac.Validate.
func rbacMetadata(m *api.ObjectMeta, namespaced bool) ErrorList {
	var errs ErrorList
	switch {
	case m.Name == "" && m.GenerateName == "":
		errs.add("metadata.name", "required")
	case m.Name == "." || m.Name == "..":
		errs.addValue("metadata.name", m.Name, "may not be '.' or '..'")
	case strings.ContainsAny(m.Name, "/%"), strings.ContainsAny(m.GenerateName, "/%"):
		errs.addValue("metadata.name", m.Name+m.GenerateName, "may not contain '/' or '%'")
	}
	// Namespace rules are the usual ones: drop the name errors of Metadata.
	probe := *m
	probe.Name, probe.GenerateName = "x", ""
	return append(errs, Metadata(&probe, namespaced)...)
}
