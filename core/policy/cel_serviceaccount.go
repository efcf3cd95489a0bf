package policy

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/certfn/certfn/core/rbac"
)

// approver-policy's service account functions for validation rules, with
// its names and semantics:
//
//	isServiceAccount(string) bool      the string is a service account username
//	serviceAccount(string) ServiceAccount  the service account of a username
//	                                       (an error, so a failed rule, if it is not one)
//	<ServiceAccount>.getNamespace() string
//	<ServiceAccount>.getName() string
//
// A service account username is Kubernetes':
// system:serviceaccount:<namespace>:<name>, the namespace a DNS-1123 label
// and the name a DNS-1123 subdomain. For example
//
//	isServiceAccount(cr.username) &&
//	self == 'spiffe://acme.com/ns/%s/sa/%s'.format([serviceAccount(cr.username).getNamespace(), serviceAccount(cr.username).getName()])

// celServiceAccountTypeName is approver-policy's name for the type.
const celServiceAccountTypeName = "cm.io.policy.pkg.internal.approver.validation.ServiceAccount"

var celServiceAccountType = cel.ObjectType(celServiceAccountTypeName)

// serviceAccountVal is a ServiceAccount value in CEL.
type serviceAccountVal struct {
	namespace, name string
}

// ConvertToNative implements ref.Val: to itself, or to the username.
func (sa serviceAccountVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeFor[serviceAccountVal]().AssignableTo(t) {
		return sa, nil
	}
	if reflect.TypeFor[string]().AssignableTo(t) {
		return rbac.ServiceAccountUsername(sa.namespace, sa.name), nil
	}
	return nil, fmt.Errorf("type conversion error from 'serviceaccount' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (sa serviceAccountVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case celServiceAccountType:
		return sa
	case types.TypeType:
		return celServiceAccountType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", celServiceAccountType, t)
}

// Equal implements ref.Val: same namespace and name.
func (sa serviceAccountVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(serviceAccountVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(sa == o)
}

// Type implements ref.Val.
func (sa serviceAccountVal) Type() ref.Type { return celServiceAccountType }

// Value implements ref.Val.
func (sa serviceAccountVal) Value() any { return sa }

type serviceAccountLib struct{}

func celServiceAccountLib() cel.EnvOption { return cel.Lib(serviceAccountLib{}) }

// CompileOptions implements cel.Library.
func (serviceAccountLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("serviceAccount", cel.Overload("username_to_serviceaccount",
			[]*cel.Type{cel.StringType}, celServiceAccountType, cel.UnaryBinding(celToServiceAccount))),
		cel.Function("getName", cel.MemberOverload("serviceaccount_get_name",
			[]*cel.Type{celServiceAccountType}, cel.StringType, cel.UnaryBinding(celServiceAccountName))),
		cel.Function("getNamespace", cel.MemberOverload("serviceaccount_get_namespace",
			[]*cel.Type{celServiceAccountType}, cel.StringType, cel.UnaryBinding(celServiceAccountNamespace))),
		cel.Function("isServiceAccount", cel.Overload("serviceaccount_is_sa",
			[]*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(celIsServiceAccount))),
	}
}

// ProgramOptions implements cel.Library.
func (serviceAccountLib) ProgramOptions() []cel.ProgramOption { return nil }

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// splitServiceAccount is Kubernetes' serviceaccount.SplitUsername: the
// namespace (a DNS-1123 label) and name (a DNS-1123 subdomain) of
// system:serviceaccount:<namespace>:<name>.
func splitServiceAccount(username string) (namespace, name string, ok bool) {
	namespace, name, ok = rbac.SplitServiceAccountUsername(username)
	if !ok || len(namespace) > 63 || !dns1123Label.MatchString(namespace) ||
		len(name) > 253 || !dns1123Subdomain.MatchString(name) {
		return "", "", false
	}
	return namespace, name, true
}

func celToServiceAccount(arg ref.Val) ref.Val {
	s, ok := arg.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	ns, name, ok := splitServiceAccount(s)
	if !ok {
		return types.NewErr("unable to convert to serviceaccount: username must be in the form system:serviceaccount:<namespace>:<name>, username: %q", s)
	}
	return serviceAccountVal{namespace: ns, name: name}
}

func celIsServiceAccount(arg ref.Val) ref.Val {
	s, ok := arg.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	_, _, ok = splitServiceAccount(s)
	return types.Bool(ok)
}

func celServiceAccountName(arg ref.Val) ref.Val {
	sa, ok := arg.(serviceAccountVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	return types.String(sa.name)
}

func celServiceAccountNamespace(arg ref.Val) ref.Val {
	sa, ok := arg.(serviceAccountVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	return types.String(sa.namespace)
}
