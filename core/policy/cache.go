package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/certfn/certfn/core/api"
)

// The Evaluator's cache of compiled policies, and the Ready condition
// derived from compiling a policy.

// cacheEntry is one compiled policy version (or its compile error).
type cacheEntry struct {
	name            string
	uid             string
	generation      int64
	resourceVersion string
	spec            string // JSON of the spec, for unversioned policies only
	compiled        *Compiled
	err             error
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

// policyList is the cache entries of one policy list, in order (nil for
// a nil policy), with the list's index (index.go), built from the
// entries on the list's indexAtUse-th evaluation: a list evaluated once
// (the policies changed) costs no index.
type policyList struct {
	entries []*cacheEntry
	uses    atomic.Int64
	once    sync.Once
	idx     *listIndex
}

// indexAtUse is the evaluation of a list that builds its index (the
// second, so that lists replaced at every evaluation never build one).
// Tests set it to 1 so that every evaluation uses the index.
var indexAtUse int64 = 2

// index returns the list's index, building it on the indexAtUse-th call;
// nil before.
func (l *policyList) index() *listIndex {
	if l.uses.Load() < indexAtUse && l.uses.Add(1) < indexAtUse {
		return nil
	}
	l.once.Do(func() { l.idx = buildIndex(l.entries) })
	return l.idx
}

// entries returns the cache entries of ps, in order (nil for a nil
// policy).
func (e *Evaluator) entries(ps []*api.CertificateRequestPolicy) []*cacheEntry {
	return e.list(ps).entries
}

// list returns the policyList of ps: the previous list when ps names the
// same versions in the same order (the usual case: policies change
// rarely), else a new list, which becomes the hint for the next call.
func (e *Evaluator) list(ps []*api.CertificateRequestPolicy) *policyList {
	if h := e.hint.Load(); h != nil && len(h.entries) == len(ps) {
		same := true
		for i, p := range ps {
			ce := h.entries[i]
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
			return h
		}
	}
	list := &policyList{entries: make([]*cacheEntry, len(ps))}
	for i, p := range ps {
		if p != nil {
			list.entries[i] = e.entry(p)
		}
	}
	e.hint.Store(list)
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
