package gcpmode

import (
	"context"
	"fmt"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/pubsub/v2"
	gsm "cloud.google.com/go/secretmanager/apiv1"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/clouddns"
	dnsproviders "github.com/certfn/certfn/adapters/dns/providers"
	"github.com/certfn/certfn/adapters/gcp/certmanager"
	"github.com/certfn/certfn/adapters/gcp/firestore"
	"github.com/certfn/certfn/adapters/gcp/pubsubnotify"
	"github.com/certfn/certfn/adapters/gcp/pubsubq"
	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
)

// gcpPorts builds the ports over the Google Cloud adapters (or those
// Options injects), one method per port (app.PortFactories: Assemble
// calls those the role needs), recording what it built in rt. The queues
// are Pub/Sub topics sharing one client, with Cloud Tasks publishing
// delayed messages (pubsubq) where CERTFN_TASKS_QUEUE is set. The notifier
// publishes on the CERTFN_NOTIFY_TOPIC topic through the same client
// (pubsubnotify).
type gcpPorts struct {
	rt     *Runtime
	st     Settings
	o      Options
	client *pubsub.Client
	tasks  pubsubq.TasksAPI
}

func (f *gcpPorts) factories() app.PortFactories {
	return app.PortFactories{Store: f.store, Secrets: f.secrets, Queue: f.queue, SignerQueue: f.signerQueue,
		ACME: f.acme, DNS01: f.dns01, CertificateImporter: f.importer, Notifier: f.notifier}
}

// pubsubClient is the Pub/Sub client the queues and the notifier share,
// made on first use.
func (f *gcpPorts) pubsubClient(ctx context.Context) (*pubsub.Client, error) {
	if f.client == nil {
		c, err := pubsub.NewClient(ctx, f.st.Project)
		if err != nil {
			return nil, fmt.Errorf("the Pub/Sub client: %w", err)
		}
		f.client = c
	}
	return f.client, nil
}

// topic builds the queue on topic name.
func (f *gcpPorts) topic(ctx context.Context, name string) (*pubsubq.Queue, error) {
	client, err := f.pubsubClient(ctx)
	if err != nil {
		return nil, err
	}
	if f.tasks == nil && f.st.TasksQueue != "" {
		tc, err := cloudtasks.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("the Cloud Tasks client: %w", err)
		}
		f.tasks = tc
	}
	return pubsubq.New(client, f.tasks, pubsubq.Options{Topic: name, TaskQueue: f.st.TasksQueue,
		TaskServiceAccount: f.st.TasksServiceAccount, Clock: f.o.Clock, Metrics: f.o.Metrics})
}

// store is Options.Store, else the Firestore store.
func (f *gcpPorts) store(ctx context.Context) (ports.Store, error) {
	if f.o.Store != nil {
		return f.o.Store, nil
	}
	fs, err := firestore.Open(ctx, f.st.Project, firestore.Options{Database: f.st.Database, Collection: f.st.Collection, Clock: f.o.Clock,
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
		c, err := gsm.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("the Secret Manager client: %w", err)
		}
		api = secretmanager.ClientAPI(c)
	}
	sec, err := secretmanager.New(api, secretmanager.Options{Project: f.st.Project, Prefix: f.st.SecretPrefix, Classes: secretClasses(access, f.st.ManageCA),
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

// notifier is Options.Notifier, else the Pub/Sub notifier when
// CERTFN_NOTIFY_TOPIC is set: messages name the deployment by the secret
// prefix, as the Certificate Manager importer's labels do.
func (f *gcpPorts) notifier(ctx context.Context) (ports.Notifier, error) {
	if f.o.Notifier != nil || f.st.NotifyTopic == "" {
		return f.o.Notifier, nil
	}
	client, err := f.pubsubClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvNotifyTopic, err)
	}
	n, err := pubsubnotify.New(client.TopicAdminClient, pubsubnotify.Options{Topic: f.st.NotifyTopic, Deployment: f.st.SecretPrefix})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvNotifyTopic, err)
	}
	return n, nil
}

// secretClasses are the Secret Manager classes access reads (core/app
// SecretAccess.Classes; manageCA: CERTFN_MANAGE_CA_CERTIFICATES), in the
// order a Get tries them.
func secretClasses(access app.SecretAccess, manageCA bool) []secretmanager.Class {
	read, _ := access.Classes(manageCA)
	out := make([]secretmanager.Class, len(read))
	for i, c := range read {
		out[i] = secretmanager.Class(c)
	}
	return out
}
