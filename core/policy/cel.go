package policy

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// CELRequest is the `cr` variable of a validation rule: the request's
// name and namespace and the requester identity recorded on it (seed 001
// documents namespace and name; certfn adds the identity, seed 004).
// In CEL: cr.namespace, cr.name, cr.username, cr.uid, cr.groups (list of
// strings) and cr.extra (map of string to list of strings).
type CELRequest struct {
	Namespace string              `cel:"namespace"`
	Name      string              `cel:"name"`
	Username  string              `cel:"username"`
	UID       string              `cel:"uid"`
	Groups    []string            `cel:"groups"`
	Extra     map[string][]string `cel:"extra"`
}

var (
	celEnvOnce sync.Once
	celEnvVal  *cel.Env
	celEnvErr  error
)

// celEnv is the one environment rules compile in: `self` (string), `cr`
// (CELRequest) and the standard library plus cel-go's string extensions.
func celEnv() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnvVal, celEnvErr = cel.NewEnv(
			ext.NativeTypes(ext.ParseStructTags(true), reflect.TypeFor[CELRequest]()),
			cel.Variable("self", cel.StringType),
			cel.Variable("cr", cel.ObjectType("policy.CELRequest")),
			ext.Strings(),
		)
	})
	return celEnvVal, celEnvErr
}

// celRule is a compiled validation rule.
type celRule struct {
	rule    string
	message string
	prg     cel.Program
}

// compileRule parses and type-checks rule; it must evaluate to a bool.
func compileRule(rule string) (cel.Program, error) {
	if strings.TrimSpace(rule) == "" {
		return nil, fmt.Errorf("empty rule")
	}
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := env.Compile(rule)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL: %s", oneLine(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("rule must evaluate to a bool, not %s", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("invalid CEL: %s", oneLine(err.Error()))
	}
	return prg, nil
}

// activation binds self and cr without building a map per evaluation.
type activation struct {
	self types.String
	cr   any
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

// eval runs the rule on value. An evaluation error counts as a failure
// (fail closed) and is returned for the message.
func (r *celRule) eval(act *activation, value string) (bool, error) {
	act.self = types.String(value)
	out, _, err := r.prg.Eval(act)
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
