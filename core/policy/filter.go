package policy

import (
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
)

// Value filters: what a value of a request attribute must look like for a
// policy to have a chance of allowing it, derived when the policy compiles
// from its allowed patterns and from the shape of its CEL rules. They are
// necessary conditions only: a value that fails a filter fails the
// policy's quick review (evalAllowedValues or evalValidations), while a
// value that passes may still fail it. The index of a policy list
// (index.go) uses them to skip, without reviewing them, the policies that
// cannot allow a request; the review itself is unchanged.

// atomKind is the shape of an atom.
type atomKind uint8

const (
	atomExact  atomKind = iota // the value equals s
	atomPrefix                 // the value starts with s
	atomSuffix                 // the value ends with s
)

// atom is one condition on a value.
type atom struct {
	kind atomKind
	s    string
}

// holds reports whether v meets the atom.
func (a atom) holds(v string) bool {
	switch a.kind {
	case atomExact:
		return v == a.s
	case atomPrefix:
		return strings.HasPrefix(v, a.s)
	}
	return strings.HasSuffix(v, a.s)
}

// valueFilter requires each value of attr to meet one of atoms (none: no
// value passes). A request without values of attr passes it.
type valueFilter struct {
	attr  attr
	atoms []atom
}

// meets reports whether v meets one of f's atoms.
func (f *valueFilter) meets(v string) bool {
	for _, a := range f.atoms {
		if a.holds(v) {
			return true
		}
	}
	return false
}

// patternAtom is a necessary condition for a value to match p, ignoring
// its need (which only narrows what p matches); ok is false when p can
// match any value ("*", or a glob starting and ending with '*').
func patternAtom(p *pattern) (a atom, ok bool) {
	switch p.kind {
	case patExact:
		return atom{atomExact, p.raw}, true
	case patPrefix:
		return atom{atomPrefix, p.parts[0]}, true
	case patSuffix:
		return atom{atomSuffix, p.parts[1]}, true
	case patGlob:
		// "a*b*c": the value ends with c and starts with a; one is enough.
		if last := p.parts[len(p.parts)-1]; last != "" {
			return atom{atomSuffix, last}, true
		}
		if first := p.parts[0]; first != "" {
			return atom{atomPrefix, first}, true
		}
	}
	return atom{}, false
}

// patternsFilter is the filter of a field's allowed values: a value must
// match one of ps. ok is false when one of them matches anything.
func patternsFilter(at attr, ps patterns) (f valueFilter, ok bool) {
	f = valueFilter{attr: at, atoms: []atom{}}
	for i := range ps {
		a, ok := patternAtom(&ps[i])
		if !ok {
			return valueFilter{}, false
		}
		f.atoms = append(f.atoms, a)
	}
	return f, true
}

// ruleAtoms derives from a type-checked rule a necessary condition on
// `self` for the rule to evaluate to true: a list of atoms, one of which
// the value meets; ok is false when the rule's shape says nothing. It
// understands self == 'lit' (either side), self.startsWith('lit'),
// self.endsWith('lit'), and && and || of those: since `self` is always a
// string, these never fail, so `a && b` is false when a is, whatever b
// evaluates to (even an error), and `a || b` is false when both are.
// Anything else (other functions, comprehensions, cr) is not analysed.
// exact reports a rule that is nothing but || of atoms: it is true
// exactly when the value meets one of them (it cannot fail or exceed the
// cost limit), so it need not run.
func ruleAtoms(ast *cel.Ast) (atoms []atom, ok, exact bool) {
	return exprAtoms(ast.NativeRep().Expr(), 0)
}

// maxRuleDepth bounds the recursion over a rule's && and || (a rule's
// nesting is bounded by CEL's parser already; this is a second bound).
const maxRuleDepth = 32

func exprAtoms(e celast.Expr, depth int) (atoms []atom, ok, exact bool) {
	if depth > maxRuleDepth || e.Kind() != celast.CallKind {
		return nil, false, false
	}
	call := e.AsCall()
	args := call.Args()
	switch fn := call.FunctionName(); {
	case fn == operators.LogicalAnd && !call.IsMemberFunction() && len(args) == 2:
		// Either side is necessary; keep the first that says something.
		if as, ok, _ := exprAtoms(args[0], depth+1); ok {
			return as, true, false
		}
		as, ok, _ := exprAtoms(args[1], depth+1)
		return as, ok, false
	case fn == operators.LogicalOr && !call.IsMemberFunction() && len(args) == 2:
		l, ok, lExact := exprAtoms(args[0], depth+1)
		if !ok {
			return nil, false, false
		}
		r, ok, rExact := exprAtoms(args[1], depth+1)
		if !ok {
			return nil, false, false
		}
		return append(append([]atom{}, l...), r...), true, lExact && rExact
	case fn == operators.Equals && !call.IsMemberFunction() && len(args) == 2:
		if isSelf(args[0]) {
			if s, ok := stringLiteral(args[1]); ok {
				return []atom{{atomExact, s}}, true, true
			}
		}
		if isSelf(args[1]) {
			if s, ok := stringLiteral(args[0]); ok {
				return []atom{{atomExact, s}}, true, true
			}
		}
	case (fn == overloads.StartsWith || fn == overloads.EndsWith) && call.IsMemberFunction() && len(args) == 1 && isSelf(call.Target()):
		s, ok := stringLiteral(args[0])
		if !ok || s == "" {
			return nil, false, false // "" holds for every value
		}
		if fn == overloads.StartsWith {
			return []atom{{atomPrefix, s}}, true, true
		}
		return []atom{{atomSuffix, s}}, true, true
	}
	return nil, false, false
}

func isSelf(e celast.Expr) bool {
	return e.Kind() == celast.IdentKind && e.AsIdent() == "self"
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// fieldFilters returns the filters of the named allowed fields of c, in
// the order of c.fields: a field's values (when they cannot match
// everything), then each of its rules whose shape gives a condition. The
// attributes of otherNames and otherAttributes are not filtered.
func (c *Compiled) fieldFilters() []valueFilter {
	var out []valueFilter
	for _, f := range c.fields {
		if f.values != nil {
			if vf, ok := patternsFilter(f.attr, *f.values); ok {
				out = append(out, vf)
			}
		}
		for i := range f.rules {
			if r := &f.rules[i]; r.atomsOK {
				out = append(out, valueFilter{attr: f.attr, atoms: r.atoms})
			}
		}
	}
	return out
}
