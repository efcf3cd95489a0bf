// Package gcpmode assembles certfn's Cloud Run services on Google Cloud
// (docs/design/roles.md and docs/ARCHITECTURE.md) from environment variables: the Firestore state store,
// the Secret Manager secret store, the Pub/Sub work queue (with Cloud
// Tasks for short delays), the Cloud DNS DNS-01 provider and the
// Certificate Manager importer (adapters/gcp, adapters/dns/clouddns), and
// the role of each service by core/app.Build. It mirrors internal/awsmode;
// what differs is only the adapters and the HTTP handling of Cloud Run
// (Pub/Sub and Cloud Tasks push, Cloud Scheduler, Google ID tokens).
package gcpmode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/pubsub/v2"
	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"google.golang.org/api/idtoken"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/clouddns"
	dnsproviders "github.com/certfn/certfn/adapters/dns/providers"
	"github.com/certfn/certfn/adapters/gcp/certmanager"
	fsstore "github.com/certfn/certfn/adapters/gcp/firestore"
	"github.com/certfn/certfn/adapters/gcp/pubsubq"
	gsm "github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/core/ports"
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
	SecretManager gsm.API
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
	// Engine is App.Engine (nil for http01).
	Engine  *engine.Engine
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
	base := app.Ports{Clock: o.Clock, Metrics: o.Metrics, Logger: o.Logger, MaxQueueDelay: pubsubq.MaxDelay,
		DNS01Resolver: o.ACME.DNS01Resolver,
		SecretReference: func(namespace, name string) string {
			return gsm.ResourceName(st.Project, st.SecretPrefix, namespace, name)
		}}
	rt.App, err = app.Assemble(ctx, base, (&gcpPorts{rt: rt, st: st, o: o}).factories(), app.Settings{
		ClusterResourceNamespace: st.ClusterResourceNamespace, AutoApprove: st.AutoApprove, Quotas: st.Quotas,
		ACME: app.ACMESettings{Polling: st.ACMEPolling, DNS01AllowInternalNames: o.ACME.DNS01AllowInternalNames, HTTP01SelfCheck: st.HTTP01Enabled,
			HTTP01SelfCheckAddr: o.ACME.HTTP01SelfCheckAddr, NamespacedServers: st.ACMEServerAllow},
	}, role)
	if err != nil {
		return nil, fmt.Errorf("gcpmode: %w", err)
	}
	rt.Engine = rt.App.Engine
	if role.Consumes != "" {
		rt.deliver = &app.Deliverer{App: rt.App, Queue: rt.queue, Metrics: o.Metrics, Log: o.Logger, Reserve: followUpReserve}
		if role.Consumes == app.WorkQueue {
			rt.deliver.FollowUps = st.FollowUps
		}
		if role.Needs(app.PortSignerQueue) {
			rt.deliver.HandOff = rt.signerQueue
		}
	}
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

// gcpPorts builds the ports over the Google Cloud adapters (or those
// Options injects), one method per port (app.PortFactories: Assemble
// calls those the role needs), recording what it built in rt. The queues
// are Pub/Sub topics sharing one client, with Cloud Tasks publishing
// delayed messages (pubsubq) where CERTFN_TASKS_QUEUE is set. Google Cloud
// has no notifier.
type gcpPorts struct {
	rt     *Runtime
	st     Settings
	o      Options
	client *pubsub.Client
	tasks  pubsubq.TasksAPI
}

func (f *gcpPorts) factories() app.PortFactories {
	return app.PortFactories{Store: f.store, Secrets: f.secrets, Queue: f.queue, SignerQueue: f.signerQueue,
		ACME: f.acme, DNS01: f.dns01, CertificateImporter: f.importer}
}

// topic builds the queue on topic name.
func (f *gcpPorts) topic(ctx context.Context, name string) (*pubsubq.Queue, error) {
	if f.client == nil {
		c, err := pubsub.NewClient(ctx, f.st.Project)
		if err != nil {
			return nil, fmt.Errorf("the Pub/Sub client: %w", err)
		}
		if f.st.TasksQueue != "" {
			tc, err := cloudtasks.NewClient(ctx)
			if err != nil {
				return nil, fmt.Errorf("the Cloud Tasks client: %w", err)
			}
			f.tasks = tc
		}
		f.client = c
	}
	return pubsubq.New(f.client, f.tasks, pubsubq.Options{Topic: name, TaskQueue: f.st.TasksQueue,
		TaskServiceAccount: f.st.TasksServiceAccount, Clock: f.o.Clock, Metrics: f.o.Metrics})
}

// store is Options.Store, else the Firestore store.
func (f *gcpPorts) store(ctx context.Context) (ports.Store, error) {
	if f.o.Store != nil {
		return f.o.Store, nil
	}
	fs, err := fsstore.Open(ctx, f.st.Project, fsstore.Options{Database: f.st.Database, Collection: f.st.Collection, Clock: f.o.Clock,
		ExpiresAt: app.ExpiresAt, Metrics: f.o.Metrics})
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", EnvDatabase, EnvCollection, err)
	}
	return fs, nil
}

// secrets builds the Secret Manager store over the classes of access.
func (f *gcpPorts) secrets(ctx context.Context, access app.SecretAccess) (ports.SecretStore, error) {
	api := f.o.SecretManager
	if api == nil {
		c, err := secretmanager.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("the Secret Manager client: %w", err)
		}
		api = gsm.ClientAPI(c)
	}
	sec, err := gsm.New(api, gsm.Options{Project: f.st.Project, Prefix: f.st.SecretPrefix, Classes: secretClasses(access, f.st.ManageCA),
		KMSKeyName: f.st.KMSKeyName, Metrics: f.o.Metrics, Clock: f.o.Clock})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSecretPrefix, err)
	}
	return sec, nil
}

// queue is Options.Queue, else the worker topic; a role that sweeps
// publishes through a batch that the sweep route flushes.
func (f *gcpPorts) queue(ctx context.Context) (ports.Queue, error) {
	q := f.o.Queue
	if q == nil {
		tq, err := f.topic(ctx, f.st.Topic)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTopic, err)
		}
		q = tq
	}
	f.rt.queue = q
	if f.rt.Role.Sweeps {
		f.rt.batch = &app.SweepQueue{Q: q, MaxBatch: pubsubq.MaxBatch}
		return f.rt.batch, nil
	}
	return q, nil
}

// signerQueue is Options.SignerQueue, else the signer topic (none when
// Options.Queue is injected without it).
func (f *gcpPorts) signerQueue(ctx context.Context) (ports.Queue, error) {
	q := f.o.SignerQueue
	switch {
	case q == nil && f.o.Queue != nil:
		return nil, fmt.Errorf("%s: the %s needs the signer queue", EnvSignerTopic, f.rt.Role.Name)
	case q == nil:
		tq, err := f.topic(ctx, f.st.SignerTopic)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvSignerTopic, err)
		}
		q = tq
	}
	f.rt.signerQueue = q
	return q, nil
}

// acme builds the ACME dialer, within CERTFN_ACME_ALLOW_PRIVATE_NETWORKS.
func (f *gcpPorts) acme(context.Context) (acme.Dialer, error) {
	return acmeadapter.NewDialer(acmeadapter.Options{Wrap: f.o.ACME.WrapTransport, Network: f.st.ACMENetwork}), nil
}

// dns01 builds the DNS-01 providers: the standard ones, Cloud DNS within
// CERTFN_CLOUDDNS_ZONES, and those of Options.
func (f *gcpPorts) dns01(context.Context) (map[string]dns01.ProviderFactory, error) {
	dnsOpts := f.o.CloudDNS
	dnsOpts.AllowedZones = f.st.CloudDNSZones
	p := dnsproviders.Standard(f.st.ACMENetwork)
	p[dns01.KeyCloudDNS] = clouddns.NewFactory(dnsOpts).Build
	for k, pf := range f.o.ACME.DNS01Providers {
		p[k] = pf
	}
	return p, nil
}

// importer is Options.CertificateImporter, else the Certificate Manager
// importer when CERTFN_CERTIFICATE_MANAGER_IMPORT is set.
func (f *gcpPorts) importer(ctx context.Context) (ports.CertificateImporter, error) {
	if f.o.CertificateImporter != nil || !f.st.CertificateManager {
		return f.o.CertificateImporter, nil
	}
	// certmanager.NewClient: the library's request logging would print
	// the private key.
	c, err := certmanager.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: Certificate Manager client: %w", EnvCertificateManager, err)
	}
	imp, err := certmanager.New(c, certmanager.Options{Project: f.st.Project, Location: f.st.CertificateManagerLoc, Deployment: f.st.SecretPrefix})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCertificateManagerLoc, err)
	}
	return imp, nil
}

// secretClasses are the Secret Manager classes access reads (core/app
// SecretAccess.Classes; manageCA: CERTFN_MANAGE_CA_CERTIFICATES), in the
// order a Get tries them.
func secretClasses(access app.SecretAccess, manageCA bool) []gsm.Class {
	read, _ := access.Classes(manageCA)
	out := make([]gsm.Class, len(read))
	for i, c := range read {
		out[i] = gsm.Class(c)
	}
	return out
}
