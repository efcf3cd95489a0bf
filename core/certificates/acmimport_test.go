package certificates_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

const arn = "arn:aws:acm:us-east-1:000000000000:certificate/11111111-2222-3333-4444-555555555555"

// fakeImporter is a TEST DOUBLE of ports.CertificateImporter: it records
// each request and answers with Ref (or a fixed ARN) or Err.
type fakeImporter struct {
	reqs     []ports.CertificateImport
	err      error
	ref      string // returned reference ("" : req.Ref or arn)
	unchaged bool   // answer Imported false
}

func (f *fakeImporter) Import(_ context.Context, req ports.CertificateImport) (ports.CertificateImported, error) {
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return ports.CertificateImported{}, f.err
	}
	ref := f.ref
	if ref == "" {
		ref = req.Ref
	}
	if ref == "" {
		ref = arn
	}
	return ports.CertificateImported{Ref: ref, Imported: !f.unchaged}, nil
}

// acmImportFixture is one Certificate with its stored key pair, Ready.
type acmImportFixture struct {
	st     *certificates.State
	issued certtest.IssuedSecret
	ca     *certtest.CA
}

// annotated marks the Certificate for ACM import.
func annotated(c *api.Certificate) {
	c.Annotations = map[string]string{api.AnnotationACMImport: "true"}
}

// newAcmImportFixture issues the Certificate built with opts and marks it Ready as
// the readiness step would; withChain stores the CA after the leaf in
// tls.crt (an intermediate, as ACME servers send).
func newAcmImportFixture(t *testing.T, withChain bool, opts ...func(*api.Certificate)) *acmImportFixture {
	t.Helper()
	ca := certtest.NewCA(t)
	crt := certtest.Cert(opts...)
	is := ca.IssueSecret(t, crt, nil, certtest.Leaf{})
	if withChain {
		is.Secret.Data["tls.crt"] = append(append([]byte{}, is.CertPEM...), ca.PEM...)
	}
	sec := is.Secret
	st := certtest.State(crt, &sec)
	certificates.ApplyReadiness(st)
	if !api.IsTrue(crt.Status.Conditions, api.CertificateConditionReady) {
		t.Fatalf("acmImportFixture is not Ready: %+v", crt.Status.Conditions)
	}
	return &acmImportFixture{st: st, issued: is, ca: ca}
}

// imported records a previous import of the stored certificate.
func (f *acmImportFixture) imported() {
	s := &f.st.Cert.Status
	s.ACMCertificateARN, s.ACMCertificateSerial = arn, certificates.FormatACMSerial(f.issued.Leaf.SerialNumber)
	api.SetCondition(&s.Conditions, api.Condition{Type: api.CertificateConditionACMImported, Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}, certtest.T0)
}

// renewed replaces the stored key pair by a new issuance (a new serial).
func (f *acmImportFixture) renewed(t *testing.T) {
	is := f.ca.IssueSecret(t, f.st.Cert, nil, certtest.Leaf{})
	sec := is.Secret
	f.st.SetSecret(&sec)
	f.issued = is
	certificates.ApplyReadiness(f.st)
}

func TestACMImportStep(t *testing.T) {
	transient := errors.New("ACM: ThrottlingException")
	cases := []struct {
		name      string
		opts      []func(*api.Certificate)
		chain     bool
		setup     func(*testing.T, *acmImportFixture)
		importer  *fakeImporter // nil: none configured
		wantCalls int
		wantRef   string // Ref of the import request
		wantWrite bool
		wantErr   bool
		wantCond  *api.Condition // nil: no ACMImported condition
		wantARN   string
		wantKept  bool // the status serial is the stored leaf's
		metric    string
	}{
		{name: "annotation absent: nothing", importer: &fakeImporter{}},
		{name: "annotation removed: condition dropped, ARN kept", importer: &fakeImporter{},
			setup: func(_ *testing.T, f *acmImportFixture) { f.imported() }, wantWrite: true, wantARN: arn, wantKept: true},
		{name: "first import records the ARN", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{},
			wantCalls: 1, wantWrite: true, wantARN: arn, wantKept: true, metric: "imported",
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "chain from tls.crt", opts: []func(*api.Certificate){annotated}, chain: true, importer: &fakeImporter{},
			wantCalls: 1, wantWrite: true, wantARN: arn, wantKept: true, metric: "imported",
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "unchanged: no import, no write", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{},
			setup: func(_ *testing.T, f *acmImportFixture) { f.imported() }, wantARN: arn, wantKept: true,
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "renewal re-imports into the same ARN", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{},
			setup:     func(t *testing.T, f *acmImportFixture) { f.imported(); f.renewed(t) },
			wantCalls: 1, wantRef: arn, wantWrite: true, wantARN: arn, wantKept: true, metric: "imported",
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "ARN replaced when ACM lost it", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{ref: arn + "-new"},
			setup:     func(t *testing.T, f *acmImportFixture) { f.imported(); f.renewed(t) },
			wantCalls: 1, wantRef: arn, wantWrite: true, wantARN: arn + "-new", wantKept: true, metric: "imported",
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "ACM already held it (status write lost)", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{unchaged: true},
			wantCalls: 1, wantWrite: true, wantARN: arn, wantKept: true, metric: "unchanged",
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "transient failure is returned for a retry", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{err: transient},
			wantCalls: 1, wantErr: true, metric: "failed"},
		{name: "permanent failure is recorded", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{err: errs.Permanentf("ValidationException: bad chain")},
			wantCalls: 1, wantWrite: true, metric: "failed",
			wantCond: &api.Condition{Status: api.ConditionFalse, Reason: certificates.ReasonACMImportFailed}},
		{name: "no importer configured", opts: []func(*api.Certificate){annotated},
			wantWrite: true, wantCond: &api.Condition{Status: api.ConditionFalse, Reason: certificates.ReasonACMNotConfigured}},
		{name: "Ed25519 cannot be imported", opts: []func(*api.Certificate){annotated, certtest.WithKeySpec(api.Ed25519KeyAlgorithm, 0)}, importer: &fakeImporter{},
			wantWrite: true, wantCond: &api.Condition{Status: api.ConditionFalse, Reason: certificates.ReasonACMUnsupportedKey}},
		{name: "RSA 2048 is imported", opts: []func(*api.Certificate){annotated, certtest.WithKeySpec(api.RSAKeyAlgorithm, 2048)}, importer: &fakeImporter{},
			wantCalls: 1, wantWrite: true, wantARN: arn, wantKept: true, metric: "imported",
			wantCond: &api.Condition{Status: api.ConditionTrue, Reason: certificates.ReasonACMImported}},
		{name: "issuing: wait", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{},
			setup: func(_ *testing.T, f *acmImportFixture) {
				api.SetCondition(&f.st.Cert.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionTrue}, certtest.T0)
			}},
		{name: "not Ready: wait", opts: []func(*api.Certificate){annotated}, importer: &fakeImporter{},
			setup: func(_ *testing.T, f *acmImportFixture) {
				api.SetCondition(&f.st.Cert.Status.Conditions, api.Condition{Type: api.CertificateConditionReady, Status: api.ConditionFalse}, certtest.T0)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newAcmImportFixture(t, tc.chain, tc.opts...)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			w := &certtest.Writer{}
			env, _, m := certtest.Env(certtest.NewMemSecrets(), w)
			if tc.importer != nil {
				env.Importer = tc.importer
			}
			out, err := certificates.ACMImportStep(context.Background(), env, f.st)
			if (err != nil) != tc.wantErr || (err != nil && errs.IsPermanent(err)) {
				t.Fatalf("Step error = %v, want a transient error: %v", err, tc.wantErr)
			}
			if got := len(w.Only("UpdateCertificate")); out.Wrote != tc.wantWrite || got != btoi(tc.wantWrite) {
				t.Fatalf("Wrote = %v with %d writes, want %v", out.Wrote, got, tc.wantWrite)
			}
			var reqs []ports.CertificateImport
			if tc.importer != nil {
				reqs = tc.importer.reqs
			}
			if len(reqs) != tc.wantCalls {
				t.Fatalf("%d import calls, want %d", len(reqs), tc.wantCalls)
			}
			if len(reqs) == 1 {
				checkRequest(t, f, reqs[0], tc.wantRef, tc.chain)
			}
			s := f.st.Cert.Status
			if s.ACMCertificateARN != tc.wantARN {
				t.Errorf("acmCertificateARN = %q, want %q", s.ACMCertificateARN, tc.wantARN)
			}
			if kept := s.ACMCertificateSerial == certificates.FormatACMSerial(f.issued.Leaf.SerialNumber); kept != tc.wantKept {
				t.Errorf("acmCertificateSerial = %q (leaf %s), want recorded: %v", s.ACMCertificateSerial, certificates.FormatACMSerial(f.issued.Leaf.SerialNumber), tc.wantKept)
			}
			cond := api.FindCondition(s.Conditions, api.CertificateConditionACMImported)
			switch {
			case tc.wantCond == nil && cond != nil:
				t.Errorf("ACMImported condition %+v, want none", *cond)
			case tc.wantCond != nil && (cond == nil || cond.Status != tc.wantCond.Status || cond.Reason != tc.wantCond.Reason):
				t.Errorf("ACMImported condition %+v, want %s/%s", cond, tc.wantCond.Status, tc.wantCond.Reason)
			}
			if tc.metric != "" && m.Get(certificates.MetricACMImports+"{result="+tc.metric+"}") != 1 {
				t.Errorf("metric %s{result=%s} not counted: %v", certificates.MetricACMImports, tc.metric, m.Counts)
			}
			for _, c := range w.Only("UpdateCertificate") {
				b, _ := json.Marshal(c.Cert)
				if bytes.Contains(b, []byte("PRIVATE KEY")) || strings.Contains(string(b), string(f.issued.Secret.Data["tls.key"])) {
					t.Fatalf("the written Certificate holds key material: %s", b)
				}
			}
		})
	}
}

// checkRequest verifies what the step sent: the leaf alone as the
// certificate, the rest of tls.crt as the chain, tls.key, the serial,
// the owner and the previous reference.
func checkRequest(t *testing.T, f *acmImportFixture, r ports.CertificateImport, wantRef string, chain bool) {
	t.Helper()
	if r.Ref != wantRef || r.Owner != f.st.Key() || r.Serial.Cmp(f.issued.Leaf.SerialNumber) != 0 {
		t.Errorf("request ref %q owner %s serial %x; want %q, %s, %x", r.Ref, r.Owner, r.Serial, wantRef, f.st.Key(), f.issued.Leaf.SerialNumber)
	}
	if !bytes.Equal(r.Certificate, pki.EncodeCertificatesPEM(f.issued.Leaf)) {
		t.Errorf("certificate is not the leaf alone:\n%s", r.Certificate)
	}
	wantChain := []byte(nil)
	if chain {
		wantChain = f.ca.PEM
	}
	if !bytes.Equal(r.Chain, wantChain) {
		t.Errorf("chain = %q, want %q", r.Chain, wantChain)
	}
	if !bytes.Equal(r.PrivateKey, f.issued.Secret.Data["tls.key"]) {
		t.Errorf("private key is not tls.key")
	}
	for _, s := range []string{r.String(), r.GoString()} {
		if strings.Contains(s, "PRIVATE KEY") {
			t.Errorf("the request prints its key: %s", s)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A permanent failure is recorded once: the next reconcile tries again but
// writes nothing while the outcome is the same.
func TestACMImportPermanentFailureWrittenOnce(t *testing.T) {
	f := newAcmImportFixture(t, false, annotated)
	imp := &fakeImporter{err: errs.Permanentf("AccessDeniedException: not authorized to perform acm:ImportCertificate")}
	for i, wantWrite := range []bool{true, false} {
		w := &certtest.Writer{}
		env, _, _ := certtest.Env(certtest.NewMemSecrets(), w)
		env.Importer = imp
		out, err := certificates.ACMImportStep(context.Background(), env, f.st)
		if err != nil || out.Wrote != wantWrite {
			t.Fatalf("run %d: Wrote = %v, err = %v; want Wrote %v", i, out.Wrote, err, wantWrite)
		}
	}
	if len(imp.reqs) != 2 {
		t.Fatalf("%d import calls, want 2 (one per reconcile)", len(imp.reqs))
	}
	cond := api.FindCondition(f.st.Cert.Status.Conditions, api.CertificateConditionACMImported)
	if cond == nil || !strings.Contains(cond.Message, "acm:ImportCertificate") {
		t.Fatalf("condition %+v does not explain the failure", cond)
	}
}

// Adding the annotation to a Certificate issued long ago imports it on
// its next reconcile; a lost status write is not an error either.
func TestACMImportAnnotationAddedLaterAndLostWrite(t *testing.T) {
	f := newAcmImportFixture(t, false)
	imp := &fakeImporter{}
	w := &certtest.Writer{ErrOn: map[string]error{"UpdateCertificate": ports.ErrConflict}}
	env, _, _ := certtest.Env(certtest.NewMemSecrets(), w)
	env.Importer = imp
	if out, err := certificates.ACMImportStep(context.Background(), env, f.st); err != nil || out.Wrote || len(imp.reqs) != 0 {
		t.Fatalf("without the annotation: %+v, %v, %d imports", out, err, len(imp.reqs))
	}
	annotated(f.st.Cert)
	if _, err := certificates.ACMImportStep(context.Background(), env, f.st); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("lost write: err = %v, want the conflict returned", err)
	}
	if len(imp.reqs) != 1 {
		t.Fatalf("%d imports after adding the annotation, want 1", len(imp.reqs))
	}
}

// TestACMImportUnsupportedKey: the key types and sizes ACM imports.
func TestACMImportUnsupportedKey(t *testing.T) {
	rsaOf := func(bits int) *rsa.PrivateKey {
		return &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: new(big.Int).Lsh(big.NewInt(1), uint(bits-1)), E: 65537}}
	}
	for _, tc := range []struct {
		key  crypto.Signer
		want string
	}{
		{rsaOf(2048), ""}, {rsaOf(4096), ""}, {rsaOf(1024), ""},
		{rsaOf(8192), "not 8192 (spec.privateKey.size)"},
		{&ecdsa.PrivateKey{}, ""},
		{ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)), "ACM does not import Ed25519 keys"},
	} {
		got := certificates.ACMUnsupportedKey(&certificates.Issued{Key: tc.key})
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("unsupportedKey(%T) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestFormatACMSerial(t *testing.T) {
	for _, tc := range []struct {
		n    *big.Int
		want string
	}{
		{big.NewInt(0), "00"},
		{big.NewInt(10), "0a"},
		{new(big.Int).SetBytes([]byte{0x80, 0x01, 0xff}), "80:01:ff"},
	} {
		if got := certificates.FormatACMSerial(tc.n); got != tc.want {
			t.Errorf("FormatSerial(%x) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
