package issuers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/ports"
)

const waitPoll = 10 * time.Minute

func caIssuer(secret string) *api.Issuer {
	return &api.Issuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: "ca", Namespace: ct.Namespace, Generation: 2},
		Spec:       api.IssuerSpec{CA: &api.CAIssuer{SecretName: secret}}}
}

func withSpec(spec api.IssuerSpec) *api.Issuer {
	i := caIssuer("")
	i.Spec = spec
	return i
}

func run(t *testing.T, iss api.GenericIssuer, secrets ports.SecretStore, secretNS string, acme func(context.Context, *issuers.State) (bool, string, string, error)) (time.Time, *ct.Writer, error) {
	t.Helper()
	w := &ct.Writer{}
	env := &issuers.Env{Secrets: secrets, Writer: w, WaitPoll: waitPoll, ACMEReady: acme}
	st := &issuers.State{Issuer: iss, Version: 1, Now: ct.T0, SecretNamespace: secretNS}
	out, err := issuers.Step(context.Background(), env, st)
	return out.RequeueAt, w, err
}

func TestStepReadiness(t *testing.T) {
	ca := ct.NewCA(t)
	notCA := ct.NewCAValid(t, ct.T0.Add(-time.Hour), ct.T0.Add(time.Hour*24*365), false)
	expired := ct.NewCAValid(t, ct.T0.Add(-48*time.Hour), ct.T0.Add(-time.Hour), true)
	mismatched := ca.Secret(t, ct.Namespace, "ca-key-pair")
	mismatched.Data["tls.key"] = ct.KeyPEM(t, ct.Key(t, nil))
	badCert := ca.Secret(t, ct.Namespace, "ca-key-pair")
	badCert.Data["tls.crt"] = []byte("garbage")
	badKey := ca.Secret(t, ct.Namespace, "ca-key-pair")
	badKey.Data["tls.key"] = []byte("garbage")
	acmeOK := func(context.Context, *issuers.State) (bool, string, string, error) {
		return true, "ACMEAccountRegistered", "The ACME account was registered", nil
	}
	acmeNo := func(context.Context, *issuers.State) (bool, string, string, error) {
		return false, "ErrRegisterACMEAccount", "account key missing", nil
	}
	for _, tc := range []struct {
		name      string
		iss       api.GenericIssuer
		secret    *ports.Secret
		secretNS  string
		acme      func(context.Context, *issuers.State) (bool, string, string, error)
		wantReady bool
		reason    string
		msg       string
		wantNext  time.Time
	}{
		{name: "selfSigned", iss: withSpec(api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}}), wantReady: true, reason: "IsReady"},
		{name: "CA with a valid key pair", iss: caIssuer("ca-key-pair"), secret: ptr(ca.Secret(t, ct.Namespace, "ca-key-pair")),
			wantReady: true, reason: "KeyPairVerified", msg: "Signing CA verified", wantNext: ca.Cert.NotAfter},
		{name: "ClusterIssuer reads the cluster resource namespace", secretNS: "cert-manager",
			iss: &api.ClusterIssuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindClusterIssuer},
				ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca-key-pair"}}},
			secret: ptr(ca.Secret(t, "cert-manager", "ca-key-pair")), wantReady: true, reason: "KeyPairVerified", wantNext: ca.Cert.NotAfter},
		{name: "CA secret missing", iss: caIssuer("ca-key-pair"), reason: "ErrGetKeyPair",
			msg: "secret default/ca-key-pair does not exist", wantNext: ct.T0.Add(waitPoll)},
		{name: "CA secret in another namespace", iss: caIssuer("ca-key-pair"), secret: ptr(ca.Secret(t, "elsewhere", "ca-key-pair")),
			reason: "ErrGetKeyPair", msg: "secret default/ca-key-pair does not exist", wantNext: ct.T0.Add(waitPoll)},
		{name: "not a CA", iss: caIssuer("ca-key-pair"), secret: ptr(notCA.Secret(t, ct.Namespace, "ca-key-pair")),
			reason: "ErrInvalidKeyPair", msg: "is not a CA", wantNext: ct.T0.Add(waitPoll)},
		{name: "key does not match", iss: caIssuer("ca-key-pair"), secret: &mismatched,
			reason: "ErrInvalidKeyPair", msg: "tls.key does not match tls.crt", wantNext: ct.T0.Add(waitPoll)},
		{name: "expired CA", iss: caIssuer("ca-key-pair"), secret: ptr(expired.Secret(t, ct.Namespace, "ca-key-pair")),
			reason: "ErrInvalidKeyPair", msg: "the CA certificate expired at", wantNext: ct.T0.Add(waitPoll)},
		{name: "undecodable tls.crt", iss: caIssuer("ca-key-pair"), secret: &badCert,
			reason: "ErrInvalidKeyPair", msg: "tls.crt:", wantNext: ct.T0.Add(waitPoll)},
		{name: "undecodable tls.key", iss: caIssuer("ca-key-pair"), secret: &badKey,
			reason: "ErrInvalidKeyPair", msg: "tls.key:", wantNext: ct.T0.Add(waitPoll)},
		{name: "ACME without an ACME implementation", iss: withSpec(api.IssuerSpec{ACME: &api.ACMEIssuer{}}),
			reason: "NotSupported", msg: "not available"},
		{name: "ACME registered", iss: withSpec(api.IssuerSpec{ACME: &api.ACMEIssuer{}}), acme: acmeOK,
			wantReady: true, reason: "ACMEAccountRegistered"},
		{name: "ACME not registered", iss: withSpec(api.IssuerSpec{ACME: &api.ACMEIssuer{}}), acme: acmeNo,
			reason: "ErrRegisterACMEAccount", msg: "account key missing", wantNext: ct.T0.Add(waitPoll)},
		{name: "vault (unsupported)", iss: withSpec(api.IssuerSpec{Vault: []byte(`{"server":"https://vault"}`)}),
			reason: "UnsupportedIssuerType", msg: "vault and venafi are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ct.NewMemSecrets()
			if tc.secret != nil {
				secrets.Set(*tc.secret)
			}
			ns := tc.secretNS
			if ns == "" {
				ns = ct.Namespace
			}
			next, w, err := run(t, tc.iss, secrets, ns, tc.acme)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if !next.Equal(tc.wantNext) {
				t.Errorf("recheck = %s, want %s", next, tc.wantNext)
			}
			ups := w.Only("UpdateIssuer")
			if len(ups) != 1 || !ups[0].NextRunAt.Equal(tc.wantNext) {
				t.Fatalf("calls %+v; want one UpdateIssuer due at %s", w.Calls, tc.wantNext)
			}
			c := api.FindCondition(ups[0].Issuer.GetStatus().Conditions, api.IssuerConditionReady)
			wantStatus := api.ConditionFalse
			if tc.wantReady {
				wantStatus = api.ConditionTrue
			}
			if c == nil || c.Status != wantStatus || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Fatalf("Ready = %+v, want %s/%s containing %q", c, wantStatus, tc.reason, tc.msg)
			}
			if c.ObservedGeneration != tc.iss.GetObjectMeta().Generation {
				t.Errorf("observedGeneration = %d", c.ObservedGeneration)
			}
			wantOps := "UpdateIssuer"
			if tc.wantReady {
				wantOps = "UpdateIssuer,IssuerReady" // woken after the status write
			}
			if got := strings.Join(w.Ops(), ","); got != wantOps {
				t.Errorf("calls %s, want %s", got, wantOps)
			}
		})
	}
}

// IssuerReady wakes waiting requests: on the transition to Ready, and on
// a run that finds the issuer Ready and unchanged (a redelivery carrying a
// wake-up its first run lost: TestStepWakeUpAfterInterruptedTransition);
// not on a write of an issuer that stays Ready, nor when it is not Ready.
func TestStepIssuerReadyWakes(t *testing.T) {
	ca := ct.NewCA(t)
	secrets := ct.NewMemSecrets(ca.Secret(t, ct.Namespace, "ca-key-pair"))
	iss := caIssuer("ca-key-pair")
	w := &ct.Writer{}
	env := &issuers.Env{Secrets: secrets, Writer: w, WaitPoll: waitPoll}
	st := &issuers.State{Issuer: iss, Version: 1, Now: ct.T0, SecretNamespace: ct.Namespace}
	for _, s := range []struct {
		what   string
		before func()
		ops    string // the calls the run adds
	}{
		{"not ready → ready", nil, "UpdateIssuer,IssuerReady"},
		{"unchanged (a redelivery)", nil, "IssuerReady"},
		{"still ready, another message (an older build's wording)", func() {
			api.FindCondition(iss.Status.Conditions, api.IssuerConditionReady).Message = "old wording"
		}, "UpdateIssuer"},
		{"secret deleted: not ready", func() { _ = secrets.Delete(context.Background(), ct.Namespace, "ca-key-pair") }, "UpdateIssuer"},
		{"unchanged, not ready", nil, ""},
		{"restored: ready again", func() { secrets.Set(ca.Secret(t, ct.Namespace, "ca-key-pair")) }, "UpdateIssuer,IssuerReady"},
	} {
		if s.before != nil {
			s.before()
		}
		n := len(w.Calls)
		if _, err := issuers.Step(context.Background(), env, st); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := strings.Join(w.Ops()[n:], ","); got != s.ops {
			t.Errorf("%s: calls %q, want %q", s.what, got, s.ops)
		}
	}
}

func TestStepErrors(t *testing.T) {
	boom := errors.New("secret store throttled")
	t.Run("secret store error is returned, nothing written", func(t *testing.T) {
		secrets := ct.NewMemSecrets()
		secrets.GetErr = boom
		_, w, err := run(t, caIssuer("ca-key-pair"), secrets, ct.Namespace, nil)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "check CA secret default/ca-key-pair") || len(w.Calls) != 0 {
			t.Fatalf("err %v calls %v", err, w.Ops())
		}
	})
	t.Run("lost race: no wake-up", func(t *testing.T) {
		w := &ct.Writer{ErrOn: map[string]error{"UpdateIssuer": ports.ErrConflict}}
		env := &issuers.Env{Secrets: ct.NewMemSecrets(), Writer: w, WaitPoll: waitPoll}
		st := &issuers.State{Issuer: withSpec(api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}}), Now: ct.T0}
		_, err := issuers.Step(context.Background(), env, st)
		if !errors.Is(err, ports.ErrConflict) || len(w.Calls) != 0 {
			t.Fatalf("err %v calls %v", err, w.Ops())
		}
	})
	t.Run("ACME check error is returned", func(t *testing.T) {
		acme := func(context.Context, *issuers.State) (bool, string, string, error) { return false, "", "", boom }
		_, w, err := run(t, withSpec(api.IssuerSpec{ACME: &api.ACMEIssuer{}}), ct.NewMemSecrets(), ct.Namespace, acme)
		if !errors.Is(err, boom) || len(w.Calls) != 0 {
			t.Fatalf("err %v calls %v", err, w.Ops())
		}
	})
}

func ptr[T any](v T) *T { return &v }

// A wake-up interrupted after the Ready write (the process died, the
// answer to the write was lost, the List of the waiting requests failed)
// is done by the issuer's next run — the message's redelivery — though the
// issuer is then Ready and unchanged. Before, the next run found nothing
// to do and the requests waited for their own recheck (10 minutes; the
// ACME fault harness on the Cloud Run services found it).
func TestStepWakeUpAfterInterruptedTransition(t *testing.T) {
	ca := ct.NewCA(t)
	for _, tc := range []struct {
		name string
		iss  api.GenericIssuer
	}{
		{"CA issuer", caIssuer("ca-key-pair")},
		{"selfSigned issuer", withSpec(api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ct.NewMemSecrets(ca.Secret(t, ct.Namespace, "ca-key-pair"))
			w := &ct.Writer{ErrOn: map[string]error{"IssuerReady": errors.New("the process died")}}
			env := &issuers.Env{Secrets: secrets, Writer: w, WaitPoll: waitPoll}
			st := &issuers.State{Issuer: tc.iss, Version: 1, Now: ct.T0, SecretNamespace: ct.Namespace}
			if _, err := issuers.Step(context.Background(), env, st); err == nil {
				t.Fatal("Step: no error from the interrupted wake-up")
			}
			w.ErrOn = nil
			st.Now = ct.T0.Add(2 * time.Minute) // the redelivery
			if _, err := issuers.Step(context.Background(), env, st); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(w.Ops(), ","); got != "UpdateIssuer,IssuerReady" {
				t.Fatalf("calls %s, want the Ready write, then the redelivery's wake-up", got)
			}
		})
	}
}

// An ACME issuer that cannot be decided yet (issuers.ErrNotYet: its
// account key secret is being created) is written nothing and looked at
// again after SoonRecheck, not WaitPoll.
func TestStepACMENotYet(t *testing.T) {
	acme := func(context.Context, *issuers.State) (bool, string, string, error) {
		return false, "", "", fmt.Errorf("account key secret cert-manager/acct holds no key yet: %w", issuers.ErrNotYet)
	}
	next, w, err := run(t, withSpec(api.IssuerSpec{ACME: &api.ACMEIssuer{Server: "https://acme.example/dir"}}), ct.NewMemSecrets(), ct.Namespace, acme)
	if err != nil {
		t.Fatal(err)
	}
	if want := ct.T0.Add(issuers.SoonRecheck); !next.Equal(want) {
		t.Errorf("recheck at %s, want %s", next, want)
	}
	if len(w.Calls) != 0 {
		t.Errorf("calls %v, want none", w.Ops())
	}
}
