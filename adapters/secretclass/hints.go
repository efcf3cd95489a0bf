// Package secretclass holds what the secret stores that file secrets by
// class (Google Secret Manager, SSM Parameter Store) share: a bounded
// memory of the class each secret was last found or written in, so that a
// Get tries that class first instead of probing every class.
package secretclass

import (
	"slices"
	"sync"
)

// MaxHints bounds the hints kept (all are dropped when full).
const MaxHints = 4096

// Hints remembers the class of namespace/name. The zero value is ready to
// use and safe for concurrent use.
type Hints[C comparable] struct {
	mu    sync.Mutex
	where map[string]C
}

// Remember records c as the class of namespace/name.
func (h *Hints[C]) Remember(namespace, name string, c C) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.where == nil || len(h.where) >= MaxHints {
		h.where = map[string]C{}
	}
	h.where[namespace+"/"+name] = c
}

// Forget drops the hint of namespace/name.
func (h *Hints[C]) Forget(namespace, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.where, namespace+"/"+name)
}

// Order returns the classes to try for namespace/name: the remembered one
// first (when it is one of classes), then the others in classes' order.
func (h *Hints[C]) Order(namespace, name string, classes []C) []C {
	h.mu.Lock()
	c, ok := h.where[namespace+"/"+name]
	h.mu.Unlock()
	if !ok || !slices.Contains(classes, c) {
		return classes
	}
	out := make([]C, 0, len(classes))
	out = append(out, c)
	for _, o := range classes {
		if o != c {
			out = append(out, o)
		}
	}
	return out
}
