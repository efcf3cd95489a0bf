// Package awsmode assembles certfn's AWS Lambda functions
// (docs/design/one-step.md and docs/design/roles.md) from environment
// variables. Each function is one of core/app's Functions, by name; its
// role's data says which ports it is built over, and core/app.Assemble
// builds those with this package's factories (ports.go) over the AWS
// adapters (adapters/aws): the DynamoDB state store, the SQS queues, the
// secret store (Secrets Manager, or Parameter Store with
// CERTFN_SECRET_STORE=ssm), the ACM importer, the EventBridge notifier and
// the Route53 DNS-01 provider. ParseSettings requires the variables of those ports only.
//
// Delivered keys run through core/app.Deliverer (worker↔signer routing and
// follow-ups, shared with internal/gcpmode); what is AWS's own is the
// environment and the Lambda event handling (lambda.go: SQS batches, the
// scheduler, HTTP-01 and the api's Function URL). The functions' mains
// (functions/aws/*) call Main with their role's name; only they exit.
package awsmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/aws/acm"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/adapters/aws/emf"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/adapters/aws/ssmstore"
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
	// Role is the function's role (core/app.Functions).
	Role     app.Role
	Settings Settings
	Log      *slog.Logger
	Clock    ports.Clock
	// App is the function's role assembled by core/app.Assemble.
	App *app.App
	// Kernel and Repo are App.Kernel and App.Repo (nil for the http01
	// role).
	Kernel *kernel.Kernel
	Repo   *repo.Repo
	// Store is the DynamoDB store (Counts() for cost figures).
	Store *dynamo.Store
	// Queue is the worker queue (roles with the queue port).
	Queue *sqsq.Queue
	// SignerQueue is the signer queue: set where the role hands work to
	// the signer (the signer queue port) and where it consumes it and
	// CERTFN_SIGNER_QUEUE_URL is set.
	SignerQueue *sqsq.Queue
	// Secrets is the secret store (roles with the secret store port): the
	// Secrets Manager store (*secrets.Store) or, with
	// CERTFN_SECRET_STORE=ssm, the Parameter Store one (*ssmstore.Store).
	Secrets ports.SecretStore
	// HTTP01 answers /.well-known/acme-challenge/{token} (roles with HTTP01).
	HTTP01 http.Handler
	// API serves the HTTP API (roles that serve it).
	API http.Handler

	getenv  func(string) string
	sqs     sqsq.API
	store   ports.Store     // what the engine uses (maybe wrapped)
	batch   *app.SweepQueue // roles that sweep: the sweep's batched sends
	qmu     sync.Mutex
	queues  map[string]*sqsq.Queue // consumed queues by event source ARN
	metrics ports.Metrics
	emf     *emf.Sink
	deliver *app.Deliverer // roles that consume a queue
	handOff ports.Queue    // the signer queue of a role with its port
}

// FromEnv builds the Runtime of the function called name (core/app
// Functions: worker, signer, scheduler, api, http01) from the process
// environment and the AWS default configuration chain (credentials of the
// function's role, AWS_REGION, AWS_ENDPOINT_URL*). It makes no network
// call. Errors name the variables that are missing or invalid.
func FromEnv(ctx context.Context, name string) (*Runtime, error) {
	return FromEnvWith(ctx, name, Options{})
}

// FromEnvWith is FromEnv with injected dependencies (see Options): it
// hands core/app.Assemble a factory per port over the AWS adapters, which
// builds those the role needs.
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
		o.Logger = slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: st.LogLevel})).With("function", role.Name)
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
		sink = emf.New(emf.Options{Function: role.Name, Metrics: ExportedMetrics, Out: out})
		o.Metrics = sink
	}
	rt := &Runtime{Role: role, Settings: st, Log: o.Logger, Clock: o.Clock, getenv: o.Getenv, sqs: o.SQS,
		queues: map[string]*sqsq.Queue{}, metrics: o.Metrics, emf: sink}
	base := app.Ports{Clock: o.Clock, Metrics: o.Metrics, Logger: o.Logger, MaxQueueDelay: sqsq.MaxDelay, EventsExpire: true,
		DNS01Resolver: o.ACME.DNS01Resolver, SecretReference: st.secretReference}
	rt.App, err = app.Assemble(ctx, base, awsPorts{rt: rt, st: st, o: &o}.factories(), app.Settings{
		ClusterResourceNamespace: st.ClusterResourceNamespace, AutoApprove: st.AutoApprove, Quotas: st.Quotas,
		ACME: app.ACMESettings{Polling: st.ACMEPolling, MaxChallengesInFlight: o.ACME.MaxChallengesInFlight,
			DNS01AllowInternalNames: o.ACME.DNS01AllowInternalNames,
			HTTP01SelfCheck:         st.HTTP01Enabled, HTTP01SelfCheckAddr: o.ACME.HTTP01SelfCheckAddr,
			NamespacedServers: st.ACMEServerAllow},
		NotifyExpiryWindow: time.Duration(st.NotifyExpiryDays) * 24 * time.Hour,
	}, role)
	if err != nil {
		return nil, fmt.Errorf("awsmode: %w", err)
	}
	rt.Kernel, rt.Repo, rt.HTTP01 = rt.App.Kernel, rt.App.Repo, rt.App.HTTP01
	if role.Consumes == app.SignerQueue && st.SignerQueueURL != "" {
		// The queue it consumes, for retry delays (consumedQueue).
		if rt.SignerQueue, err = sqsq.New(o.SQS, sqsq.Options{QueueURL: st.SignerQueueURL, Metrics: o.Metrics}); err != nil {
			return nil, fmt.Errorf("awsmode: %s: %w", EnvSignerQueueURL, err)
		}
	}
	rt.deliver = app.NewDeliverer(rt.App, app.Deliverer{Queue: rt.Queue, HandOff: rt.handOff, FollowUps: st.FollowUps,
		Metrics: o.Metrics, Log: o.Logger, Reserve: followUpReserve})
	if role.ServesAPI {
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
