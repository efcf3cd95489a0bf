package awsmode

import (
	"cmp"
	"context"
	"fmt"

	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/aws/acm"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/adapters/aws/ssmstore"
	dnsproviders "github.com/certfn/certfn/adapters/dns/providers"
	"github.com/certfn/certfn/adapters/dns/route53"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
)

// awsPorts builds the ports over the AWS adapters, one method per port
// (app.PortFactories: Assemble calls those the role needs), recording
// what it built in rt.
type awsPorts struct {
	rt *Runtime
	st Settings
	o  *Options
}

func (f awsPorts) factories() app.PortFactories {
	return app.PortFactories{Store: f.store, Secrets: f.secrets, Queue: f.queue, SignerQueue: f.signerQueue,
		ACME: f.acme, DNS01: f.dns01, CertificateImporter: f.importer, Notifier: f.notifier}
}

// store builds the DynamoDB state store (wrapped by Options.WrapStore).
func (f awsPorts) store(context.Context) (ports.Store, error) {
	s, err := dynamo.New(f.o.DynamoDB, dynamo.Options{Table: f.st.Table, Shards: f.st.DueShards, Clock: f.o.Clock, Metrics: f.o.Metrics, ExpiresAt: app.ExpiresAt})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvTable, err)
	}
	f.rt.Store, f.rt.store = s, s
	if f.o.WrapStore != nil {
		f.rt.store = f.o.WrapStore(s)
	}
	return f.rt.store, nil
}

// queue builds the worker queue; a role that sweeps sends through a
// batch that HandleSchedule flushes.
func (f awsPorts) queue(context.Context) (ports.Queue, error) {
	q, err := sqsq.New(f.o.SQS, sqsq.Options{QueueURL: f.st.QueueURL, Metrics: f.o.Metrics})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvQueueURL, err)
	}
	f.rt.Queue = q
	if f.rt.Role.Sweeps {
		f.rt.batch = &app.SweepQueue{Q: q}
		return f.rt.batch, nil
	}
	return q, nil
}

// signerQueue builds the signer queue requests are handed off to.
func (f awsPorts) signerQueue(context.Context) (ports.Queue, error) {
	q, err := sqsq.New(f.o.SQS, sqsq.Options{QueueURL: f.st.SignerQueueURL, Metrics: f.o.Metrics})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSignerQueueURL, err)
	}
	f.rt.SignerQueue, f.rt.handOff = q, q
	return q, nil
}

// acme builds the ACME dialer, within CERTFN_ACME_ALLOW_PRIVATE_NETWORKS.
func (f awsPorts) acme(context.Context) (acme.Dialer, error) {
	return acmeadapter.NewDialer(acmeadapter.Options{Wrap: f.o.ACME.WrapTransport, Network: f.st.ACMENetwork}), nil
}

// dns01 builds the DNS-01 providers: the standard ones, route53 within
// CERTFN_ROUTE53_ZONE_IDS, and those of Options.
func (f awsPorts) dns01(context.Context) (map[string]dns01.ProviderFactory, error) {
	p := dnsproviders.Standard(f.st.ACMENetwork)
	p[dns01.KeyRoute53] = route53.NewFactory(route53.Options{AllowedZoneIDs: f.st.Route53ZoneIDs, Retry: f.o.Retry}).Build
	for k, pf := range f.o.ACME.DNS01Providers {
		p[k] = pf
	}
	return p, nil
}

// secrets builds the secret store (CERTFN_SECRET_STORE). Secrets Manager
// is scoped by IAM tags alone; Parameter Store by st.SecretClasses, which
// default to the access's (ParseSettings).
func (f awsPorts) secrets(ctx context.Context, _ app.SecretAccess) (ports.SecretStore, error) {
	st, o := f.st, f.o
	if st.SecretStore != SecretStoreSSM {
		s, err := secrets.New(o.SecretsManager, secrets.Options{Prefix: st.SecretPrefix, KMSKeyID: st.KMSKeyID, Metrics: o.Metrics})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvSecretPrefix, err)
		}
		f.rt.Secrets = s
		return s, nil
	}
	client := o.SSM
	if client == nil {
		cfg, err := awscfg.Load(ctx, o.Retry)
		if err != nil {
			return nil, err
		}
		client = ssm.NewFromConfig(cfg)
	}
	s, err := ssmstore.New(client, ssmstore.Options{Prefix: st.SecretPrefix, Classes: st.SecretClasses, KMSKeyID: st.KMSKeyID, Metrics: o.Metrics})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSecretPrefix, err)
	}
	f.rt.Secrets = s
	return s, nil
}

// importer builds the ACM importer when CERTFN_ACM_IMPORT is set: new
// imports are tagged with the deployment's name (acm.DeploymentFromEnv),
// which the IAM policy requires.
func (f awsPorts) importer(ctx context.Context) (ports.CertificateImporter, error) {
	st, o := f.st, f.o
	if !st.ACMImport {
		return nil, nil
	}
	client := o.ACM
	if client == nil {
		cfg, err := awscfg.Load(ctx, o.Retry)
		if err != nil {
			return nil, err
		}
		client = awsacm.NewFromConfig(cfg)
	}
	imp, err := acm.New(client, acm.Options{Deployment: acm.DeploymentFromEnv(o.Getenv, cmp.Or(st.SecretPrefix, "certfn"))})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvACMImport, err)
	}
	return imp, nil
}

// notifier builds the EventBridge notifier when CERTFN_NOTIFY_EVENT_BUS
// is set: events name the deployment as the ACM importer's tags do
// (acm.DeploymentFromEnv: the Terraform module's name_prefix).
func (f awsPorts) notifier(ctx context.Context) (ports.Notifier, error) {
	st, o := f.st, f.o
	if st.NotifyEventBus == "" {
		return nil, nil
	}
	client := o.EventBridge
	if client == nil {
		cfg, err := awscfg.Load(ctx, o.Retry)
		if err != nil {
			return nil, err
		}
		client = eventbridge.NewFromConfig(cfg)
	}
	n, err := ebnotify.New(client, ebnotify.Options{EventBus: st.NotifyEventBus, Deployment: acm.DeploymentFromEnv(o.Getenv, cmp.Or(st.SecretPrefix, "certfn"))})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvNotifyEventBus, err)
	}
	return n, nil
}
