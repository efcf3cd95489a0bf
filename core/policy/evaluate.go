// Package policy evaluates cert-manager approver-policy's
// CertificateRequestPolicy (seed 001) for certfn: which policies apply to a
// CertificateRequest (Ready, selected, and bound to the requester with the
// `use` permission), and whether one of them allows it. It is pure: the
// caller passes the request, the policies, the namespace's labels and an
// rbac.Authorizer; nothing here reads a store or the clock.
package policy

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
)

// Result is the outcome of an evaluation.
type Result string

// Results (seed 001): Approved when an applicable policy allows the
// request; Denied when some apply and none allows it (a permanent
// failure); Unmatched when none applies (the request is left untouched).
const (
	Approved  Result = "Approved"
	Denied    Result = "Denied"
	Unmatched Result = "Unmatched"
)

// MetricApprovalOutcomes counts decisions, with labels namespace and
// status (approved, denied, unmatched).
const MetricApprovalOutcomes = "policy_approval_outcomes_total"

// Decision is what Evaluate decided, with a message for the request's
// Approved/Denied condition (or, when Unmatched, an event/log line saying
// why nothing applies). Policy names the approving policy.
type Decision struct {
	Result  Result
	Message string
	Policy  string
}

// Input is one evaluation.
type Input struct {
	// Request is the CertificateRequest; its spec.username, uid, groups and
	// extra are the requester identity (set by certfn, seed 004).
	Request *api.CertificateRequest
	// CSR is the parsed spec.request when the caller already parsed and
	// verified it (pki.ParseCSRPEM); nil parses it here, once.
	CSR *x509.CertificateRequest
	// Policies are every CertificateRequestPolicy. They are tried in the
	// given order; the first that allows the request approves it.
	Policies []*api.CertificateRequestPolicy
	// NamespaceLabels are the labels of the Namespace object named by the
	// request's namespace (nil when there is none).
	NamespaceLabels map[string]string
	// Authorizer answers the `use` checks; nil binds nobody to anything.
	Authorizer *rbac.Authorizer
}

// Options configure an Evaluator.
type Options struct {
	// Plugins are the plugins compiled into this build, registered here
	// explicitly.
	Plugins []Plugin
	// Metrics receives MetricApprovalOutcomes; nil discards.
	Metrics ports.Metrics
}

// Evaluator evaluates requests against policies, caching each policy's
// compiled form per version (name, metadata.generation, resourceVersion;
// for a policy with neither generation nor resourceVersion, its spec). It
// is safe for concurrent use.
type Evaluator struct {
	plugins []Plugin
	metrics ports.Metrics

	mu    sync.RWMutex
	cache map[string]*cacheEntry
}

type cacheEntry struct {
	generation      int64
	resourceVersion string
	spec            string // JSON of the spec, for unversioned policies only
	compiled        *Compiled
	err             error
}

// NewEvaluator returns an Evaluator with opts' plugins. Plugin names must be
// unique and non-empty.
func NewEvaluator(opts Options) (*Evaluator, error) {
	seen := map[string]bool{}
	for _, p := range opts.Plugins {
		n := p.Name()
		if n == "" || seen[n] {
			return nil, fmt.Errorf("policy plugins: name %q is empty or registered twice", n)
		}
		seen[n] = true
	}
	return &Evaluator{plugins: opts.Plugins, metrics: opts.Metrics, cache: map[string]*cacheEntry{}}, nil
}

// Compile returns p compiled with the evaluator's plugins, from the cache
// when this version of p was compiled before. The error is an ErrorList.
func (e *Evaluator) Compile(p *api.CertificateRequestPolicy) (*Compiled, error) {
	unversioned := p.Generation == 0 && p.ResourceVersion == ""
	var spec string
	if unversioned {
		b, err := json.Marshal(p.Spec)
		if err != nil {
			return nil, fmt.Errorf("policy %q: encode spec: %w", p.Name, err)
		}
		spec = string(b)
	}
	e.mu.RLock()
	ce := e.cache[p.Name]
	e.mu.RUnlock()
	if ce != nil && ce.generation == p.Generation && ce.resourceVersion == p.ResourceVersion && ce.spec == spec {
		return ce.compiled, ce.err
	}
	c, err := Compile(p, e.plugins...)
	e.mu.Lock()
	e.cache[p.Name] = &cacheEntry{generation: p.Generation, resourceVersion: p.ResourceVersion, spec: spec, compiled: c, err: err}
	e.mu.Unlock()
	return c, err
}

// Forget drops the cached compilation of the named policy (e.g. when it is
// deleted). It is never needed for correctness.
func (e *Evaluator) Forget(name string) {
	e.mu.Lock()
	delete(e.cache, name)
	e.mu.Unlock()
}

// ReadyCondition returns the Ready condition p should carry: True when p
// compiles with the evaluator's plugins, else False with every compile
// error (field paths included). ObservedGeneration is p's generation.
func (e *Evaluator) ReadyCondition(p *api.CertificateRequestPolicy) api.Condition {
	c := api.Condition{Type: api.CertificateRequestPolicyConditionReady, ObservedGeneration: p.Generation}
	if _, err := e.Compile(p); err != nil {
		c.Status, c.Reason = api.ConditionFalse, "NotReady"
		c.Message = "CertificateRequestPolicy is not ready: " + errorText(err)
		return c
	}
	c.Status, c.Reason = api.ConditionTrue, "Ready"
	c.Message = "CertificateRequestPolicy is ready for approval evaluation"
	return c
}

// errorText renders an ErrorList without the object prefix (the condition
// is on the object already).
func errorText(err error) string {
	el, ok := err.(ErrorList)
	if !ok {
		return err.Error()
	}
	parts := make([]string, len(el))
	for i, fe := range el {
		fe.Object = ""
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

// notReadyByStatus reports a Ready condition that is not True for the
// policy's current generation. (A policy without the condition yet is
// judged by compiling it.)
func notReadyByStatus(p *api.CertificateRequestPolicy) bool {
	c := api.FindCondition(p.Status.Conditions, api.CertificateRequestPolicyConditionReady)
	return c != nil && c.Status != api.ConditionTrue && c.ObservedGeneration == p.Generation
}

// Evaluate decides the request (seed 001). A policy applies when it is
// Ready (it compiles and its Ready condition, if any, is not False for its
// generation), its selector matches the request, and the requester may
// `use` it (in the request's namespace). Approved if an applicable policy
// passes every check; Denied, listing each applicable policy's violations,
// if some apply and none passes (also when the CSR cannot be parsed);
// Unmatched, with the reason, if none applies. Each outcome is counted in
// MetricApprovalOutcomes.
func (e *Evaluator) Evaluate(ctx context.Context, in Input) Decision {
	d := e.evaluate(ctx, in)
	e.count(in.Request, d.Result)
	return d
}

func (e *Evaluator) count(cr *api.CertificateRequest, r Result) {
	if e.metrics == nil {
		return
	}
	ns := ""
	if cr != nil {
		ns = cr.Namespace
	}
	e.metrics.Inc(MetricApprovalOutcomes, "namespace", ns, "status", strings.ToLower(string(r)))
}

func (e *Evaluator) evaluate(ctx context.Context, in Input) Decision {
	cr := in.Request
	if cr == nil {
		return Decision{Result: Unmatched, Message: "no CertificateRequest to evaluate"}
	}
	id := identityOf(cr)
	var (
		bound       rbac.NameSet
		boundDone   bool
		req         *Request
		failed      []*Compiled
		notReady    int
		notSelected int
		notBound    int
	)
	for _, p := range in.Policies {
		if p == nil {
			continue
		}
		if notReadyByStatus(p) {
			notReady++
			continue
		}
		c, err := e.Compile(p)
		if err != nil {
			notReady++
			continue
		}
		if !c.selector.matches(cr, in.NamespaceLabels) {
			notSelected++
			continue
		}
		if !boundDone {
			bound = in.Authorizer.AllowedNames(id, rbac.Attributes{Verb: rbac.VerbUse, APIGroup: api.PolicyGroup,
				Resource: rbac.ResourceCertificateRequestPolicies, Namespace: cr.Namespace})
			boundDone = true
		}
		if !bound.Has(p.Name) {
			notBound++
			continue
		}
		if req == nil {
			csr := in.CSR
			if csr == nil {
				csr, err = pki.ParseCSRPEM(cr.Spec.Request)
				if err != nil {
					return Decision{Result: Denied, Message: fmt.Sprintf("spec.request: %v", err)}
				}
			}
			req = newRequest(cr, csr, in.NamespaceLabels)
		}
		ch := checker{}
		c.check(ctx, req, &ch)
		if !ch.failed {
			return Decision{Result: Approved, Policy: c.Name,
				Message: fmt.Sprintf("approved by CertificateRequestPolicy %q", c.Name)}
		}
		failed = append(failed, c)
	}
	if len(failed) == 0 {
		return Decision{Result: Unmatched, Message: unmatchedMessage(cr, len(in.Policies), notReady, notSelected, notBound)}
	}
	// Denied: run the failed policies again, collecting every violation.
	sort.Slice(failed, func(i, j int) bool { return failed[i].Name < failed[j].Name })
	var b strings.Builder
	b.WriteString("no applicable CertificateRequestPolicy allows this request: ")
	for i, c := range failed {
		ch := checker{full: true}
		c.check(ctx, req, &ch)
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "[policy %q: %s]", c.Name, strings.Join(ch.out, "; "))
	}
	return Decision{Result: Denied, Message: b.String()}
}

func unmatchedMessage(cr *api.CertificateRequest, total, notReady, notSelected, notBound int) string {
	ref := cr.Spec.IssuerRef
	kind, group := ref.Kind, ref.Group
	if kind == "" {
		kind = api.KindIssuer
	}
	if group == "" {
		group = api.CertManagerGroup
	}
	msg := fmt.Sprintf("no policy applies to requester %q for issuer %s %q (group %s) in namespace %q",
		cr.Spec.Username, kind, ref.Name, group, cr.Namespace)
	if total == 0 {
		return msg + ": there are no CertificateRequestPolicies"
	}
	var why []string
	if notReady > 0 {
		why = append(why, fmt.Sprintf("%d not Ready", notReady))
	}
	if notSelected > 0 {
		why = append(why, fmt.Sprintf("%d not selecting this request", notSelected))
	}
	if notBound > 0 {
		why = append(why, fmt.Sprintf("%d selecting it but not bound to the requester with %q", notBound, rbac.VerbUse))
	}
	return fmt.Sprintf("%s: of %d policies, %s", msg, total, strings.Join(why, ", "))
}

// matches reports whether the selector selects cr (every selector set must
// match). The request's issuer kind defaults to Issuer and group to
// cert-manager.io, as cert-manager does.
func (s *selector) matches(cr *api.CertificateRequest, nsLabels map[string]string) bool {
	if is := s.issuer; is != nil {
		ref := cr.Spec.IssuerRef
		kind, group := ref.Kind, ref.Group
		if kind == "" {
			kind = api.KindIssuer
		}
		if group == "" {
			group = api.CertManagerGroup
		}
		if (is.name != nil && !is.name.match(ref.Name)) ||
			(is.kind != nil && !is.kind.match(kind)) ||
			(is.group != nil && !is.group.match(group)) {
			return false
		}
	}
	if ns := s.namespace; ns != nil {
		if len(ns.names) > 0 && !ns.names.matchAny(cr.Namespace) {
			return false
		}
		for k, v := range ns.labels {
			if got, ok := nsLabels[k]; !ok || got != v {
				return false
			}
		}
	}
	return true
}

// checker collects violations. In short mode (full false) checks stop at
// the first violation and build no messages.
type checker struct {
	full   bool
	failed bool
	out    []string
}

func (ch *checker) violate(format string, args ...any) {
	ch.failed = true
	if ch.full {
		ch.out = append(ch.out, fmt.Sprintf(format, args...))
	}
}

// stop reports whether a short-mode check may return now.
func (ch *checker) stop() bool { return ch.failed && !ch.full }

// check runs every check of c on r.
func (c *Compiled) check(ctx context.Context, r *Request, ch *checker) {
	for _, u := range r.unsupported {
		ch.violate("%s", u)
		if ch.stop() {
			return
		}
	}
	for _, f := range c.fields {
		f.check(r, ch)
		if ch.stop() {
			return
		}
	}
	if r.CR.Spec.IsCA && !c.isCA {
		ch.violate("spec.allowed.isCA: the request asks for a CA certificate, which the policy does not allow")
		if ch.stop() {
			return
		}
	}
	if len(r.usages) > 0 {
		if c.usages == nil {
			ch.violate("spec.allowed.usages: %s not allowed: the policy allows no key usages", quoteList(r.usages))
		} else {
			for _, u := range r.usages {
				if !c.usages.matchAny(u) {
					ch.violate("spec.allowed.usages: %q is not allowed (allowed: %s)", u, c.usages)
					if ch.stop() {
						return
					}
				}
			}
		}
		if ch.stop() {
			return
		}
	}
	c.constraints.check(r, ch)
	if ch.stop() {
		return
	}
	for _, p := range c.plugins {
		for _, v := range p.check.Check(ctx, r) {
			ch.violate("spec.plugins.%s: %s", p.name, v)
			if ch.stop() {
				return
			}
		}
	}
}

// check applies one allowed field (seed 001): an absent attribute passes
// unless required; a present one needs the field to allow values; each
// value must match a pattern (if values are set) and pass every rule.
func (f *stringField) check(r *Request, ch *checker) {
	vals := r.attrs[f.attr]
	if len(vals) == 0 {
		if f.required {
			ch.violate("%s.required: the request must carry %s %s", f.path, article(f.what), f.what)
		}
		return
	}
	if !f.set || (f.values == nil && len(f.rules) == 0) {
		ch.violate("%s: %s not allowed: the policy allows no %s", f.path, quoteList(vals), plural(f.what))
		return
	}
	if f.values != nil {
		for _, v := range vals {
			if !f.values.matchAny(v) {
				if len(*f.values) == 0 {
					ch.violate("%s: %q is not allowed: the policy allows no %s", f.path, v, plural(f.what))
				} else {
					ch.violate("%s: %q is not allowed (allowed: %s)", f.path, v, f.values)
				}
				if ch.stop() {
					return
				}
			}
		}
	}
	if len(f.rules) == 0 {
		return
	}
	act, err := r.celActivation()
	if err != nil {
		ch.violate("%s.validations: %v", f.path, err)
		return
	}
	for i := range f.rules {
		rule := &f.rules[i]
		for _, v := range vals {
			ok, err := rule.eval(act, v)
			switch {
			case err != nil:
				ch.violate("%s.validations[%d]: %q: %s (rule error: %s)", f.path, i, v, rule.message, oneLine(err.Error()))
			case !ok:
				ch.violate("%s.validations[%d]: %q: %s", f.path, i, v, rule.message)
			default:
				continue
			}
			if ch.stop() {
				return
			}
		}
	}
}

func (k *constraints) check(r *Request, ch *checker) {
	const path = "spec.constraints"
	if k.minDuration != nil || k.maxDuration != nil {
		switch d := r.Duration; {
		case d == nil:
			which := "maxDuration"
			if k.maxDuration == nil {
				which = "minDuration"
			}
			ch.violate("%s.%s: the request carries no duration (spec.duration or spec.expirationSeconds)", path, which)
		default:
			if k.maxDuration != nil && *d > *k.maxDuration {
				ch.violate("%s.maxDuration: requested duration %s is longer than %s", path, *d, *k.maxDuration)
			}
			if k.minDuration != nil && *d < *k.minDuration {
				ch.violate("%s.minDuration: requested duration %s is shorter than %s", path, *d, *k.minDuration)
			}
		}
		if ch.stop() {
			return
		}
	}
	if k.algorithm != "" && r.KeyAlgorithm != k.algorithm {
		ch.violate("%s.privateKey.algorithm: the request's key is %s, the policy requires %s", path, keyAlg(r.KeyAlgorithm), k.algorithm)
	}
	if k.minSize != nil && r.KeySize < *k.minSize {
		ch.violate("%s.privateKey.minSize: the request's %s key has size %d, the policy requires at least %d", path, keyAlg(r.KeyAlgorithm), r.KeySize, *k.minSize)
	}
	if k.maxSize != nil && r.KeySize > *k.maxSize {
		ch.violate("%s.privateKey.maxSize: the request's %s key has size %d, the policy allows at most %d", path, keyAlg(r.KeyAlgorithm), r.KeySize, *k.maxSize)
	}
}

func keyAlg(a api.PrivateKeyAlgorithm) string {
	if a == "" {
		return "of an unsupported type"
	}
	return string(a)
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("%q", v)
	}
	if len(q) == 1 {
		return q[0] + " is"
	}
	return strings.Join(q, ", ") + " are"
}

// article returns "a" or "an" for the names used in messages.
func article(what string) string {
	if what != "" && strings.ContainsRune("aeioAEIO", rune(what[0])) {
		return "an"
	}
	return "a"
}

func plural(what string) string {
	if strings.HasSuffix(what, "y") {
		return what[:len(what)-1] + "ies"
	}
	if strings.HasSuffix(what, "s") {
		return what + "es"
	}
	return what + "s"
}
