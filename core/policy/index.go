package policy

import "math/bits"

// The index of a policy list: which policies may allow a request, decided
// for all of them at once from the request's values rather than by
// reviewing each policy. It is built from the compiled policies of one
// list (the Evaluator's hint, cache.go), so it changes exactly when a
// policy of the list does, and is never built per evaluation.
//
// Each policy's value filters (filter.go) are necessary conditions of its
// quick review; the index answers, for a request, the set of policies
// whose every filter its values meet (candidates). A policy outside that
// set fails its quick review, so approval only reviews candidates; the
// decision is the same as reviewing every applicable policy in order.

// policySet is a set of positions in a policy list, one bit each.
type policySet []uint64

func (s policySet) has(i int) bool { return s[i>>6]&(1<<(i&63)) != 0 }

func (s policySet) add(i int) { s[i>>6] |= 1 << (i & 63) }

// next returns the first position ≥ i in s, or -1.
func (s policySet) next(i int) int {
	w := i >> 6
	if w >= len(s) {
		return -1
	}
	word := s[w] &^ (1<<(i&63) - 1)
	for {
		if word != 0 {
			return w<<6 | bits.TrailingZeros64(word)
		}
		if w++; w >= len(s) {
			return -1
		}
		word = s[w]
	}
}

// listIndex indexes the value filters of a policy list.
type listIndex struct {
	words int
	// compiled holds the positions of the policies that compiled.
	compiled policySet
	// allows[a] holds the policies allowing values of attribute a,
	// requires[a] those requiring one (Compiled.allowedMask and
	// requiredMask, the first check of a quick review).
	allows, requires [numAttrs]policySet
	slots            []indexSlot
}

// indexSlot holds the k-th filter on attr of every policy with at least
// k+1 filters on attr. A value passes the slot for the policies in free
// (no such filter) and for those an atom of whose filter it meets:
// exact[v], prefix[v[:l]] for l in prefixLens, suffix[v[len(v)-l:]] for l
// in suffixLens (lengths ascending).
type indexSlot struct {
	attr                   attr
	free                   policySet
	exact, prefix, suffix  map[string]*indexEntry
	prefixLens, suffixLens []int
}

// indexEntry is the policies with one atom: their positions, and, when
// they outnumber the words of a set, the same as a set (added word by
// word rather than bit by bit).
type indexEntry struct {
	ids []int32
	set policySet
}

// addTo adds the entry's policies to set.
func (e *indexEntry) addTo(set policySet) {
	if e.set != nil {
		for w, bits := range e.set {
			set[w] |= bits
		}
		return
	}
	for _, i := range e.ids {
		set.add(int(i))
	}
}

// buildIndex indexes the compiled policies of entries (nil entries and
// policies that did not compile are never candidates).
func buildIndex(entries []*cacheEntry) *listIndex {
	n := len(entries)
	x := &listIndex{words: (n + 63) / 64}
	x.compiled = make(policySet, x.words)
	type slotKey struct {
		attr attr
		k    int
	}
	slotOf := map[slotKey]int{}
	for a := range numAttrs {
		x.allows[a], x.requires[a] = make(policySet, x.words), make(policySet, x.words)
	}
	for i, ce := range entries {
		if ce == nil || ce.err != nil || ce.compiled == nil {
			continue
		}
		x.compiled.add(i)
		for a := range numAttrs {
			if ce.compiled.allowedMask&(1<<a) != 0 {
				x.allows[a].add(i)
			}
			if ce.compiled.requiredMask&(1<<a) != 0 {
				x.requires[a].add(i)
			}
		}
		var seen [numAttrs]int
		for _, f := range ce.compiled.filters {
			key := slotKey{f.attr, seen[f.attr]}
			seen[f.attr]++
			si, ok := slotOf[key]
			if !ok {
				si = len(x.slots)
				slotOf[key] = si
				x.slots = append(x.slots, indexSlot{attr: f.attr, free: make(policySet, x.words),
					exact: map[string]*indexEntry{}, prefix: map[string]*indexEntry{}, suffix: map[string]*indexEntry{}})
			}
			x.slots[si].add(i, f.atoms)
		}
	}
	// free: every position but those with a filter in the slot (set by
	// add in taken, inverted here).
	for si := range x.slots {
		s := &x.slots[si]
		for w := range s.free {
			s.free[w] = ^s.free[w]
		}
		if r := n & 63; r != 0 {
			s.free[x.words-1] &= 1<<r - 1
		}
		s.prefixLens = lengths(s.prefix)
		s.suffixLens = lengths(s.suffix)
		for _, m := range []map[string]*indexEntry{s.exact, s.prefix, s.suffix} {
			for _, e := range m {
				if len(e.ids) > x.words {
					e.set = make(policySet, x.words)
					for _, i := range e.ids {
						e.set.add(int(i))
					}
				}
			}
		}
	}
	return x
}

// add records policy i's filter in the slot (free is inverted afterwards:
// until then it holds the policies with a filter).
func (s *indexSlot) add(i int, atoms []atom) {
	s.free.add(i)
	for _, a := range atoms {
		m := s.exact
		switch a.kind {
		case atomPrefix:
			m = s.prefix
		case atomSuffix:
			m = s.suffix
		}
		e := m[a.s]
		if e == nil {
			e = &indexEntry{}
			m[a.s] = e
		}
		if len(e.ids) == 0 || e.ids[len(e.ids)-1] != int32(i) {
			e.ids = append(e.ids, int32(i))
		}
	}
}

// lengths returns the distinct key lengths of m, ascending.
func lengths(m map[string]*indexEntry) []int {
	var seen []bool
	for k := range m {
		for len(seen) <= len(k) {
			seen = append(seen, false)
		}
		seen[len(k)] = true
	}
	var out []int
	for l, ok := range seen {
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// mark adds to set the policies for which v passes the slot's filter
// (free excepted: set starts as a copy of it).
func (s *indexSlot) mark(set policySet, v string) {
	if len(s.exact) > 0 {
		if e := s.exact[v]; e != nil {
			e.addTo(set)
		}
	}
	for _, l := range s.suffixLens {
		if l > len(v) {
			break
		}
		if e := s.suffix[v[len(v)-l:]]; e != nil {
			e.addTo(set)
		}
	}
	for _, l := range s.prefixLens {
		if l > len(v) {
			break
		}
		if e := s.prefix[v[:l]]; e != nil {
			e.addTo(set)
		}
	}
}

// candidates returns the policies of the list that allow every attribute
// r carries, require none it lacks, and whose filters every value of r
// meets: a superset of those whose quick review r passes. The set
// lives in r (pooled scratch) until r is released.
func (x *listIndex) candidates(r *Request) policySet {
	cand := growSet(r.cand, x.words)
	tmp := growSet(r.tmp, x.words)
	r.cand, r.tmp = cand, tmp
	copy(cand, x.compiled)
	for a := range numAttrs {
		if r.present&(1<<a) != 0 {
			for w := range cand {
				cand[w] &= x.allows[a][w]
			}
		} else {
			for w := range cand {
				cand[w] &^= x.requires[a][w]
			}
		}
	}
	for si := range x.slots {
		s := &x.slots[si]
		for _, v := range r.attrs[s.attr] {
			copy(tmp, s.free)
			s.mark(tmp, v)
			left := uint64(0)
			for w := range cand {
				cand[w] &= tmp[w]
				left |= cand[w]
			}
			if left == 0 {
				return cand
			}
		}
	}
	return cand
}

// growSet returns s with length n, reusing its storage.
func growSet(s policySet, n int) policySet {
	if cap(s) < n {
		return make(policySet, n)
	}
	return s[:n]
}
