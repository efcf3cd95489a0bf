package kernel

import (
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// deleteTree deletes the records key owns first, the kinds of its row's
// Owns (so a crash leaves at worst an owner without children, which its
// steps recreate), then key, after the BeforeDelete of its kind's
// controller when it is a Deleter.
func (r *run) deleteTree(ctx context.Context, key api.Key, version int64) error {
	row := r.rows[key.Kind]
	if row != nil {
		for _, kind := range row.Owns {
			children, err := r.cfg.Store.List(ctx, ports.ListOptions{Kind: kind, Namespace: key.Namespace, Owner: key})
			if err != nil {
				return fmt.Errorf("list %s owned by %s: %w", kind, key, err)
			}
			for _, c := range children {
				if err := r.deleteTree(ctx, c.Key, 0); err != nil {
					return err
				}
			}
		}
		if d, ok := row.Controller.(Deleter); ok {
			rec, err := r.cfg.Store.Get(ctx, key)
			if err == nil {
				err = d.BeforeDelete(ctx, r, rec)
			}
			if err != nil && !errors.Is(err, ports.ErrNotFound) {
				return fmt.Errorf("before deleting %s: %w", key, err)
			}
		}
	}
	err := r.cfg.Store.Delete(ctx, key, version)
	if errors.Is(err, ports.ErrNotFound) {
		return r.deleteEvents(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	r.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	r.committed()
	return r.deleteEvents(ctx, key)
}

// deleteEvents deletes the Events about key (after key: a crash between
// leaves Events of a deleted object, which the next delete of that key or
// the store's retention removes).
func (r *run) deleteEvents(ctx context.Context, key api.Key) error {
	if key.Kind == api.KindEvent || r.cfg.EventsExpire {
		return nil
	}
	return DeleteEvents(ctx, r.cfg.Store, key)
}

// DeleteEvents deletes every Event about key (those whose record key
// owns), for whoever deletes key: an object's Events go with it.
func DeleteEvents(ctx context.Context, store ports.Store, key api.Key) error {
	evs, err := store.List(ctx, ports.ListOptions{Kind: api.KindEvent, Namespace: api.EventNamespaceFor(key), Owner: key})
	if err != nil {
		return fmt.Errorf("list the Events of %s: %w", key, err)
	}
	for _, ev := range evs {
		if err := store.Delete(ctx, ev.Key, 0); err != nil && !errors.Is(err, ports.ErrNotFound) {
			return fmt.Errorf("delete the Event %s of %s: %w", ev.Key.Name, key, err)
		}
	}
	return nil
}
