// Package gcpmode assembles certfn's Cloud Run services on Google Cloud
// (docs/design/roles.md and docs/ARCHITECTURE.md) from environment
// variables. Each service is one of core/app's Functions, by name
// (CERTFN_FUNCTION); its role's data says which ports it is built over,
// and core/app.Assemble builds those with this package's factories
// (ports.go) over the Google Cloud adapters: the Firestore state store,
// the Secret Manager secret store, the Pub/Sub work queue (with Cloud
// Tasks for short delays), the Cloud DNS DNS-01 provider, the
// Certificate Manager importer and the Pub/Sub notifier (adapters/gcp,
// adapters/dns/clouddns).
// ParseSettings requires the variables of those ports only. It mirrors
// internal/awsmode; what differs is only the adapters and the HTTP
// handling of Cloud Run (Pub/Sub and Cloud Tasks push, Cloud Scheduler,
// Google ID tokens).
package gcpmode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"google.golang.org/api/idtoken"

	"github.com/certfn/certfn/adapters/dns/clouddns"
	"github.com/certfn/certfn/adapters/gcp/pubsubq"
	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// Options inject what a deployed service takes from its environment and
// Application Default Credentials: tests use them (a fake clock, emulator
// clients, doubles). The zero value is what FromEnv uses.
type Options struct {
	// Getenv reads the settings (default os.Getenv).
	Getenv func(string) string
	// Clock is the domain clock (default the wall clock).
	Clock ports.Clock
	// Logger receives Cloud Logging JSON (default: JSON to stdout with
	// "severity" and "message" keys, at CERTFN_LOG_LEVEL).
	Logger *slog.Logger
	// Metrics receives counters and observations (default none).
	Metrics ports.Metrics
	// Store replaces the Firestore store (nil: opened from the settings).
	Store ports.Store
	// SecretManager replaces the Secret Manager client (nil: built).
	SecretManager secretmanager.API
	// Queue and SignerQueue are the worker and signer queues (required
	// for the roles that send work: worker, signer, scheduler, api).
	Queue       app.BatchQueue
	SignerQueue ports.Queue
	// TokenValidator checks the api's ID tokens (nil: Google's).
	TokenValidator TokenValidator
	// CloudDNS configures the Cloud DNS provider (endpoints of a double).
	CloudDNS clouddns.Options
	// CertificateImporter imports key pairs into Certificate Manager
	// (nil: none, or built when CERTFN_CERTIFICATE_MANAGER_IMPORT is set).
	CertificateImporter ports.CertificateImporter
	// Notifier publishes the worker's notifications (nil: none, or the
	// Pub/Sub notifier when CERTFN_NOTIFY_TOPIC is set).
	Notifier ports.Notifier
	// ACME configures the worker's ACME issuer (tests).
	ACME ACMEOptions
	// DecodePush reads a push request (default pubsubq.DecodePush).
	DecodePush func(r *http.Request, maxBody int64) (api.Key, int, error)
}

// ACMEOptions configure the worker's ACME issuer (see awsmode.ACMEOptions).
type ACMEOptions struct {
	WrapTransport           func(http.RoundTripper) http.RoundTripper
	HTTP01SelfCheckAddr     string
	DNS01Providers          map[string]dns01.ProviderFactory
	DNS01Resolver           dns01.Resolver
	DNS01AllowInternalNames bool
}

// Runtime is one service's assembly; it serves Cloud Run's HTTP requests.
type Runtime struct {
	// Role is the service's role (core/app.Functions).
	Role     app.Role
	Settings Settings
	Log      *slog.Logger
	App      *app.App
	// Kernel and Repo are App.Kernel and App.Repo (nil for http01).
	Kernel  *kernel.Kernel
	Repo    *repo.Repo
	handler http.Handler
	deliver *app.Deliverer
	queue   app.BatchQueue  // the worker queue (roles with the queue port)
	batch   *app.SweepQueue // roles that sweep: the sweep's batched publishes
	// signerQueue is the signer queue (roles with the signer queue port).
	signerQueue ports.Queue
	decode      pushDecoder
}

// FromEnv builds the Runtime of the service called name (core/app
// Functions: worker, signer, scheduler, api, http01) from the process
// environment and Application Default Credentials.
func FromEnv(ctx context.Context, name string) (*Runtime, error) {
	return FromEnvWith(ctx, name, Options{})
}

// FromEnvWith is FromEnv with injected dependencies (see Options): it
// hands core/app.Assemble a factory per port over the Google Cloud
// adapters, which builds those the role needs.
func FromEnvWith(ctx context.Context, name string, o Options) (*Runtime, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	st, err := ParseSettings(name, o.Getenv)
	if err != nil {
		return nil, err
	}
	role := st.Role
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = CloudLogger(os.Stdout, st.LogLevel).With("function", role.Name)
	}
	if o.Metrics == nil && st.Metrics == "log" {
		o.Metrics = LogMetrics{Log: o.Logger}
	}
	rt := &Runtime{Role: role, Settings: st, Log: o.Logger, decode: o.DecodePush}
	if rt.decode == nil {
		rt.decode = defaultDecodePush
	}
	base := app.Ports{Clock: o.Clock, Metrics: o.Metrics, Logger: o.Logger, MaxQueueDelay: pubsubq.MaxDelay, EventsExpire: true,
		DNS01Resolver: o.ACME.DNS01Resolver,
		SecretReference: func(namespace, name string) string {
			return secretmanager.ResourceName(st.Project, st.SecretPrefix, namespace, name)
		}}
	rt.App, err = app.Assemble(ctx, base, (&gcpPorts{rt: rt, st: st, o: o}).factories(), app.Settings{
		ClusterResourceNamespace: st.ClusterResourceNamespace, AutoApprove: st.AutoApprove, Quotas: st.Quotas,
		ACME: app.ACMESettings{Polling: st.ACMEPolling, DNS01AllowInternalNames: o.ACME.DNS01AllowInternalNames, HTTP01SelfCheck: st.HTTP01Enabled,
			HTTP01SelfCheckAddr: o.ACME.HTTP01SelfCheckAddr, NamespacedServers: st.ACMEServerAllow},
		NotifyExpiryWindow: time.Duration(st.NotifyExpiryDays) * 24 * time.Hour,
	}, role)
	if err != nil {
		return nil, fmt.Errorf("gcpmode: %w", err)
	}
	rt.Kernel, rt.Repo = rt.App.Kernel, rt.App.Repo
	rt.deliver = app.NewDeliverer(rt.App, app.Deliverer{Queue: rt.queue, HandOff: rt.signerQueue, FollowUps: st.FollowUps,
		Metrics: o.Metrics, Log: o.Logger, Reserve: followUpReserve})
	if role.ServesAPI {
		v := o.TokenValidator
		if v == nil {
			gv, err := idtoken.NewValidator(ctx)
			if err != nil {
				return nil, fmt.Errorf("gcpmode: ID token validator: %w", err)
			}
			v = gv
		}
		h, err := httpapi.New(httpapi.Config{Service: rt.App.Service, Authenticate: GoogleAuthenticator(v, st.APIAudiences, st.APIAdmins),
			MaxBody: st.APIMaxBody, Logger: o.Logger})
		if err != nil {
			return nil, fmt.Errorf("gcpmode: %w", err)
		}
		rt.handler = h
	}
	return rt, nil
}

// errNoHandler answers a request a role does not serve.
var errNoHandler = errors.New("this service does not serve that path")

// defaultDecodePush is the Pub/Sub push decoder.
var defaultDecodePush pushDecoder = pubsubq.DecodePush
