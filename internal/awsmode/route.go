package awsmode

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
)

// Routing between the worker and the signer, and the follow-ups of one
// delivery, are core/app's Deliverer (the same on every cloud); the
// Runtime's Deliverer is built in FromEnvWith for the worker and signer.

// Handle runs one received key for the worker or the signer, sends the
// keys its step woke to the worker queue and returns what to do with the
// message (app.Deliverer.DeliverOne: no follow-ups).
func (rt *Runtime) Handle(ctx context.Context, key api.Key, attempt int) kernel.Disposition {
	if rt.deliver == nil {
		return kernel.Disposition{Ack: true, Err: fmt.Errorf("the %s function consumes no queue: %s dropped", rt.Role.Name, key)}
	}
	return rt.deliver.DeliverOne(ctx, key, attempt)
}

func (rt *Runtime) inc(name string, labels ...string) {
	if rt.metrics != nil {
		rt.metrics.Inc(name, labels...)
	}
}
