package policy

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// The `cr` variable of a validation rule is an object of this CEL type
// (approver-policy's name for it), with the request's name and namespace
// and the requester identity recorded on it (approver-policy has name,
// namespace, username and groups; certfn adds uid and extra, docs/design/certificates-api.md):
//
//	cr.namespace, cr.name, cr.username, cr.uid  string
//	cr.groups                                   list(string)
//	cr.extra                                    map(string, list(string))
//
// As for approver-policy's protobuf message, has(cr.<field>) is false for
// an empty field. `self` is the value being checked (a string). Rules are
// type-checked when the policy compiles, so a misspelt field is a compile
// error.
const celRequestTypeName = "cm.io.policy.pkg.internal.approver.validation.CertificateRequest"

var celRequestType = types.NewObjectType(celRequestTypeName)

// crValue is the runtime value of `cr`. Its fields are converted to CEL
// values when a rule reads them (most rules read none, or one), so that
// building it allocates nothing: a Request keeps one (pooled).
type crValue struct {
	adapter                        types.Adapter
	namespace, name, username, uid string
	groups                         []string
	extra                          map[string][]string
}

// set fills v for a request in namespace with name by id.
func (v *crValue) set(adapter types.Adapter, namespace, name string, id identityFields) {
	*v = crValue{adapter: adapter, namespace: namespace, name: name, username: id.username, uid: id.uid,
		groups: id.groups, extra: id.extra}
}

// groupsVal is cr.groups: a list of strings, empty when there are none.
func (v *crValue) groupsVal() ref.Val {
	groups := v.groups
	if groups == nil {
		groups = []string{}
	}
	return types.NewStringList(v.adapter, groups)
}

// extraVal is cr.extra: a map of strings to lists of strings.
func (v *crValue) extraVal() ref.Val {
	extra := make(map[ref.Val]ref.Val, len(v.extra))
	for k, vs := range v.extra {
		extra[types.String(k)] = types.NewStringList(v.adapter, vs)
	}
	return types.NewRefValMap(v.adapter, extra)
}

type identityFields struct {
	username, uid string
	groups        []string
	extra         map[string][]string
}

// ConvertToNative implements ref.Val; cr has no native form.
func (v *crValue) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("cr cannot be converted to %v", t)
}

// ConvertToType implements ref.Val.
func (v *crValue) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return celRequestType
	}
	return types.NewErr("cr cannot be converted to %s", t.TypeName())
}

// Equal implements ref.Val: cr equals only itself.
func (v *crValue) Equal(o ref.Val) ref.Val { return types.Bool(v == o) }

// Type implements ref.Val.
func (v *crValue) Type() ref.Type { return celRequestType }

// Value implements ref.Val.
func (v *crValue) Value() any { return v }

func crField(get func(*crValue) ref.Val, t *types.Type) *types.FieldType {
	return &types.FieldType{
		Type: t,
		IsSet: func(o any) bool {
			v, ok := o.(*crValue)
			if !ok {
				return false
			}
			switch f := get(v).(type) {
			case types.String:
				return f != ""
			case traits.Sizer:
				return f.Size() != types.IntZero
			}
			return true
		},
		GetFrom: func(o any) (any, error) {
			v, ok := o.(*crValue)
			if !ok {
				return nil, fmt.Errorf("cr: unexpected value %T", o)
			}
			return get(v), nil
		},
	}
}

var crFields = map[string]*types.FieldType{
	"namespace": crField(func(v *crValue) ref.Val { return types.String(v.namespace) }, types.StringType),
	"name":      crField(func(v *crValue) ref.Val { return types.String(v.name) }, types.StringType),
	"username":  crField(func(v *crValue) ref.Val { return types.String(v.username) }, types.StringType),
	"uid":       crField(func(v *crValue) ref.Val { return types.String(v.uid) }, types.StringType),
	"groups":    crField((*crValue).groupsVal, types.NewListType(types.StringType)),
	"extra": crField((*crValue).extraVal,
		types.NewMapType(types.StringType, types.NewListType(types.StringType))),
}

// crProvider adds the cr object type to the standard type provider.
type crProvider struct{ types.Provider }

func (p crProvider) FindStructType(name string) (*types.Type, bool) {
	if name == celRequestTypeName {
		return types.NewTypeTypeWithParam(celRequestType), true
	}
	return p.Provider.FindStructType(name)
}

func (p crProvider) FindStructFieldNames(name string) ([]string, bool) {
	if name == celRequestTypeName {
		return sortedKeys(crFields), true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p crProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if name == celRequestTypeName {
		f, ok := crFields[field]
		return f, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}

func (p crProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if name == celRequestTypeName {
		return types.NewErr("%s cannot be constructed in a rule", name)
	}
	return p.Provider.NewValue(name, fields)
}

var (
	celEnvOnce sync.Once
	celEnvVal  *cel.Env
	celEnvErr  error
)

// celEnv is the one environment rules compile in, approver-policy's:
// `self` (string), `cr` (its CertificateRequest type), the standard
// library, cel-go's string extensions and its service account functions
// (celServiceAccountLib).
func celEnv() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		reg, err := types.NewRegistry()
		if err != nil {
			celEnvErr = err
			return
		}
		celEnvVal, celEnvErr = cel.NewEnv(
			cel.CustomTypeAdapter(reg),
			cel.CustomTypeProvider(crProvider{reg}),
			cel.Variable("self", cel.StringType),
			cel.Variable("cr", celRequestType),
			ext.Strings(),
			celServiceAccountLib(),
		)
	})
	return celEnvVal, celEnvErr
}

// Evaluation limits, approver-policy's (Kubernetes' CEL per-call limit):
// a rule whose evaluation costs more than celCostLimit units of CEL's cost
// model is stopped with an error (and fails), so that a policy cannot make
// approval loop for long; comprehensions check the limit every
// celInterruptCheckFrequency iterations.
//
// Tracking the cost of an evaluation is expensive (it observes every
// step), so a rule whose cost CEL's static estimate bounds under the limit
// runs untracked whenever the values it reads are within the sizes the
// estimate assumed (celSizes); otherwise, and for every other rule, the
// tracked program runs. Either way no evaluation exceeds the limit.
const (
	celCostLimit               = 1000000
	celInterruptCheckFrequency = 100

	// The sizes the static estimate assumes: the length of `self` and of
	// each string of `cr`, the number of groups, of extra keys and of
	// values per extra key. (cr.namespace and cr.name are names: at most
	// 63 and 253 characters.)
	celMaxString = 4096
	celMaxList   = 256
)

// celSizes is the size estimator of the static cost estimate.
type celSizes struct{}

// EstimateSize implements checker.CostEstimator.
func (celSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	max := uint64(0)
	switch strings.Join(n.Path(), ".") {
	case "self", "cr.username", "cr.uid", "cr.groups.@items", "cr.extra.@keys", "cr.extra.@values.@items":
		max = celMaxString
	case "cr.namespace":
		max = 63
	case "cr.name":
		max = 253
	case "cr.groups", "cr.extra", "cr.extra.@values":
		max = celMaxList
	default:
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: max}
}

// EstimateCallCost implements checker.CostEstimator (CEL's defaults).
func (celSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// withinEstimate reports whether the values a rule reads are within the
// sizes celSizes assumes: the request's (checked once per evaluation, see
// Request.celActivation) and self.
func withinEstimate(self ref.Val, crBounded bool) bool {
	s, ok := self.(types.String)
	return crBounded && ok && len(s) <= celMaxString
}

// celRule is a compiled validation rule: prg runs with the cost limit;
// fast, when set, runs without it (for values within the estimate).
type celRule struct {
	rule    string
	message string
	prg     cel.Program
	fast    cel.Program
	// atoms, when atomsOK, is a condition on self the rule needs to be
	// true (ruleAtoms): the index of a policy list skips policies by it.
	// With atomsExact the rule is that condition and eval checks it
	// without running prg.
	atoms      []atom
	atomsOK    bool
	atomsExact bool
}

// compileRule parses and type-checks rule; it must evaluate to a bool.
func compileRule(rule string) (prg, fast cel.Program, err error) {
	r, err := compileCELRule(rule)
	return r.prg, r.fast, err
}

// compileCELRule is compileRule returning the rule (without its message),
// with the condition on self its shape gives (ruleAtoms).
func compileCELRule(rule string) (celRule, error) {
	if strings.TrimSpace(rule) == "" {
		return celRule{}, fmt.Errorf("empty rule")
	}
	env, err := celEnv()
	if err != nil {
		return celRule{}, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := env.Compile(rule)
	if iss.Err() != nil {
		return celRule{}, fmt.Errorf("invalid CEL: %s", oneLine(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return celRule{}, fmt.Errorf("rule must evaluate to a bool, not %s", ast.OutputType())
	}
	out := celRule{rule: rule}
	out.prg, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(celInterruptCheckFrequency))
	if err != nil {
		return celRule{}, fmt.Errorf("invalid CEL: %s", oneLine(err.Error()))
	}
	if est, err := env.EstimateCost(ast, celSizes{}); err == nil && est.Max <= celCostLimit {
		if out.fast, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err != nil {
			return celRule{}, fmt.Errorf("invalid CEL: %s", oneLine(err.Error()))
		}
	}
	out.atoms, out.atomsOK, out.atomsExact = ruleAtoms(ast)
	return out, nil
}

// activation binds self and cr without building a map per evaluation.
// crBounded records that cr is within the sizes celSizes assumes.
type activation struct {
	self      ref.Val
	cr        ref.Val
	crBounded bool
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "self":
		return a.self, true
	case "cr":
		return a.cr, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// eval runs the rule with self bound to value (a types.String). An
// evaluation error (a cost over the limit included) counts as a failure
// (fail closed) and is returned for the message. A rule that is || of
// conditions on self (atomsExact) is checked in Go, with the same result.
func (r *celRule) eval(act *activation, value ref.Val) (bool, error) {
	if r.atomsExact {
		if s, ok := value.(types.String); ok {
			f := valueFilter{atoms: r.atoms}
			return f.meets(string(s)), nil
		}
	}
	act.self = value
	prg := r.prg
	if r.fast != nil && withinEstimate(value, act.crBounded) {
		prg = r.fast
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	return ok && b, nil
}

// oneLine folds a multi-line CEL error (with its caret diagram) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
