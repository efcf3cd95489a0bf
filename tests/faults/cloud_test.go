package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// shape is a cloud deployment's queues and schedule: the worker and
// signer functions consume a queue each (SQS, Pub/Sub push), a message
// whose invocation died comes back after the queue's visibility timeout
// (Pub/Sub: the acknowledgement deadline), and the scheduler sweeps the
// due index every sweepEvery.
type shape struct {
	name                               string
	workerVisibility, signerVisibility time.Duration
	sweepEvery                         time.Duration
}

// bound is the cloud liveness bound: a key whose invocation died is back
// within one visibility timeout plus one sweep.
func (s *shape) bound() time.Duration {
	return max(s.workerVisibility, s.signerVisibility) + s.sweepEvery
}

// The shapes' defaults. Google Cloud (infra/terraform/gcp): the push
// subscriptions' ack deadline is the service's timeout (worker 120 s,
// signer 60 s), Cloud Scheduler sweeps every minute. AWS
// (infra/terraform/aws): SQS visibility is 6 × the function's timeout
// (worker 720 s, signer 360 s), EventBridge Scheduler every minute.
var (
	gcp = &shape{name: "Cloud Run / Pub/Sub", workerVisibility: 120 * time.Second, signerVisibility: 60 * time.Second, sweepEvery: time.Minute}
	aws = &shape{name: "Lambda / SQS", workerVisibility: 720 * time.Second, signerVisibility: 360 * time.Second, sweepEvery: time.Minute}
)

// cloud is the running cloud deployment of one run: its queues outlive
// the function instances; an instance that dies loses what it held in
// memory (the follow-ups it had not run, the keys it had not sent).
type cloud struct {
	s                *shape
	workerQ, signerQ *sqs
	worker, signer   *app.Deliverer
	scheduler        *app.App
	sweepQ           *app.SweepQueue
	api              *app.App
	nextSweep        time.Time
}

// sqs is a cloud queue: unlike core/memory's queue (one message per
// key, as local mode's), every send is a message of its own; a received
// message is invisible until it is deleted (Ack) or its visibility
// timeout ends; Nack makes it visible again after a delay. Receive hands
// out the earliest visible message, in send order among equals.
type sqs struct {
	clk        interface{ Now() time.Time }
	visibility time.Duration
	seq        int
	msgs       []*message
}

type message struct {
	key       api.Key
	visibleAt time.Time
	attempt   int
	seq       int
}

func (q *sqs) Enqueue(_ context.Context, k api.Key, d time.Duration) error {
	q.seq++
	q.msgs = append(q.msgs, &message{key: k, visibleAt: q.clk.Now().Add(max(d, 0)), seq: q.seq})
	return nil
}

// receive leases the earliest visible message (nil: none).
func (q *sqs) receive() *message {
	now := q.clk.Now()
	var best *message
	for _, m := range q.msgs {
		if !m.visibleAt.After(now) && (best == nil || m.visibleAt.Before(best.visibleAt) ||
			(m.visibleAt.Equal(best.visibleAt) && m.seq < best.seq)) {
			best = m
		}
	}
	if best != nil {
		best.attempt++
		best.visibleAt = now.Add(q.visibility)
	}
	return best
}

func (q *sqs) ack(m *message) {
	for i, x := range q.msgs {
		if x == m {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return
		}
	}
}

func (q *sqs) nack(m *message, d time.Duration) { m.visibleAt = q.clk.Now().Add(max(d, 0)) }

// nextVisible is when the next message becomes visible.
func (q *sqs) nextVisible() (time.Time, bool) {
	var t time.Time
	for _, m := range q.msgs {
		if t.IsZero() || m.visibleAt.Before(t) {
			t = m.visibleAt
		}
	}
	return t, !t.IsZero()
}

// batch is a counted app.BatchQueue over a cloud queue (SQS
// SendMessageBatch, a Pub/Sub publish batch: one call).
type batch struct {
	q  *sqs
	in *injector
}

func (b batch) Enqueue(ctx context.Context, k api.Key, d time.Duration) error {
	return b.in.call("queue.Enqueue "+k.Kind, func() error { return b.q.Enqueue(ctx, k, d) })
}

func (b batch) EnqueueBatch(ctx context.Context, keys []api.Key, d time.Duration) error {
	return b.in.call("queue.EnqueueBatch", func() error {
		for _, k := range keys {
			if err := b.q.Enqueue(ctx, k, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// bootCloud starts new instances of every function (a cold start): the
// worker (app.Worker, handing CA and selfSigned requests off), the signer
// (app.Signer), the scheduler and the api, over the world's stores and
// the deployment's queues (created on the first boot).
func (w *world) bootCloud() error {
	c := w.cloud
	if c.workerQ == nil {
		c.workerQ = &sqs{clk: w.clk, visibility: c.s.workerVisibility}
		c.signerQ = &sqs{clk: w.clk, visibility: c.s.signerVisibility}
		c.nextSweep = w.clk.Now()
	}
	wq, sq := batch{q: c.workerQ, in: w.in}, batch{q: c.signerQ, in: w.in}
	ports := func() app.Ports {
		return app.Ports{Store: store{s: w.store, in: w.in, l: w.l}, Secrets: secrets{s: w.sec, in: w.in, l: w.l}, Queue: wq,
			Clock: w.clk, MaxQueueDelay: 15 * time.Minute}
	}
	s := app.Settings{AutoApprove: w.flow.autoApprove}
	wp := ports()
	wp.SignerQueue = sq
	wp.CertificateImporter = importer{im: w.imp, in: w.in}
	wp.ACME = dialer{d: w.env.dialer, in: w.in, l: w.l}
	ct := &challtestsrv.Provider{Server: w.env.peb.DNS, DNSAddr: w.env.dnsAddr}
	inner := ct.Factory()
	wp.DNS01 = map[string]dns01.ProviderFactory{dns01.WebhookKey(challtestsrv.SolverName): func(ctx context.Context, req dns01.ProviderRequest) (dns01.Provider, error) {
		dp, err := inner(ctx, req)
		if err != nil {
			return nil, err
		}
		return dnsProvider{p: dp, in: w.in}, nil
	}}
	ws := s
	ws.ACME = app.ACMESettings{Polling: acme.Polling{Max: time.Second}, HTTP01SelfCheck: true, HTTP01SelfCheckAddr: w.env.h01Addr, DNS01AllowInternalNames: true}
	worker, err := app.Build(wp, ws, app.Worker)
	if err != nil {
		return err
	}
	signer, err := app.Build(ports(), s, app.Signer)
	if err != nil {
		return err
	}
	c.sweepQ = &app.SweepQueue{Q: wq}
	sp := ports()
	sp.Queue = c.sweepQ
	if c.scheduler, err = app.Build(sp, s, app.Scheduler); err != nil {
		return err
	}
	if c.api, err = app.Build(ports(), s, app.API); err != nil {
		return err
	}
	c.worker = &app.Deliverer{App: worker, Queue: wq, HandOff: sq, FollowUps: 32}
	c.signer = &app.Deliverer{App: signer, Queue: wq}
	return nil
}

// driveCloud runs the deployment one message at a time, the signer's
// queue first: a delivered key goes through the function's Deliverer
// (routing, follow-ups) and is acknowledged, or made visible again after
// the retry delay; a message whose instance died is neither, and comes
// back after its queue's visibility timeout, to a new instance. The
// scheduler sweeps every sweepEvery of fake time; when nothing is
// visible the clock moves to the next message or sweep.
func (w *world) driveCloud(start time.Time) (outcome, error) {
	c := w.cloud
	var out outcome
	var ref, convergedAt time.Time
	faulted := false
	for out.steps = 0; out.steps < 20000; out.steps++ {
		if w.in.isDead() {
			w.in.revive()
			w.restarts++
			if err := w.bootCloud(); err != nil {
				return out, fmt.Errorf("restart: %w", err)
			}
			ref, convergedAt = w.clk.Now(), time.Time{}
		}
		if !faulted && w.firedLabel() != "" {
			faulted = true
			if w.in.kind == transient || w.in.kind == lost {
				ref = w.clk.Now()
			}
		}
		now := w.clk.Now()
		ok, why := w.converged()
		switch {
		case ok && convergedAt.IsZero():
			convergedAt = now
		case !ok:
			convergedAt = time.Time{}
		}
		if !ok && !ref.IsZero() && now.Sub(ref) > giveUp {
			return out, fmt.Errorf("stuck: not converged %s after the fault: %s%s", now.Sub(ref), why, w.dump())
		}
		handled := false
		for _, qd := range []struct {
			q *sqs
			d *app.Deliverer
		}{{c.signerQ, c.signer}, {c.workerQ, c.worker}} {
			m := qd.q.receive()
			if m == nil {
				continue
			}
			handled = true
			disp := qd.d.Deliver(w.ctx, m.key, m.attempt)
			if w.in.isDead() {
				break // the message comes back after its visibility timeout
			}
			if disp.Ack {
				qd.q.ack(m)
			} else {
				qd.q.nack(m, disp.RetryAfter)
			}
			break
		}
		if handled {
			continue
		}
		if !now.Before(c.nextSweep) {
			c.nextSweep = now.Add(c.s.sweepEvery)
			_, _ = c.scheduler.Kernel.Sweep(w.ctx, 1000) // a failed sweep: the next one
			if !w.in.isDead() {
				_, _ = c.sweepQ.Flush(w.ctx)
			}
			continue
		}
		next := c.nextSweep
		busy := false
		for _, q := range []*sqs{c.workerQ, c.signerQ} {
			if t, has := q.nextVisible(); has {
				next = minTime(next, t)
				busy = busy || t.Sub(now) <= quiet
			}
		}
		if ok {
			if due, err := w.store.Due(w.ctx, now.Add(quiet), 1); err == nil && len(due) > 0 {
				busy = true
			}
			if !busy {
				out.took = convergedAt.Sub(start)
				if !ref.IsZero() && convergedAt.After(ref) {
					out.lag = convergedAt.Sub(ref)
				}
				return out, nil
			}
		}
		w.clk.Set(next)
	}
	return out, errors.New("stuck: no end after 20000 steps")
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
