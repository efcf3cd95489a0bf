// Package policy evaluates cert-manager approver-policy's
// CertificateRequestPolicy (docs/design/approval-policy.md) for certfn: which policies apply to a
// CertificateRequest (Ready, selected, and bound to the requester with the
// `use` permission), and whether one of them allows it. It is pure: the
// caller passes the request, the policies, the namespace's labels and an
// rbac.Authorizer; nothing here reads a store or the clock.
package policy

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"sort"
	"strconv"
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

// Results (docs/design/approval-policy.md): Approved when an applicable policy allows the
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

// Decision is what Evaluate decided, with a message (Message) for the
// request's Approved/Denied condition (or, when Unmatched, an event/log
// line saying why nothing applies). Policy names the approving policy.
type Decision struct {
	Result Result
	Policy string
	// Detail is what operators see in debug logs besides Message: for an
	// Unmatched request, how many policies exist and why none applies
	// (kept out of Message, which the requester reads).
	Detail string

	msg    string
	denial *denial // a Denied decision's reasons, rendered by Message
}

// Message returns the text for the request's condition. A policy's
// approval and a denial are rendered here, on the first call, not by
// Evaluate: a caller that only needs Result (a dry run's count, a
// benchmark, an approval whose text is not stored) formats nothing. The
// text is the same whenever it is rendered: the reasons are the compiled
// policies (immutable) and the request, kept by the Decision. A denial
// runs the policies' plugins again with Evaluate's context: call Message
// while that context is live.
func (d Decision) Message() string {
	switch {
	case d.msg != "":
		return d.msg
	case d.denial != nil:
		return d.denial.message()
	case d.Result == Approved && d.Policy != "":
		return fmt.Sprintf("approved by CertificateRequestPolicy %q", d.Policy)
	}
	return ""
}

// denial is the compact form of a Denied decision: the applicable
// policies, none of which allows the request, and what they judged (the
// request, its parsed CSR, its namespace's labels). message renders
// approver-policy's text once: each policy's full review (every
// violation, with its path), by policy name, on a view built again from
// the same inputs (the evaluation's view went back to the pool).
type denial struct {
	ctx      context.Context
	cr       *api.CertificateRequest
	csr      *x509.CertificateRequest
	nsLabels map[string]string
	failed   []*Compiled
	// Or, from an indexed evaluation: the positions in entries of the
	// failed policies (failed is then built from them, in order).
	entries []*cacheEntry
	applied policySet

	once sync.Once
	text string
}

func (dn *denial) message() string {
	dn.once.Do(func() {
		failed := dn.failed
		if dn.applied != nil {
			for i := dn.applied.next(0); i >= 0; i = dn.applied.next(i + 1) {
				failed = append(failed, dn.entries[i].compiled)
			}
		}
		sort.Slice(failed, func(i, j int) bool { return failed[i].Name < failed[j].Name })
		req := newRequest(dn.cr, dn.csr, dn.nsLabels)
		defer req.release()
		var b strings.Builder
		b.WriteString("no applicable CertificateRequestPolicy allows this request: ")
		for i, c := range failed {
			errs := c.review(dn.ctx, req, full)
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString("[policy ")
			b.WriteString(strconv.Quote(c.Name))
			b.WriteString(": ")
			for j, e := range errs {
				if j > 0 {
					b.WriteString("; ")
				}
				b.WriteString(e)
			}
			b.WriteString("]")
		}
		dn.text = b.String()
	})
	return dn.text
}

// Input is one evaluation.
type Input struct {
	// Request is the CertificateRequest; its spec.username, uid, groups and
	// extra are the requester identity (set by certfn, docs/design/certificates-api.md).
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
	// hint is the last policy list evaluated (its cache entries and its
	// index), reused while the list is unchanged (same names and
	// versions, same order).
	hint atomic.Pointer[policyList]
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

// Evaluate decides the request (docs/design/approval-policy.md). A policy applies when it is
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

// Preview is Evaluate without counting the outcome: what the policies
// would decide (a dry run).
func (e *Evaluator) Preview(ctx context.Context, in Input) Decision { return e.evaluate(ctx, in) }

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

// evaluate is Evaluate without the metric, in approver-policy's two
// stages: the selection predicates (predicates.go) pick the policies that
// apply, in order; each is reviewed quickly (review.go) until one passes.
// When none does, the Decision keeps the applicable policies, reviewed
// again in full, by name, for the Denied message when it is read. With
// the list's index (index.go) only the applicable policies that may allow
// the request are reviewed (evaluateIndexed): the decision is the same.
func (e *Evaluator) evaluate(ctx context.Context, in Input) Decision {
	cr := in.Request
	if cr == nil {
		return Decision{Result: Unmatched, msg: "no CertificateRequest to evaluate"}
	}
	sc := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, in.NamespaceLabels)}
	list := e.list(in.Policies)
	if idx := list.index(); idx != nil {
		return evaluateIndexed(ctx, &sc, list.entries, idx)
	}
	return evaluateEach(ctx, &sc, list.entries)
}

// evaluateEach reviews every applicable policy in order until one passes.
func evaluateEach(ctx context.Context, sc *scan, entries []*cacheEntry) Decision {
	in := sc.in
	var req *Request
	for i, p := range in.Policies {
		c := sc.applies(p, entries[i])
		if c == nil {
			continue
		}
		if req == nil {
			var d *Decision
			if req, d = sc.request(); d != nil {
				return *d
			}
		}
		if c.review(ctx, req, quick) == nil {
			req.release()
			return Decision{Result: Approved, Policy: c.Name}
		}
		// Recorded in the pooled view's slice: no allocation once warm.
		req.failed = append(req.failed, c)
	}
	if req == nil {
		msg, detail := sc.unmatched(in.Policies, entries)
		return Decision{Result: Unmatched, msg: msg, Detail: detail}
	}
	return sc.denied(ctx, req)
}

// evaluateIndexed decides as evaluateEach, reviewing only the policies
// idx names as candidates (the others would fail their quick review), in
// order, checking only for them whether they apply. When none approves,
// every policy is checked: none applies (Unmatched), or the applicable
// ones are listed for the message, in order, as evaluateEach lists them.
// The CSR is parsed first, to find the candidates; a CSR that does not
// parse is left to evaluateEach, which denies the request for it only if
// a policy applies.
func evaluateIndexed(ctx context.Context, sc *scan, entries []*cacheEntry, idx *listIndex) Decision {
	in := sc.in
	csr := in.CSR
	if csr == nil {
		var err error
		if csr, err = pki.ParseCSRPEM(in.Request.Spec.Request); err != nil {
			return evaluateEach(ctx, sc, entries)
		}
	}
	req := newRequest(in.Request, csr, in.NamespaceLabels)
	cand := idx.candidates(req)
	for i := cand.next(0); i >= 0; i = cand.next(i + 1) {
		if c := sc.applies(in.Policies[i], entries[i]); c != nil && c.review(ctx, req, quick) == nil {
			req.release()
			return Decision{Result: Approved, Policy: c.Name}
		}
	}
	// No approval: the applicable policies, as positions (the entries
	// are immutable), for the Denied message.
	var applied policySet
	for i, p := range in.Policies {
		if sc.applies(p, entries[i]) != nil {
			if applied == nil {
				applied = make(policySet, len(cand))
			}
			applied.add(i)
		}
	}
	if applied == nil {
		req.release()
		msg, detail := sc.unmatched(in.Policies, entries)
		return Decision{Result: Unmatched, msg: msg, Detail: detail}
	}
	dn := &denial{ctx: ctx, cr: in.Request, csr: req.CSR, nsLabels: in.NamespaceLabels, entries: entries, applied: applied}
	req.release()
	return Decision{Result: Denied, denial: dn}
}

// request returns the view of the request with its CSR parsed (once, when
// the caller passed none), or the Denied decision of a CSR that does not
// parse.
func (sc *scan) request() (*Request, *Decision) {
	in := sc.in
	csr := in.CSR
	if csr == nil {
		var err error
		if csr, err = pki.ParseCSRPEM(in.Request.Spec.Request); err != nil {
			return nil, &Decision{Result: Denied, msg: fmt.Sprintf("spec.request: %v", err)}
		}
	}
	return newRequest(in.Request, csr, in.NamespaceLabels), nil
}

// denied is the decision when every applicable policy (req.failed)
// failed its quick review. Their message (each policy's violations in
// full) is rendered by Decision.Message when a caller asks for it.
func (sc *scan) denied(ctx context.Context, req *Request) Decision {
	dn := &denial{ctx: ctx, cr: sc.in.Request, csr: req.CSR, nsLabels: sc.in.NamespaceLabels, failed: slices.Clone(req.failed)}
	req.release()
	return Decision{Result: Denied, denial: dn}
}
