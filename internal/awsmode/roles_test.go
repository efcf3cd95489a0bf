package awsmode_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// Each role gets only the ports and signers docs/design/roles.md gives it.
func TestRolesGetOnlyTheirPorts(t *testing.T) {
	e := awstest.New(t)
	for _, tc := range []struct {
		role        string
		signers     []string
		secrets     bool // a Secrets Manager store
		signerQueue bool
		handlers    []string
	}{
		{app.Worker.Name, []string{"acme", "ca", "selfSigned"}, true, true, []string{api.KindChallenge, api.KindOrder}},
		{app.Signer.Name, []string{"ca", "selfSigned"}, true, true, nil},
		{app.Scheduler.Name, nil, false, false, nil},
		{app.API.Name, nil, false, false, nil},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			rt := e.Runtime(tc.role)
			cfg := rt.App.Wiring()
			var sig []string
			for k := range cfg.Signers {
				sig = append(sig, k)
			}
			sort.Strings(sig)
			if !slices.Equal(sig, tc.signers) {
				t.Errorf("signers %v, want %v", sig, tc.signers)
			}
			var hs []string
			for k := range cfg.ACME {
				hs = append(hs, k)
			}
			sort.Strings(hs)
			if !slices.Equal(hs, tc.handlers) {
				t.Errorf("handlers %v, want %v", hs, tc.handlers)
			}
			if (rt.Secrets != nil) != tc.secrets {
				t.Errorf("secret store present = %v, want %v", rt.Secrets != nil, tc.secrets)
			}
			if (rt.SignerQueue != nil) != tc.signerQueue {
				t.Errorf("signer queue present = %v, want %v", rt.SignerQueue != nil, tc.signerQueue)
			}
			if rt.Queue == nil || rt.Queue.URL() != e.WorkerQueueURL {
				t.Errorf("queue %v, want the worker queue", rt.Queue)
			}
			if !tc.secrets {
				// The engine's secret store refuses everything, naming the secret only.
				_, err := cfg.Secrets.Get(context.Background(), "default", "web-tls")
				if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), "default/web-tls") {
					t.Errorf("secret Get = %v, want a permanent refusal naming default/web-tls", err)
				}
				ctx, sec := context.Background(), ports.Secret{Namespace: "default", Name: "web-tls"}
				for op, err := range map[string]error{
					"create": cfg.Secrets.Create(ctx, sec), "put": cfg.Secrets.Put(ctx, sec), "delete": cfg.Secrets.Delete(ctx, "default", "web-tls"),
				} {
					if err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), op+" secret default/web-tls") {
						t.Errorf("secret %s = %v, want a permanent refusal", op, err)
					}
				}
			}
		})
	}
}

// FromEnv reads the process environment and builds the SDK clients from
// the default chain without any network call; a bad environment is an
// error naming the variable, never an exit.
func TestFromEnvProcessEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv(awsmode.EnvTable, "certfn")
	t.Setenv(awsmode.EnvQueueURL, "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-worker")
	t.Setenv(awsmode.EnvSignerQueueURL, "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-signer")
	for _, fn := range app.Functions {
		role := fn.Name
		rt, err := awsmode.FromEnv(context.Background(), role)
		if err != nil {
			t.Fatalf("FromEnv(%s): %v", role, err)
		}
		if rt.Role.Name != role || rt.Store == nil || rt.Store.Table() != "certfn" {
			t.Fatalf("FromEnv(%s) = %+v", role, rt)
		}
		if (rt.Kernel == nil) != (role == app.HTTP01.Name) || (rt.HTTP01 == nil) != (role != app.HTTP01.Name) {
			t.Fatalf("%s: engine %v, http01 handler %v", role, rt.Kernel != nil, rt.HTTP01 != nil)
		}
	}
	t.Setenv(awsmode.EnvSignerQueueURL, "")
	if _, err := awsmode.FromEnv(context.Background(), app.Worker.Name); err == nil || !strings.Contains(err.Error(), awsmode.EnvSignerQueueURL) {
		t.Fatalf("worker without a signer queue: %v", err)
	}
	t.Setenv(awsmode.EnvSecretPrefix, "/bad//prefix")
	if _, err := awsmode.FromEnv(context.Background(), app.Signer.Name); err == nil || !strings.Contains(err.Error(), awsmode.EnvSecretPrefix) {
		t.Fatalf("bad secret prefix: %v", err)
	}
}

// The handlers of roles that have none answer with an error, not a panic.
func TestHandlersOfOtherRoles(t *testing.T) {
	e := awstest.New(t)
	sched, http01 := e.Runtime(app.Scheduler.Name), e.Runtime(app.HTTP01.Name)
	if d := sched.Handle(e.Ctx, api.Key{Kind: api.KindClusterIssuer, Name: "x"}, 1); !d.Ack || d.Err == nil {
		t.Errorf("scheduler Handle = %+v, want acknowledged with an error", d)
	}
	if d := http01.Handle(e.Ctx, api.Key{Kind: api.KindClusterIssuer, Name: "x"}, 1); !d.Ack || d.Err == nil {
		t.Errorf("http01 Handle = %+v, want acknowledged with an error", d)
	}
	if _, err := http01.HandleSchedule(e.Ctx, nil); err == nil {
		t.Error("http01 HandleSchedule: no error")
	}
	if _, err := sched.HandleHTTP(e.Ctx, []byte(`{}`)); err == nil {
		t.Error("scheduler HandleHTTP: no error")
	}
}

// putEventsStub is a TEST DOUBLE of the EventBridge API that accepts
// every entry.
type putEventsStub struct {
	entries []ebtypes.PutEventsRequestEntry
}

func (s *putEventsStub) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	s.entries = append(s.entries, in.Entries...)
	return &eventbridge.PutEventsOutput{Entries: make([]ebtypes.PutEventsResultEntry, len(in.Entries))}, nil
}

// Only the worker, which runs the Certificate steps, notifies, and only
// with CERTFN_NOTIFY_EVENT_BUS set; CERTFN_NOTIFY_EXPIRY_DAYS sets the
// window.
func TestOnlyTheWorkerNotifies(t *testing.T) {
	e := awstest.New(t)
	stub := &putEventsStub{}
	withStub := func(o *awsmode.Options) { o.EventBridge = stub }
	if cfg := e.Runtime(app.Worker.Name, withStub).App.Wiring(); cfg.Notifier != nil {
		t.Fatalf("worker without %s: notifier %v", awsmode.EnvNotifyEventBus, cfg.Notifier)
	}
	e.Vars[awsmode.EnvNotifyEventBus] = "pki-events"
	e.Vars[awsmode.EnvNotifyExpiryDays] = "21"
	for _, role := range []string{app.Worker.Name, app.Signer.Name, app.Scheduler.Name, app.API.Name} {
		cfg := e.Runtime(role, withStub).App.Wiring()
		n, ok := cfg.Notifier.(*ebnotify.Notifier)
		if (role == app.Worker.Name) != ok {
			t.Errorf("%s: notifier %T, want one only on the worker", role, cfg.Notifier)
		}
		if ok && (n.EventBus() != "pki-events" || cfg.NotifyExpiryWindow != 21*24*time.Hour) {
			t.Errorf("worker: bus %q window %v, want pki-events and 21 days", n.EventBus(), cfg.NotifyExpiryWindow)
		}
	}
}
