// Package awsmode assembles certfn's AWS Lambda functions (// docs/design/one-step.md and docs/design/roles.md) from environment variables: the DynamoDB state store,
// the SQS queues and the secret store (Secrets Manager, or Parameter Store
// with CERTFN_SECRET_STORE=ssm; adapters/aws), handed
// to core/app.Build with each function's role (core/app/role.go), which
// holds only the ports and signers that role may use:
//
//	worker     every step except CA/selfSigned signing and CA issuer checks;
//	           signers: acme, plus a hand-off for ca/selfSigned (no CA key)
//	signer     approved CertificateRequests of CA/selfSigned issuers and CA
//	           issuers' readiness; signers ca and selfSigned; never approves
//	scheduler  the due-index sweep into the worker queue; no secret store
//	api        the engine for the HTTP API; no secret store, no signer
//	http01     the HTTP-01 responder over the state store; no engine
//
// Delivered keys run through core/app.Deliverer (worker↔signer routing and
// follow-ups, shared with internal/gcpmode); what is AWS's own is the
// Lambda event handling (lambda.go: SQS batches, the scheduler, HTTP-01 and
// the api's Function URL). The functions' mains (functions/aws/*) call
// FromEnv and lambda.Start; only they exit.
package awsmode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/aws/acm"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/adapters/aws/emf"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/adapters/aws/ssmstore"
	dnsproviders "github.com/certfn/certfn/adapters/dns/providers"
	"github.com/certfn/certfn/adapters/dns/route53"
	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// Options inject what a deployed function takes from its environment and
// the AWS default configuration chain: tests and benchmarks use them (a
// fake clock, emulator clients, counting metrics). The zero value is what
// FromEnv uses.
type Options struct {
	// Getenv reads the settings (default os.Getenv).
	Getenv func(string) string
	// Clock is the engine's clock (default the wall clock).
	Clock ports.Clock
	// Logger receives JSON logs (default: JSON to stdout at the
	// CERTFN_LOG_LEVEL level, as Lambda's JSON log format expects).
	Logger *slog.Logger
	// Metrics receives the engine's and the adapters' counters (default:
	// CloudWatch EMF lines with CERTFN_METRICS=emf, else none).
	Metrics ports.Metrics
	// MetricsOut receives the EMF lines (default os.Stdout; tests).
	MetricsOut io.Writer
	// Retry bounds the SDK retryer when clients are built here.
	Retry awscfg.Retry
	// DynamoDB, SQS and SecretsManager replace the SDK clients built from
	// awscfg.Load (emulators, test doubles). Nil ones are built.
	DynamoDB       dynamo.API
	SQS            sqsq.API
	SecretsManager secrets.API
	// SSM replaces the Parameter Store client of the secret store when
	// CERTFN_SECRET_STORE=ssm; nil: built from awscfg.Load.
	SSM ssmstore.API
	// ACM replaces the ACM client of the worker's importer
	// (CERTFN_ACM_IMPORT=true); nil: built from awscfg.Load.
	ACM acm.API
	// EventBridge replaces the EventBridge client of the worker's
	// notifier (CERTFN_NOTIFY_EVENT_BUS set); nil: built from awscfg.Load.
	EventBridge ebnotify.API
	// WrapStore, when set, wraps the state store the engine writes through
	// (tests inject failures).
	WrapStore func(ports.Store) ports.Store
	// ACME configures the worker's ACME issuer.
	ACME ACMEOptions
}

// ACMEOptions configure the worker's ACME issuer (see localmode.ACMEOptions).
type ACMEOptions struct {
	// WrapTransport wraps the ACME client's HTTP transport.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// HTTP01SelfCheckAddr, when set, is dialled by the HTTP-01 self-check
	// instead of <dnsName>:80.
	HTTP01SelfCheckAddr string
	// DNS01Providers are added to the DNS-01 providers (rfc2136 is built in).
	DNS01Providers map[string]dns01.ProviderFactory
	// DNS01Resolver says which DNS servers DNS-01 checks ask.
	DNS01Resolver dns01.Resolver
	// DNS01AllowInternalNames accepts internal names (private ACME servers).
	DNS01AllowInternalNames bool
	// MaxChallengesInFlight bounds the Challenges processing at once.
	MaxChallengesInFlight int
}

// Runtime is one function's assembly. Its handlers (lambda.go) are safe
// for concurrent use.
type Runtime struct {
	Role     Role
	Settings Settings
	Log      *slog.Logger
	Clock    ports.Clock
	// App is the function's role assembled by core/app.Build.
	App *app.App
	// Kernel and Repo are App.Kernel and App.Repo (nil for the http01
	// role).
	Kernel *kernel.Kernel
	Repo   *repo.Repo
	// Store is the DynamoDB store (Counts() for cost figures).
	Store *dynamo.Store
	// Queue is the worker queue (nil for http01).
	Queue *sqsq.Queue
	// SignerQueue is the signer queue: set for the worker (where it hands
	// work to the signer) and for the signer when CERTFN_SIGNER_QUEUE_URL
	// is set (the queue it consumes).
	SignerQueue *sqsq.Queue
	// Secrets is the secret store (worker and signer only): the Secrets
	// Manager store (*secrets.Store) or, with CERTFN_SECRET_STORE=ssm, the
	// Parameter Store one (*ssmstore.Store).
	Secrets ports.SecretStore
	// HTTP01 answers /.well-known/acme-challenge/{token} (http01 role only).
	HTTP01 http.Handler
	// API serves the HTTP API (api role only).
	API http.Handler

	getenv  func(string) string
	sqs     sqsq.API
	store   ports.Store     // what the engine uses (maybe wrapped)
	batch   *app.SweepQueue // scheduler: the sweep's batched sends
	qmu     sync.Mutex
	queues  map[string]*sqsq.Queue // consumed queues by event source ARN
	metrics ports.Metrics
	emf     *emf.Sink
	deliver *app.Deliverer // worker and signer
}

// appRoles maps each function to its core/app role.
var appRoles = map[Role]app.Role{RoleWorker: app.Worker, RoleSigner: app.Signer, RoleScheduler: app.Scheduler,
	RoleAPI: app.API, RoleHTTP01: app.HTTP01}

// FromEnv builds role's Runtime from the process environment and the AWS
// default configuration chain (credentials of the function's role,
// AWS_REGION, AWS_ENDPOINT_URL*). It makes no network call. Errors name
// the variables that are missing or invalid.
func FromEnv(ctx context.Context, role Role) (*Runtime, error) {
	return FromEnvWith(ctx, role, Options{})
}

// FromEnvWith is FromEnv with injected dependencies (see Options): it
// builds the AWS adapters the role may use from Settings and hands them
// to app.Build.
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
		o.Logger = slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: st.LogLevel})).With("function", string(role))
	}
	if err := o.clients(ctx); err != nil {
		return nil, err
	}
	var sink *emf.Sink
	if o.Metrics == nil && st.Metrics == "emf" {
		out := o.MetricsOut
		if out == nil {
			out = os.Stdout
		}
		sink = emf.New(emf.Options{Function: string(role), Metrics: ExportedMetrics, Out: out})
		o.Metrics = sink
	}
	rt := &Runtime{Role: role, Settings: st, Log: o.Logger, Clock: o.Clock, getenv: o.Getenv, sqs: o.SQS,
		queues: map[string]*sqsq.Queue{}, metrics: o.Metrics, emf: sink}
	rt.Store, err = dynamo.New(o.DynamoDB, dynamo.Options{Table: st.Table, Shards: st.DueShards, Clock: o.Clock, Metrics: o.Metrics, ExpiresAt: app.ExpiresAt})
	if err != nil {
		return nil, fmt.Errorf("awsmode: %s: %w", EnvTable, err)
	}
	rt.store = rt.Store
	if o.WrapStore != nil {
		rt.store = o.WrapStore(rt.store)
	}
	p := app.Ports{Store: rt.store, Clock: o.Clock, Metrics: o.Metrics, Logger: o.Logger, MaxQueueDelay: sqsq.MaxDelay,
		SecretReference: st.secretReference}
	if role != RoleHTTP01 {
		if rt.Queue, err = sqsq.New(o.SQS, sqsq.Options{QueueURL: st.QueueURL, Metrics: o.Metrics}); err != nil {
			return nil, fmt.Errorf("awsmode: %s: %w", EnvQueueURL, err)
		}
		p.Queue = rt.Queue
	}
	if role == RoleScheduler {
		rt.batch = &app.SweepQueue{Q: rt.Queue}
		p.Queue = rt.batch
	}
	if st.SignerQueueURL != "" && (role == RoleWorker || role == RoleSigner) {
		if rt.SignerQueue, err = sqsq.New(o.SQS, sqsq.Options{QueueURL: st.SignerQueueURL, Metrics: o.Metrics}); err != nil {
			return nil, fmt.Errorf("awsmode: %s: %w", EnvSignerQueueURL, err)
		}
		if role == RoleWorker {
			p.SignerQueue = rt.SignerQueue
		}
	}
	if role == RoleWorker || role == RoleSigner {
		if rt.Secrets, err = o.secretStore(ctx, st); err != nil {
			return nil, err
		}
		p.Secrets = rt.Secrets
	}
	if role == RoleWorker {
		p.ACME = acmeadapter.NewDialer(acmeadapter.Options{Wrap: o.ACME.WrapTransport, Network: st.ACMENetwork})
		p.DNS01 = dnsproviders.Standard(st.ACMENetwork)
		p.DNS01[dns01.KeyRoute53] = route53.NewFactory(route53.Options{AllowedZoneIDs: st.Route53ZoneIDs, Retry: o.Retry}).Build
		for k, f := range o.ACME.DNS01Providers {
			p.DNS01[k] = f
		}
		p.DNS01Resolver = o.ACME.DNS01Resolver
		if st.ACMImport {
			if p.CertificateImporter, err = o.acmImporter(ctx, st); err != nil {
				return nil, err
			}
		}
		if st.NotifyEventBus != "" {
			if p.Notifier, err = o.notifier(ctx, st); err != nil {
				return nil, err
			}
		}
	}
	rt.App, err = app.Build(p, app.Settings{
		ClusterResourceNamespace: st.ClusterResourceNamespace, AutoApprove: st.AutoApprove, Quotas: st.Quotas,
		ACME: app.ACMESettings{Polling: st.ACMEPolling, MaxChallengesInFlight: o.ACME.MaxChallengesInFlight,
			DNS01AllowInternalNames: o.ACME.DNS01AllowInternalNames,
			HTTP01SelfCheck:         st.HTTP01Enabled, HTTP01SelfCheckAddr: o.ACME.HTTP01SelfCheckAddr,
			NamespacedServers: st.ACMEServerAllow},
		NotifyExpiryWindow: time.Duration(st.NotifyExpiryDays) * 24 * time.Hour,
	}, appRoles[role])
	if err != nil {
		return nil, fmt.Errorf("awsmode: %w", err)
	}
	rt.Kernel, rt.Repo, rt.HTTP01 = rt.App.Kernel, rt.App.Repo, rt.App.HTTP01
	if role == RoleWorker || role == RoleSigner {
		rt.deliver = &app.Deliverer{App: rt.App, Queue: rt.Queue, Metrics: o.Metrics, Log: o.Logger, Reserve: followUpReserve}
		if role == RoleWorker {
			rt.deliver.FollowUps = st.FollowUps
			if rt.SignerQueue != nil {
				rt.deliver.HandOff = rt.SignerQueue
			}
		}
	}
	if role == RoleAPI {
		if rt.API, err = httpapi.New(httpapi.Config{Service: rt.App.Service, Authenticate: IAMAuthenticator(st.APIAdmins),
			MaxBody: st.APIMaxBody, Logger: o.Logger}); err != nil {
			return nil, fmt.Errorf("awsmode: %w", err)
		}
	}
	return rt, nil
}

// clients builds the SDK clients that were not injected, from one default
// configuration.
func (o *Options) clients(ctx context.Context) error {
	if o.DynamoDB != nil && o.SQS != nil && o.SecretsManager != nil {
		return nil
	}
	cfg, err := awscfg.Load(ctx, o.Retry)
	if err != nil {
		return fmt.Errorf("awsmode: %w", err)
	}
	if o.DynamoDB == nil {
		o.DynamoDB = dynamodb.NewFromConfig(cfg)
	}
	if o.SQS == nil {
		o.SQS = sqs.NewFromConfig(cfg)
	}
	if o.SecretsManager == nil {
		o.SecretsManager = sm.NewFromConfig(cfg)
	}
	return nil
}

// secretStore builds the worker's or signer's secret store
// (CERTFN_SECRET_STORE).
func (o *Options) secretStore(ctx context.Context, st Settings) (ports.SecretStore, error) {
	if st.SecretStore != SecretStoreSSM {
		s, err := secrets.New(o.SecretsManager, secrets.Options{Prefix: st.SecretPrefix, KMSKeyID: st.KMSKeyID, Metrics: o.Metrics})
		if err != nil {
			return nil, fmt.Errorf("awsmode: %s: %w", EnvSecretPrefix, err)
		}
		return s, nil
	}
	client := o.SSM
	if client == nil {
		cfg, err := awscfg.Load(ctx, o.Retry)
		if err != nil {
			return nil, fmt.Errorf("awsmode: %w", err)
		}
		client = ssm.NewFromConfig(cfg)
	}
	s, err := ssmstore.New(client, ssmstore.Options{Prefix: st.SecretPrefix, Classes: st.SecretClasses, KMSKeyID: st.KMSKeyID, Metrics: o.Metrics})
	if err != nil {
		return nil, fmt.Errorf("awsmode: %s: %w", EnvSecretPrefix, err)
	}
	return s, nil
}

// acmImporter builds the worker's ACM importer (CERTFN_ACM_IMPORT): new
// imports are tagged with the deployment's name (acm.DeploymentFromEnv),
// which the worker's IAM policy requires.
func (o *Options) acmImporter(ctx context.Context, st Settings) (*acm.Importer, error) {
	client := o.ACM
	if client == nil {
		cfg, err := awscfg.Load(ctx, o.Retry)
		if err != nil {
			return nil, fmt.Errorf("awsmode: %w", err)
		}
		client = awsacm.NewFromConfig(cfg)
	}
	imp, err := acm.New(client, acm.Options{Deployment: acm.DeploymentFromEnv(o.Getenv, cmp.Or(st.SecretPrefix, "certfn"))})
	if err != nil {
		return nil, fmt.Errorf("awsmode: %s: %w", EnvACMImport, err)
	}
	return imp, nil
}

// notifier builds the worker's EventBridge notifier (CERTFN_NOTIFY_EVENT_BUS):
// events name the deployment as the ACM importer's tags do
// (acm.DeploymentFromEnv: the Terraform module's name_prefix).
func (o *Options) notifier(ctx context.Context, st Settings) (*ebnotify.Notifier, error) {
	client := o.EventBridge
	if client == nil {
		cfg, err := awscfg.Load(ctx, o.Retry)
		if err != nil {
			return nil, fmt.Errorf("awsmode: %w", err)
		}
		client = eventbridge.NewFromConfig(cfg)
	}
	n, err := ebnotify.New(client, ebnotify.Options{EventBus: st.NotifyEventBus, Deployment: acm.DeploymentFromEnv(o.Getenv, cmp.Or(st.SecretPrefix, "certfn"))})
	if err != nil {
		return nil, fmt.Errorf("awsmode: %s: %w", EnvNotifyEventBus, err)
	}
	return n, nil
}

// ExportedMetrics are the metrics CERTFN_METRICS=emf sends to CloudWatch
// (namespace certfn, dimension Function): few, since each is billed as a
// custom metric. CertificateExpirySeconds' daily Minimum is the soonest
// expiry among the Certificates (each is resynced daily), which the
// Terraform module alarms on.
var ExportedMetrics = map[string]emf.Export{
	certificates.MetricExpirySeconds: {Name: "CertificateExpirySeconds", Unit: "Seconds"},
	"certfn_permanent_errors_total":  {Name: "PermanentErrors", Unit: "Count"},
	"certfn_transient_errors_total":  {Name: "TransientErrors", Unit: "Count"},
	// Notifications that EventBridge refused for good (a permission or
	// the bus missing): the step retries them hourly and returns no error.
	certificates.MetricNotificationFailures: {Name: "NotificationFailures", Unit: "Count"},
	// KEP-2784's CertificateSigningRequest counters (docs/design/request-duration.md: CSRs that
	// asked for expirationSeconds, and those whose certificate honoured
	// it), written by the function that signs them; published only in
	// invocations that sign such a CSR.
	certificatesigningrequests.MetricRequestedDuration: {Name: "CSRRequestedDuration", Unit: "Count"},
	certificatesigningrequests.MetricHonoredDuration:   {Name: "CSRHonoredDuration", Unit: "Count"},
}

// flushMetrics writes the invocation's EMF line, if metrics are exported.
func (rt *Runtime) flushMetrics() {
	if rt.emf == nil {
		return
	}
	if err := rt.emf.Flush(rt.Clock.Now()); err != nil {
		rt.Log.Warn("metrics", "err", err)
	}
}

// ClientsForEndpoints returns SDK clients for explicit endpoints (emulators,
// LocalStack, test doubles), with static test credentials: what tests and
// the cold-start benchmark pass in Options. An empty endpoint leaves that
// client nil (built from the default chain).
func ClientsForEndpoints(dynamoEP, sqsEP, secretsEP string, r awscfg.Retry) (dynamo.API, sqsq.API, secrets.API) {
	var (
		d  dynamo.API
		q  sqsq.API
		sc secrets.API
	)
	if dynamoEP != "" {
		d = dynamodb.NewFromConfig(awscfg.ForEndpoint(dynamoEP, r))
	}
	if sqsEP != "" {
		q = sqs.NewFromConfig(awscfg.ForEndpoint(sqsEP, r))
	}
	if secretsEP != "" {
		sc = sm.NewFromConfig(awscfg.ForEndpoint(secretsEP, r))
	}
	return d, q, sc
}

// followUpReserve is the invocation time the worker's follow-ups leave unused.
const followUpReserve = 10 * time.Second

// errNoEngine is returned by the queue and schedule handlers of roles
// that have none.
var errNoEngine = errors.New("this function has no engine")
