package rbac

import (
	"context"

	"github.com/certfn/certfn/core/api"
)

// Lister lists the stored objects of a kind (core/repo.Repo is one).
type Lister interface {
	List(ctx context.Context, kind, namespace string) ([]api.Object, error)
}

// Kinds are the RBAC kinds a Snapshot holds.
var Kinds = []string{api.KindRole, api.KindClusterRole, api.KindRoleBinding, api.KindClusterRoleBinding}

// Load builds an Authorizer from the stored Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings: one snapshot, one List per kind.
func Load(ctx context.Context, l Lister) (*Authorizer, error) {
	var all []api.Object
	for _, kind := range Kinds {
		objs, err := l.List(ctx, kind, "")
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return NewAuthorizer(SnapshotOf(all)), nil
}

// SnapshotOf is the Snapshot of the RBAC objects among objs (others are
// ignored).
func SnapshotOf(objs []api.Object) Snapshot {
	var s Snapshot
	for _, o := range objs {
		switch v := o.(type) {
		case *api.Role:
			s.Roles = append(s.Roles, *v)
		case *api.ClusterRole:
			s.ClusterRoles = append(s.ClusterRoles, *v)
		case *api.RoleBinding:
			s.RoleBindings = append(s.RoleBindings, *v)
		case *api.ClusterRoleBinding:
			s.ClusterRoleBindings = append(s.ClusterRoleBindings, *v)
		}
	}
	return s
}
