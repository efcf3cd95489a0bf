package app

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/ports"
)

// PortFactories build a deployment's adapters, one factory per Port: a
// cloud writes how each adapter is built from its configuration, and the
// role's data decides which are (Assemble). A factory is called at most
// once, only for a role that needs its port; it makes no network call
// (as the adapters' constructors do not). Its error is returned as it is,
// so it names what could not be built (the variable, the client).
type PortFactories struct {
	// Store builds the state store (every role).
	Store func(context.Context) (ports.Store, error)
	// Secrets builds the secret store, scoped to access where the
	// backend scopes credentials (secret classes, paths): a role is given
	// what its SecretAccess says and no more.
	Secrets func(ctx context.Context, access SecretAccess) (ports.SecretStore, error)
	// Queue builds the work queue the role's engine sends keys to.
	Queue func(context.Context) (ports.Queue, error)
	// SignerQueue builds the signer queue a role hands requests off to.
	SignerQueue func(context.Context) (ports.Queue, error)
	// ACME builds the ACME dialer.
	ACME func(context.Context) (acme.Dialer, error)
	// DNS01 builds the DNS-01 providers by key (dns01.KeyRFC2136, …).
	DNS01 func(context.Context) (map[string]dns01.ProviderFactory, error)
	// CertificateImporter builds the importer of issued key pairs; nil
	// (the factory or what it returns): not configured.
	CertificateImporter func(context.Context) (ports.CertificateImporter, error)
	// Notifier builds the notifier; nil (the factory or what it returns):
	// notifications are off.
	Notifier func(context.Context) (ports.Notifier, error)
}

// Assemble is the one assembly of a deployed role: it builds the ports
// role needs (role.Ports(), in that order) with f, never calling the
// factory of a port the role lacks, and hands them with base's other
// fields (clock, metrics, logger, queue delay, DNS-01 resolver, secret
// reference) to Build. base must hold no adapter: a port set there would
// bypass the role's data. A needed port without a factory is an error
// naming both, except an optional one (Port.Optional), which stays unset.
func Assemble(ctx context.Context, base Ports, f PortFactories, s Settings, role Role) (*App, error) {
	for _, port := range AllPorts {
		if base.has(port) {
			return nil, fmt.Errorf("app: assemble the %s role: Ports.%s is set: adapters come from PortFactories", role.Name, port)
		}
	}
	p := base
	for _, port := range role.Ports() {
		built, err := f.build(ctx, port, role, &p)
		if err != nil {
			return nil, err
		}
		if !built && !port.Optional() {
			return nil, fmt.Errorf("app: the %s role needs the %s port: PortFactories builds none", role.Name, port)
		}
	}
	return Build(p, s, role)
}

// build sets p's field of port with its factory; built is false when
// there is no factory or it built nothing.
func (f PortFactories) build(ctx context.Context, port Port, role Role, p *Ports) (built bool, err error) {
	switch port {
	case PortStore:
		built, err = run(ctx, f.Store, &p.Store)
	case PortSecrets:
		if f.Secrets != nil {
			p.Secrets, err = f.Secrets(ctx, role.SecretAccess())
			built = p.Secrets != nil
		}
	case PortQueue:
		built, err = run(ctx, f.Queue, &p.Queue)
	case PortSignerQueue:
		built, err = run(ctx, f.SignerQueue, &p.SignerQueue)
	case PortACME:
		built, err = run(ctx, f.ACME, &p.ACME)
	case PortDNS01:
		if f.DNS01 != nil {
			p.DNS01, err = f.DNS01(ctx)
			built = p.DNS01 != nil
		}
	case PortCertificateImporter:
		built, err = run(ctx, f.CertificateImporter, &p.CertificateImporter)
	case PortNotifier:
		built, err = run(ctx, f.Notifier, &p.Notifier)
	default:
		return false, fmt.Errorf("app: unknown port %q", port)
	}
	return built && err == nil, err
}

// run calls factory, if any, into *dst.
func run[T comparable](ctx context.Context, factory func(context.Context) (T, error), dst *T) (bool, error) {
	if factory == nil {
		return false, nil
	}
	v, err := factory(ctx)
	if err != nil {
		return false, err
	}
	*dst = v
	var zero T
	return v != zero, nil
}

// has reports whether p's field of port is set.
func (p Ports) has(port Port) bool {
	switch port {
	case PortStore:
		return p.Store != nil
	case PortSecrets:
		return p.Secrets != nil
	case PortQueue:
		return p.Queue != nil
	case PortSignerQueue:
		return p.SignerQueue != nil
	case PortACME:
		return p.ACME != nil
	case PortDNS01:
		return p.DNS01 != nil
	case PortCertificateImporter:
		return p.CertificateImporter != nil
	case PortNotifier:
		return p.Notifier != nil
	}
	return false
}

// NewDeliverer returns the Deliverer of a's role over d's queues and
// settings, or nil for a role that consumes no queue: it keeps d.HandOff
// only for a role with the signer queue port and d.FollowUps only for one
// that consumes the work queue.
func NewDeliverer(a *App, d Deliverer) *Deliverer {
	role := a.Role
	if role.Consumes == "" {
		return nil
	}
	d.App = a
	if role.Consumes != WorkQueue {
		d.FollowUps = 0
	}
	if !role.Needs(PortSignerQueue) {
		d.HandOff = nil
	}
	return &d
}
