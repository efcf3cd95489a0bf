package acme

import (
	"context"
	"crypto"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// fakeClient registers accounts; other calls are unused here.
type fakeClient struct {
	Client
	registers []RegisterRequest
	err       error
	// dials counts the clients handed out for this client's server.
	dials int
}

func (f *fakeClient) Register(_ context.Context, req RegisterRequest) (Account, error) {
	f.registers = append(f.registers, req)
	if f.err != nil {
		return Account{}, f.err
	}
	return Account{URL: "https://acme.example/acct/1", Key: req.Key, Thumbprint: "tp"}, nil
}

type fakeDialer struct{ c *fakeClient }

func (d fakeDialer) Client(ServerConfig) (Client, error)      { d.c.dials++; return d.c, nil }
func (d fakeDialer) Thumbprint(crypto.Signer) (string, error) { return "tp", nil }

func acmeIssuer(f func(*api.ACMEIssuer)) *api.ClusterIssuer {
	iss := &api.ClusterIssuer{TypeMeta: api.TypeMeta{Kind: api.KindClusterIssuer}, ObjectMeta: api.ObjectMeta{Name: "le", UID: "u1"},
		Spec: api.IssuerSpec{ACME: &api.ACMEIssuer{Server: "https://acme.example/dir", Email: "a@example.com",
			PrivateKeySecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "acct"}}}}}
	if f != nil {
		f(iss.Spec.ACME)
	}
	return iss
}

func keySecret(t *testing.T, data []byte) ports.Secret {
	t.Helper()
	if data == nil {
		k, err := pki.GenerateKey(&api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 256})
		if err != nil {
			t.Fatal(err)
		}
		data, _ = pki.EncodePKCS8PEM(k)
	}
	return ports.Secret{Namespace: "cert-manager", Name: "acct", Data: map[string][]byte{"tls.key": data}}
}

func TestAccountsReady(t *testing.T) {
	tests := []struct {
		name      string
		issuer    *api.ClusterIssuer
		secrets   func(t *testing.T) []ports.Secret
		regErr    error
		wantOK    bool
		reason    string
		msg       string
		registers int
		keyStored bool
	}{
		{name: "generates the key and registers", issuer: acmeIssuer(nil), wantOK: true, reason: ReasonAccountRegistered, registers: 1, keyStored: true},
		{name: "uses an existing key", issuer: acmeIssuer(nil), secrets: func(t *testing.T) []ports.Secret { return []ports.Secret{keySecret(t, nil)} },
			wantOK: true, reason: ReasonAccountRegistered, registers: 1},
		{name: "generation disabled", issuer: acmeIssuer(func(a *api.ACMEIssuer) { a.DisableAccountKeyGeneration = true }),
			reason: ReasonAccountKey, msg: "spec.acme.privateKeySecretRef: secret cert-manager/acct does not exist"},
		{name: "undecodable key", issuer: acmeIssuer(nil), secrets: func(t *testing.T) []ports.Secret { return []ports.Secret{keySecret(t, []byte("junk"))} },
			reason: ReasonAccountKey, msg: "does not hold a usable private key"},
		{name: "EAB secret missing", issuer: acmeIssuer(func(a *api.ACMEIssuer) {
			a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "k", Key: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "eab"}}}
		}), reason: ReasonEAB, msg: "keySecretRef: secret cert-manager/eab does not exist"},
		{name: "EAB passed", issuer: acmeIssuer(func(a *api.ACMEIssuer) {
			a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "k", Key: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "eab"}}}
		}), secrets: func(t *testing.T) []ports.Secret {
			return []ports.Secret{{Namespace: "cert-manager", Name: "eab", Data: map[string][]byte{"secret": []byte("bWFj")}}}
		}, wantOK: true, reason: ReasonAccountRegistered, registers: 1, keyStored: true},
		{name: "server refuses", issuer: acmeIssuer(nil), regErr: errs.Permanentf("externalAccountRequired"), reason: ReasonRegister,
			msg: "Failed to register ACME account: externalAccountRequired", registers: 1},
		{name: "server unreachable", issuer: acmeIssuer(nil), regErr: errors.New("connection refused"), reason: ReasonRegister,
			msg: "connection refused", registers: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var initial []ports.Secret
			if tc.secrets != nil {
				initial = tc.secrets(t)
			}
			sec := certtest.NewMemSecrets(initial...)
			fc := &fakeClient{err: tc.regErr}
			a := NewAccounts(sec, fakeDialer{fc}, AllowAnyServer(""))
			st := &issuers.State{Issuer: tc.issuer, Now: time.Now(), SecretNamespace: "cert-manager"}
			ok, reason, msg, err := a.Ready(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK || reason != tc.reason || !strings.Contains(msg, tc.msg) {
				t.Fatalf("Ready = %t %q %q, want %t %q containing %q", ok, reason, msg, tc.wantOK, tc.reason, tc.msg)
			}
			if len(fc.registers) != tc.registers {
				t.Fatalf("%d registrations, want %d", len(fc.registers), tc.registers)
			}
			if tc.keyStored {
				if _, found := sec.Lookup("cert-manager", "acct"); !found {
					t.Fatal("the generated account key was not stored")
				}
			}
			if strings.Contains(msg, "PRIVATE KEY") {
				t.Fatal("key material in the message")
			}
			if !ok {
				return
			}
			s := tc.issuer.Status.ACME
			if s == nil || s.URI == "" || s.LastRegisteredEmail != "a@example.com" || len(s.LastPrivateKeyHash) != 64 {
				t.Fatalf("status.acme = %+v", s)
			}
			if eab := tc.issuer.Spec.ACME.ExternalAccountBinding; eab != nil && (fc.registers[0].EAB == nil || fc.registers[0].EAB.KeyID != "k") {
				t.Fatalf("EAB not passed: %+v", fc.registers[0].EAB)
			}
			// Ready again with the status recorded: no ACME request.
			api.SetCondition(&tc.issuer.Status.Conditions, api.Condition{Type: "Ready", Status: api.ConditionTrue}, time.Now())
			if ok, _, _, _ := a.Ready(context.Background(), st); !ok || len(fc.registers) != 1 {
				t.Fatalf("second Ready: ok=%t registrations=%d", ok, len(fc.registers))
			}
			// The email changed: registered again.
			tc.issuer.Spec.ACME.Email = "b@example.com"
			if ok, _, _, _ := a.Ready(context.Background(), st); !ok || len(fc.registers) != 2 {
				t.Fatalf("after an email change: ok=%t registrations=%d", ok, len(fc.registers))
			}
			// Get hands out the cached account without reading the key again.
			calls := len(sec.Calls)
			acct, _, err := a.Get(context.Background(), tc.issuer, "cert-manager")
			if err != nil || acct.URL == "" || acct.Thumbprint != "tp" {
				t.Fatalf("Get = %+v, %v", acct, err)
			}
			if len(sec.Calls) != calls {
				t.Fatalf("Get used the secret store: %v", sec.Calls[calls:])
			}
		})
	}
}

func TestAccountsGetNotReady(t *testing.T) {
	sec := certtest.NewMemSecrets(keySecret(t, nil))
	a := NewAccounts(sec, fakeDialer{&fakeClient{}}, AllowAnyServer(""))
	iss := acmeIssuer(nil)
	if _, _, err := a.Get(context.Background(), iss, "cert-manager"); !errors.Is(err, ErrAccountNotReady) || errs.IsPermanent(err) {
		t.Fatalf("Get before registration = %v, want transient ErrAccountNotReady", err)
	}
	// A recorded account whose key hash no longer matches the secret.
	iss.Status.ACME = &api.ACMEIssuerStatus{URI: "https://acme.example/acct/1", LastPrivateKeyHash: "00"}
	api.SetCondition(&iss.Status.Conditions, api.Condition{Type: "Ready", Status: api.ConditionTrue}, time.Now())
	if _, _, err := a.Get(context.Background(), iss, "cert-manager"); !errors.Is(err, ErrAccountNotReady) || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("Get with a replaced key = %v", err)
	}
}

// An account key secret that exists and holds no key yet (a store whose
// Create is two calls, Secret Manager's: a Create between them, or one
// whose answer was lost, until a later Create may take the empty secret
// over) is not a problem for the user to fix: Ready says the issuer is not
// decided yet (issuers.ErrNotYet) and registers nothing. It said "does not
// exist and account key generation is disabled" and the issuer waited 10
// minutes (the ACME fault harness on the Cloud Run services found it).
func TestAccountsReadyKeyBeingCreated(t *testing.T) {
	sec := certtest.NewMemSecrets()
	sec.CreateErr = ports.ErrAlreadyExists // the empty secret exists; Get finds no version
	fc := &fakeClient{}
	a := NewAccounts(sec, fakeDialer{fc}, AllowAnyServer(""))
	st := &issuers.State{Issuer: acmeIssuer(nil), Now: time.Now(), SecretNamespace: "cert-manager"}
	ok, reason, msg, err := a.Ready(context.Background(), st)
	if !errors.Is(err, issuers.ErrNotYet) {
		t.Fatalf("Ready = %t %q %q, %v; want an error wrapping issuers.ErrNotYet", ok, reason, msg, err)
	}
	if ok || len(fc.registers) != 0 {
		t.Fatalf("ok %t, %d registrations", ok, len(fc.registers))
	}
}
