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
	"sync/atomic"

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
// compiled form per version (name, uid, metadata.generation,
// resourceVersion; for a policy with neither generation nor
// resourceVersion, its spec). It is safe for concurrent use.
type Evaluator struct {
	plugins []Plugin
	metrics ports.Metrics

	// cache maps a policy name to its last compiled version. Readers load
	// the map without locking; writers (serialised by mu) replace it with a
	// modified copy, which happens only when a policy changes.
	cache atomic.Pointer[map[string]*cacheEntry]
	mu    sync.Mutex
	// hint is the entry list of the last policy list evaluated, reused
	// while the list is unchanged (same names and versions, same order).
	hint atomic.Pointer[[]*cacheEntry]
}

type cacheEntry struct {
	name            string
	uid             string
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
	e := &Evaluator{plugins: opts.Plugins, metrics: opts.Metrics}
	e.cache.Store(&map[string]*cacheEntry{})
	return e, nil
}

// Compile returns p compiled with the evaluator's plugins, from the cache
// when this version of p was compiled before. The error is an ErrorList.
func (e *Evaluator) Compile(p *api.CertificateRequestPolicy) (*Compiled, error) {
	ce := e.entry(p)
	return ce.compiled, ce.err
}

// entry returns p's cache entry, compiling p when this version is new.
func (e *Evaluator) entry(p *api.CertificateRequestPolicy) *cacheEntry {
	var spec string
	if unversioned(p) {
		b, err := json.Marshal(p.Spec)
		if err != nil {
			return &cacheEntry{name: p.Name, err: fmt.Errorf("policy %q: encode spec: %w", p.Name, err)}
		}
		spec = string(b)
	}
	if ce := (*e.cache.Load())[p.Name]; ce != nil && ce.sameVersion(p) && ce.spec == spec {
		return ce
	}
	c, err := Compile(p, e.plugins...)
	ce := &cacheEntry{name: p.Name, uid: p.UID, generation: p.Generation, resourceVersion: p.ResourceVersion,
		spec: spec, compiled: c, err: err}
	e.update(func(m map[string]*cacheEntry) { m[p.Name] = ce })
	return ce
}

// sameVersion reports whether the entry was compiled from this version of
// p: same name, UID (a policy deleted and created again is new), generation
// and resourceVersion.
func (ce *cacheEntry) sameVersion(p *api.CertificateRequestPolicy) bool {
	return ce.name == p.Name && ce.uid == p.UID && ce.generation == p.Generation && ce.resourceVersion == p.ResourceVersion
}

// unversioned reports a policy with neither generation nor resourceVersion,
// whose cache entry is then keyed by its spec.
func unversioned(p *api.CertificateRequestPolicy) bool {
	return p.Generation == 0 && p.ResourceVersion == ""
}

// entries returns the cache entries of ps, in order (nil for a nil
// policy): the previous list when ps names the same versions in the same
// order (the usual case: policies change rarely), else a new list, which
// becomes the hint for the next call.
func (e *Evaluator) entries(ps []*api.CertificateRequestPolicy) []*cacheEntry {
	if h := e.hint.Load(); h != nil && len(*h) == len(ps) {
		same := true
		for i, p := range ps {
			ce := (*h)[i]
			if p == nil || ce == nil {
				if p != nil || ce != nil {
					same = false
					break
				}
				continue
			}
			if unversioned(p) || !ce.sameVersion(p) {
				same = false
				break
			}
		}
		if same {
			return *h
		}
	}
	list := make([]*cacheEntry, len(ps))
	for i, p := range ps {
		if p != nil {
			list[i] = e.entry(p)
		}
	}
	e.hint.Store(&list)
	return list
}

// update replaces the cache with a copy changed by fn.
func (e *Evaluator) update(fn func(map[string]*cacheEntry)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	old := *e.cache.Load()
	m := make(map[string]*cacheEntry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	fn(m)
	e.cache.Store(&m)
}

// Forget drops the cached compilation of the named policy (e.g. when it is
// deleted). It is never needed for correctness.
func (e *Evaluator) Forget(name string) {
	e.update(func(m map[string]*cacheEntry) { delete(m, name) })
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
	sc := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, in.NamespaceLabels)}
	entries := e.entries(in.Policies)
	var req *Request
	applicable := 0
	for i, p := range in.Policies {
		c := sc.applies(p, entries[i])
		if c == nil {
			continue
		}
		applicable++
		if req == nil {
			csr := in.CSR
			if csr == nil {
				var err error
				if csr, err = pki.ParseCSRPEM(cr.Spec.Request); err != nil {
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
	}
	if applicable == 0 {
		return Decision{Result: Unmatched, Message: sc.unmatched(in.Policies, entries)}
	}
	// Denied (the slow path): run every applicable policy again, collecting
	// all its violations.
	var failed []*Compiled
	for i, p := range in.Policies {
		if c := sc.applies(p, entries[i]); c != nil {
			failed = append(failed, c)
		}
	}
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

// scan decides which policies apply to one request.
type scan struct {
	in        *Input
	id        rbac.Identity
	sel       selectorInput
	bound     rbac.NameSet
	boundDone bool
}

// Reasons a policy does not apply.
const (
	reasonApplies = iota
	reasonNotReady
	reasonNotSelected
	reasonNotBound
)

// applies returns p compiled (from its cache entry ce) when it applies to
// the request: Ready, bound to the requester with `use` (checked in the
// request's namespace, so RoleBindings there count) and selecting it; else
// nil. The `use` check comes before the selector: it is the cheaper one
// when, as usual, each requester is bound to few policies.
func (s *scan) applies(p *api.CertificateRequestPolicy, ce *cacheEntry) *Compiled {
	if s.why(p, ce, false) != reasonApplies {
		return nil
	}
	return ce.compiled
}

// why classifies p. With selectorFirst the selector is checked before the
// binding, so that a policy that neither selects the request nor is bound
// counts as not selecting it (as the Unmatched message reports).
func (s *scan) why(p *api.CertificateRequestPolicy, ce *cacheEntry, selectorFirst bool) int {
	if p == nil || notReadyByStatus(p) || ce.err != nil {
		return reasonNotReady
	}
	if selectorFirst && !ce.compiled.selector.matches(&s.sel) {
		return reasonNotSelected
	}
	if !s.boundDone {
		s.bound = s.in.Authorizer.AllowedNames(s.id, rbac.Attributes{Verb: rbac.VerbUse, APIGroup: api.PolicyGroup,
			Resource: rbac.ResourceCertificateRequestPolicies, Namespace: s.sel.namespace})
		s.boundDone = true
	}
	if !s.bound.Has(p.Name) {
		return reasonNotBound
	}
	if !selectorFirst && !ce.compiled.selector.matches(&s.sel) {
		return reasonNotSelected
	}
	return reasonApplies
}

// unmatched explains why no policy applies.
func (s *scan) unmatched(ps []*api.CertificateRequestPolicy, entries []*cacheEntry) string {
	var counts [4]int
	total := 0
	for i, p := range ps {
		if p == nil {
			continue
		}
		total++
		counts[s.why(p, entries[i], true)]++
	}
	return unmatchedMessage(s.in.Request, total, counts[reasonNotReady], counts[reasonNotSelected], counts[reasonNotBound])
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
	if len(why) == 0 {
		return msg
	}
	return fmt.Sprintf("%s: of %d policies, %s", msg, total, strings.Join(why, ", "))
}

// selectorInput is what selectors look at, computed once per evaluation:
// the issuer reference with cert-manager's defaults (kind Issuer, group
// cert-manager.io) and the namespace with its labels.
type selectorInput struct {
	name, kind, group string
	namespace         string
	labels            map[string]string
}

func newSelectorInput(cr *api.CertificateRequest, labels map[string]string) selectorInput {
	ref := cr.Spec.IssuerRef
	in := selectorInput{name: ref.Name, kind: ref.Kind, group: ref.Group, namespace: cr.Namespace, labels: labels}
	if in.kind == "" {
		in.kind = api.KindIssuer
	}
	if in.group == "" {
		in.group = api.CertManagerGroup
	}
	return in
}

// matches reports whether the selector selects the request (every selector
// set must match).
func (s *selector) matches(in *selectorInput) bool {
	if is := s.issuer; is != nil {
		if (is.name != nil && !is.name.match(in.name)) ||
			(is.kind != nil && !is.kind.match(in.kind)) ||
			(is.group != nil && !is.group.match(in.group)) {
			return false
		}
	}
	if ns := s.namespace; ns != nil {
		if len(ns.names) > 0 && !ns.names.matchAny(in.namespace) {
			return false
		}
		for _, kv := range ns.labels {
			if got, ok := in.labels[kv[0]]; !ok || got != kv[1] {
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

// fail records a violation and reports whether its message is wanted
// (full mode). Callers build messages only then, so short mode allocates
// nothing for failures.
func (ch *checker) fail() bool {
	ch.failed = true
	return ch.full
}

// addf adds a violation message.
func (ch *checker) addf(format string, args ...any) {
	ch.out = append(ch.out, fmt.Sprintf(format, args...))
}

// stop reports whether a short-mode check may return now.
func (ch *checker) stop() bool { return ch.failed && !ch.full }

// check runs every check of c on r: the cheap ones (patterns, flags,
// constraints) first, then CEL rules, then plugins, so that in short mode a
// policy failing on a name never runs its rules.
func (c *Compiled) check(ctx context.Context, r *Request, ch *checker) {
	for _, u := range r.unsupported {
		if ch.fail() {
			ch.addf("%s", u)
		} else {
			return
		}
	}
	if ch.full {
		for _, f := range c.fields {
			f.checkValues(r, ch)
		}
	} else {
		// Short path: presence by bit masks, then only the patterns of
		// attributes the request carries.
		if r.present&^c.allowedMask != 0 || c.requiredMask&^r.present != 0 {
			ch.fail()
			return
		}
		for _, f := range c.valueFields {
			if r.present&(1<<f.attr) != 0 {
				f.checkValues(r, ch)
				if ch.stop() {
					return
				}
			}
		}
	}
	if r.CR.Spec.IsCA && !c.isCA {
		if !ch.fail() {
			return
		}
		ch.addf("spec.allowed.isCA: the request asks for a CA certificate, which the policy does not allow")
	}
	if len(r.usages) > 0 {
		if c.usages == nil {
			if !ch.fail() {
				return
			}
			ch.addf("spec.allowed.usages: %s not allowed: the policy allows no key usages", quoteList(r.usages))
		} else {
			for _, u := range r.usages {
				if !c.usages.matchAny(u) {
					if !ch.fail() {
						return
					}
					ch.addf("spec.allowed.usages: %q is not allowed (allowed: %s)", u, c.usages)
				}
			}
		}
	}
	c.constraints.check(r, ch)
	if ch.stop() {
		return
	}
	for _, f := range c.ruleFields {
		f.checkRules(r, ch)
		if ch.stop() {
			return
		}
	}
	for _, p := range c.plugins {
		for _, v := range p.check.Check(ctx, r) {
			if !ch.fail() {
				return
			}
			ch.addf("spec.plugins.%s: %s", p.name, v)
		}
	}
}

// checkValues applies one allowed field's presence and patterns (seed
// 001): an absent attribute passes unless required; a present one needs
// the field to allow values; each value must match a pattern, if values
// are set.
func (f *stringField) checkValues(r *Request, ch *checker) {
	vals := r.attrs[f.attr]
	if len(vals) == 0 {
		if f.required && ch.fail() {
			ch.addf("%s.required: the request must carry %s %s", f.path, article(f.what), f.what)
		}
		return
	}
	if !f.set || (f.values == nil && len(f.rules) == 0) {
		if ch.fail() {
			ch.addf("%s: %s not allowed: the policy allows no %s", f.path, quoteList(vals), plural(f.what))
		}
		return
	}
	if f.values == nil {
		return
	}
	for _, v := range vals {
		if f.values.matchAny(v) {
			continue
		}
		if !ch.fail() {
			return
		}
		if len(*f.values) == 0 {
			ch.addf("%s: %q is not allowed: the policy allows no %s", f.path, v, plural(f.what))
		} else {
			ch.addf("%s: %q is not allowed (allowed: %s)", f.path, v, f.values)
		}
	}
}

// checkRules runs the field's CEL rules once per value.
func (f *stringField) checkRules(r *Request, ch *checker) {
	vals := r.attrs[f.attr]
	if len(vals) == 0 || len(f.rules) == 0 {
		return
	}
	act, err := r.celActivation()
	if err != nil {
		if ch.fail() {
			ch.addf("%s.validations: %v", f.path, err)
		}
		return
	}
	celVals := r.celValues(f.attr)
	for i := range f.rules {
		rule := &f.rules[i]
		for j, v := range vals {
			ok, err := rule.eval(act, celVals[j])
			if ok {
				continue
			}
			if !ch.fail() {
				return
			}
			if err != nil {
				ch.addf("%s.validations[%d]: %q: %s (rule error: %s)", f.path, i, v, rule.message, oneLine(err.Error()))
			} else {
				ch.addf("%s.validations[%d]: %q: %s", f.path, i, v, rule.message)
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
			if ch.fail() {
				ch.addf("%s.%s: the request carries no duration (spec.duration or spec.expirationSeconds)", path, which)
			}
		default:
			if k.maxDuration != nil && *d > *k.maxDuration {
				if ch.fail() {
					ch.addf("%s.maxDuration: requested duration %s is longer than %s", path, *d, *k.maxDuration)
				}
			}
			if k.minDuration != nil && *d < *k.minDuration {
				if ch.fail() {
					ch.addf("%s.minDuration: requested duration %s is shorter than %s", path, *d, *k.minDuration)
				}
			}
		}
		if ch.stop() {
			return
		}
	}
	if k.algorithm != "" && r.KeyAlgorithm != k.algorithm {
		if ch.fail() {
			ch.addf("%s.privateKey.algorithm: the request's key is %s, the policy requires %s", path, keyAlg(r.KeyAlgorithm), k.algorithm)
		}
	}
	if k.minSize != nil && r.KeySize < *k.minSize {
		if ch.fail() {
			ch.addf("%s.privateKey.minSize: the request's %s key has size %d, the policy requires at least %d", path, keyAlg(r.KeyAlgorithm), r.KeySize, *k.minSize)
		}
	}
	if k.maxSize != nil && r.KeySize > *k.maxSize {
		if ch.fail() {
			ch.addf("%s.privateKey.maxSize: the request's %s key has size %d, the policy allows at most %d", path, keyAlg(r.KeyAlgorithm), r.KeySize, *k.maxSize)
		}
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
