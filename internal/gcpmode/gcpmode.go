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
	gsm "cloud.google.com/go/secretmanager/apiv1"
	"google.golang.org/api/idtoken"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/clouddns"
	dnsproviders "github.com/certfn/certfn/adapters/dns/providers"
	"github.com/certfn/certfn/adapters/gcp/certmanager"
	"github.com/certfn/certfn/adapters/gcp/firestore"
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
	Role     Role
	Settings Settings
	Log      *slog.Logger
	App      *app.App
	// Kernel and Repo are App.Kernel and App.Repo (nil for http01).
	Kernel  *kernel.Kernel
	Repo    *repo.Repo
	handler http.Handler
	deliver *app.Deliverer
	queue   app.BatchQueue
	batch   *app.SweepQueue // scheduler: the sweep's batched publishes
	decode  pushDecoder
}

// FromEnv builds role's Runtime from the process environment and
// Application Default Credentials.
func FromEnv(ctx context.Context, role Role) (*Runtime, error) {
	return FromEnvWith(ctx, role, Options{})
}

// FromEnvWith is FromEnv with injected dependencies (see Options): it
// builds the Google Cloud adapters the role may use and hands them to
// app.Build.
func FromEnvWith(ctx context.Context, role Role, o Options) (*Runtime, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	st, err := ParseSettings(role, o.Getenv)
	if err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = CloudLogger(os.Stdout, st.LogLevel).With("function", string(role))
	}
	if o.Metrics == nil && st.Metrics == "log" {
		o.Metrics = LogMetrics{Log: o.Logger}
	}
	rt := &Runtime{Role: role, Settings: st, Log: o.Logger, queue: o.Queue, decode: o.DecodePush}
	if rt.decode == nil {
		rt.decode = defaultDecodePush
	}
	store := o.Store
	if store == nil {
		fs, err := firestore.Open(ctx, st.Project, firestore.Options{Database: st.Database, Collection: st.Collection, Clock: o.Clock,
			ExpiresAt: app.ExpiresAt, Metrics: o.Metrics})
		if err != nil {
			return nil, fmt.Errorf("gcpmode: %s/%s: %w", EnvDatabase, EnvCollection, err)
		}
		store = fs
	}
	p := app.Ports{Store: store, Clock: o.Clock, Metrics: o.Metrics, Logger: o.Logger, MaxQueueDelay: pubsubq.MaxDelay,
		SecretReference: func(namespace, name string) string {
			return secretmanager.ResourceName(st.Project, st.SecretPrefix, namespace, name)
		}}
	if role != RoleHTTP01 {
		if o.Queue == nil {
			q, sq, err := queues(ctx, st, o)
			if err != nil {
				return nil, err
			}
			o.Queue, rt.queue = q, q
			if o.SignerQueue == nil && sq != nil {
				o.SignerQueue = sq
			}
		}
		p.Queue = o.Queue
		if role == RoleScheduler {
			rt.batch = &app.SweepQueue{Q: o.Queue, MaxBatch: pubsubq.MaxBatch}
			p.Queue = rt.batch
		}
	}
	if role == RoleWorker || role == RoleSigner {
		api := o.SecretManager
		if api == nil {
			c, err := gsm.NewClient(ctx)
			if err != nil {
				return nil, fmt.Errorf("gcpmode: Secret Manager client: %w", err)
			}
			api = secretmanager.ClientAPI(c)
		}
		classes := secretmanager.SignerClasses()
		if role == RoleWorker {
			classes = secretmanager.WorkerClasses(st.ManageCA)
		}
		sec, err := secretmanager.New(api, secretmanager.Options{Project: st.Project, Prefix: st.SecretPrefix, Classes: classes, KMSKeyName: st.KMSKeyName,
			Metrics: o.Metrics, Clock: o.Clock})
		if err != nil {
			return nil, fmt.Errorf("gcpmode: %s: %w", EnvSecretPrefix, err)
		}
		p.Secrets = sec
	}
	if role == RoleWorker {
		if o.SignerQueue == nil {
			return nil, fmt.Errorf("gcpmode: %s: the worker needs the signer queue", EnvSignerTopic)
		}
		p.SignerQueue = o.SignerQueue
		p.ACME = acmeadapter.NewDialer(acmeadapter.Options{Wrap: o.ACME.WrapTransport, Network: st.ACMENetwork})
		dnsOpts := o.CloudDNS
		dnsOpts.AllowedZones = st.CloudDNSZones
		p.DNS01 = dnsproviders.Standard(st.ACMENetwork)
		p.DNS01[dns01.KeyCloudDNS] = clouddns.NewFactory(dnsOpts).Build
		for k, f := range o.ACME.DNS01Providers {
			p.DNS01[k] = f
		}
		p.DNS01Resolver = o.ACME.DNS01Resolver
		p.CertificateImporter = o.CertificateImporter
		if p.CertificateImporter == nil && st.CertificateManager {
			// certmanager.NewClient: the library's request logging would
			// print the private key.
			c, err := certmanager.NewClient(ctx)
			if err != nil {
				return nil, fmt.Errorf("gcpmode: %s: Certificate Manager client: %w", EnvCertificateManager, err)
			}
			imp, err := certmanager.New(c, certmanager.Options{Project: st.Project, Location: st.CertificateManagerLoc, Deployment: st.SecretPrefix})
			if err != nil {
				return nil, fmt.Errorf("gcpmode: %s: %w", EnvCertificateManagerLoc, err)
			}
			p.CertificateImporter = imp
		}
	}
	rt.App, err = app.Build(p, app.Settings{
		ClusterResourceNamespace: st.ClusterResourceNamespace, AutoApprove: st.AutoApprove, Quotas: st.Quotas,
		ACME: app.ACMESettings{Polling: st.ACMEPolling, DNS01AllowInternalNames: o.ACME.DNS01AllowInternalNames, HTTP01SelfCheck: st.HTTP01Enabled,
			HTTP01SelfCheckAddr: o.ACME.HTTP01SelfCheckAddr, NamespacedServers: st.ACMEServerAllow},
	}, appRoles[role])
	if err != nil {
		return nil, fmt.Errorf("gcpmode: %w", err)
	}
	rt.Kernel, rt.Repo = rt.App.Kernel, rt.App.Repo
	if role == RoleWorker || role == RoleSigner {
		rt.deliver = &app.Deliverer{App: rt.App, Queue: o.Queue, Metrics: o.Metrics, Log: o.Logger, Reserve: followUpReserve}
		if role == RoleWorker {
			rt.deliver.HandOff, rt.deliver.FollowUps = o.SignerQueue, st.FollowUps
		}
	}
	if role == RoleAPI {
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

// queues builds the worker queue (and the signer queue for the worker):
// Pub/Sub topics, with Cloud Tasks publishing delayed messages
// (pubsubq). The signer and the scheduler publish to the worker topic.
func queues(ctx context.Context, st Settings, o Options) (app.BatchQueue, ports.Queue, error) {
	client, err := pubsub.NewClient(ctx, st.Project)
	if err != nil {
		return nil, nil, fmt.Errorf("gcpmode: Pub/Sub client: %w", err)
	}
	var tasks pubsubq.TasksAPI
	if st.TasksQueue != "" {
		tc, err := cloudtasks.NewClient(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("gcpmode: Cloud Tasks client: %w", err)
		}
		tasks = tc
	}
	mk := func(topic string) (*pubsubq.Queue, error) {
		return pubsubq.New(client, tasks, pubsubq.Options{Topic: topic, TaskQueue: st.TasksQueue,
			TaskServiceAccount: st.TasksServiceAccount, Clock: o.Clock, Metrics: o.Metrics})
	}
	q, err := mk(st.Topic)
	if err != nil {
		return nil, nil, fmt.Errorf("gcpmode: %s: %w", EnvTopic, err)
	}
	if st.Role != RoleWorker {
		return q, nil, nil
	}
	sq, err := mk(st.SignerTopic)
	if err != nil {
		return nil, nil, fmt.Errorf("gcpmode: %s: %w", EnvSignerTopic, err)
	}
	return q, sq, nil
}
