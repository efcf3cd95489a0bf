// Package certtest holds the builders and test doubles shared by the unit
// tests of the Certificate steps (core/certificates), the
// CertificateRequest steps (core/certificaterequests), the issuer step and the
// kernel: Certificates and CertificateRequests built from small options, a
// tiny in-test CA that issues real certificates with chosen validity and
// SANs, an in-memory secret store and recording writers.
//
// It is test support only: nothing in a production path imports it.
package certtest

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// T0 is the fake "now" every step test starts from.
var T0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Namespace and names the default builders use.
const (
	Namespace  = "default"
	CertName   = "web"
	SecretName = "web-tls"
	IssuerName = "ca"
	CertUID    = "0b6f7c1e-6b0e-4c55-9e36-3f4f4b1d2a10"
)

// Cert returns a Certificate "default/web" for web.example.com with an
// ECDSA P-256 key, issued by Issuer "ca", generation 1, then applies opts.
func Cert(opts ...func(*api.Certificate)) *api.Certificate {
	c := &api.Certificate{
		TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificate},
		ObjectMeta: api.ObjectMeta{Name: CertName, Namespace: Namespace, UID: CertUID, Generation: 1,
			CreationTimestamp: api.NewTime(T0.Add(-time.Hour))},
		Spec: api.CertificateSpec{
			SecretName: SecretName,
			CommonName: "web.example.com",
			DNSNames:   []string{"web.example.com"},
			PrivateKey: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 256},
			IssuerRef:  api.IssuerReference{Name: IssuerName, Kind: api.KindIssuer},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithDNSNames sets spec.dnsNames.
func WithDNSNames(names ...string) func(*api.Certificate) {
	return func(c *api.Certificate) { c.Spec.DNSNames = names }
}

// WithKeySpec sets spec.privateKey's algorithm and size (keeping its other fields).
func WithKeySpec(alg api.PrivateKeyAlgorithm, size int) func(*api.Certificate) {
	return func(c *api.Certificate) {
		if c.Spec.PrivateKey == nil {
			c.Spec.PrivateKey = &api.CertificatePrivateKey{}
		}
		c.Spec.PrivateKey.Algorithm, c.Spec.PrivateKey.Size = alg, size
	}
}

// WithRotationPolicy sets spec.privateKey.rotationPolicy.
func WithRotationPolicy(p api.PrivateKeyRotationPolicy) func(*api.Certificate) {
	return func(c *api.Certificate) {
		if c.Spec.PrivateKey == nil {
			c.Spec.PrivateKey = &api.CertificatePrivateKey{}
		}
		c.Spec.PrivateKey.RotationPolicy = p
	}
}

// WithIssuerRef sets spec.issuerRef.
func WithIssuerRef(name, kind string) func(*api.Certificate) {
	return func(c *api.Certificate) { c.Spec.IssuerRef = api.IssuerReference{Name: name, Kind: kind} }
}

// WithDuration sets spec.duration.
func WithDuration(d time.Duration) func(*api.Certificate) {
	return func(c *api.Certificate) { c.Spec.Duration = api.NewDuration(d) }
}

// WithRevision sets status.revision.
func WithRevision(rev int) func(*api.Certificate) {
	return func(c *api.Certificate) { c.Status.Revision = &rev }
}

// WithIssuing sets Issuing=True (reason, transition time at).
func WithIssuing(reason string, at time.Time) func(*api.Certificate) {
	return func(c *api.Certificate) {
		api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing,
			Status: api.ConditionTrue, Reason: reason, Message: "test"}, at)
	}
}

// WithNextKey sets status.nextPrivateKeySecretName.
func WithNextKey(name string) func(*api.Certificate) {
	return func(c *api.Certificate) { c.Status.NextPrivateKeySecretName = &name }
}

// WithFailures records n failed issuances, the last one at t.
func WithFailures(n int, t time.Time) func(*api.Certificate) {
	return func(c *api.Certificate) {
		c.Status.FailedIssuanceAttempts = &n
		c.Status.LastFailureTime = api.NewTime(t)
	}
}

// Named sets metadata.name (spec.secretName is kept: Certificates built
// Named("other") share the default secret "web-tls").
func Named(name string) func(*api.Certificate) {
	return func(c *api.Certificate) { c.Name = name }
}

// CreatedAt sets metadata.creationTimestamp (Cert's default is T0-1h).
func CreatedAt(t time.Time) func(*api.Certificate) {
	return func(c *api.Certificate) { c.CreationTimestamp = api.NewTime(t) }
}

// Sharing sets st.Sharers: the other Certificates of the namespace whose
// spec.secretName is st's (the controller lists them; see State.Ownership).
// It returns st.
func Sharing(st *certificates.State, others ...*api.Certificate) *certificates.State {
	st.Sharers = append(st.Sharers, others...)
	return st
}

// Key generates a private key as spec asks (nil: the Cert default, ECDSA P-256).
func Key(t testing.TB, spec *api.CertificatePrivateKey) crypto.Signer {
	t.Helper()
	if spec == nil {
		spec = &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 256}
	}
	k, err := pki.GenerateKey(spec)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return k
}

// KeyPEM returns key as PKCS#8 PEM.
func KeyPEM(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	b, err := pki.EncodePKCS8PEM(key)
	if err != nil {
		t.Fatalf("encode key: %v", err)
	}
	return b
}

// CSR returns a PEM CSR for crt signed by key (pki.GenerateCSR).
func CSR(t testing.TB, crt *api.Certificate, key crypto.Signer) []byte {
	t.Helper()
	b, err := pki.GenerateCSR(crt, key)
	if err != nil {
		t.Fatalf("generate CSR: %v", err)
	}
	return b
}

// BareCSR returns a PEM CSR for dnsName (common name and DNS SAN) signed
// by a fresh P-256 key, without extensions: its usages are whatever the
// request that carries it says (a CertificateSigningRequest's
// spec.usages).
func BareCSR(t testing.TB, dnsName string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName}},
		Key(t, nil))
	if err != nil {
		t.Fatalf("create CSR: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// HiddenIPCSR returns a PEM CSR for dnsName (common name and a DNS SAN)
// whose subjectAltName also holds an iPAddress GeneralName encoded as
// constructed: crypto/x509 skips it, while OpenSSL concatenates its OCTET
// STRING segments and reads IP:127.0.0.1 (16 content bytes, so a reader
// that ignores the constructed bit sees an IPv6 address). certfn must
// refuse it wherever a CSR is read.
func HiddenIPCSR(t testing.TB, dnsName string) []byte {
	t.Helper()
	mustDER := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	octets := func(b ...byte) []byte { return mustDER(asn1.RawValue{Tag: asn1.TagOctetString, Bytes: b}) }
	var segs []byte
	for _, s := range [][]byte{octets(127, 0), octets(0, 1), octets(), octets(), octets(), octets()} {
		segs = append(segs, s...)
	}
	dns := mustDER(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, Bytes: []byte(dnsName)})
	ip := mustDER(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 7, IsCompound: true, Bytes: segs})
	san := mustDER(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: append(dns, ip...)})
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: dnsName},
		ExtraExtensions: []pkix.Extension{{Id: pki.OIDExtensionSubjectAltName, Value: san}}}, Key(t, nil))
	if err != nil {
		t.Fatalf("create CSR: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// Request returns the CertificateRequest the requestmanager would create
// for crt at revision rev, signed by key (name "<cert>-<rev>", revision,
// certificate-name and private-key-secret-name annotations, a controller
// owner reference), then applies opts.
func Request(t testing.TB, crt *api.Certificate, key crypto.Signer, rev int, opts ...func(*api.CertificateRequest)) *api.CertificateRequest {
	t.Helper()
	ctrl := true
	cr := &api.CertificateRequest{
		TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{
			Name:      certificates.RequestName(crt.Name, rev),
			Namespace: crt.Namespace,
			Annotations: map[string]string{
				api.AnnotationRevision:             strconv.Itoa(rev),
				api.AnnotationCertificateName:      crt.Name,
				api.AnnotationPrivateKeySecretName: certificates.NextKeySecretName(crt.Name),
			},
			OwnerReferences: []api.OwnerReference{{APIVersion: api.CertManagerV1, Kind: api.KindCertificate,
				Name: crt.Name, UID: crt.UID, Controller: &ctrl}},
			CreationTimestamp: api.NewTime(T0.Add(-time.Minute)),
		},
		Spec: api.CertificateRequestSpec{
			Duration:  crt.Spec.Duration,
			IssuerRef: crt.Spec.IssuerRef,
			Request:   CSR(t, crt, key),
			IsCA:      crt.Spec.IsCA,
			Usages:    crt.Spec.Usages,
			Username:  "system:certfn",
		},
	}
	for _, o := range opts {
		o(cr)
	}
	return cr
}

// WithName renames a request.
func WithName(name string) func(*api.CertificateRequest) {
	return func(cr *api.CertificateRequest) { cr.Name = name }
}

// WithoutRevision removes the revision annotation.
func WithoutRevision() func(*api.CertificateRequest) {
	return func(cr *api.CertificateRequest) { delete(cr.Annotations, api.AnnotationRevision) }
}

// Approved adds Approved=True at at.
func Approved(at time.Time) func(*api.CertificateRequest) {
	return func(cr *api.CertificateRequest) {
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionApproved,
			Status: api.ConditionTrue, Reason: "test", Message: "approved in a test"}, at)
	}
}

// Issued marks the request issued at at with chain (leaf first) and ca.
func Issued(chainPEM, caPEM []byte, at time.Time) func(*api.CertificateRequest) {
	return func(cr *api.CertificateRequest) {
		Approved(at)(cr)
		cr.Status.Certificate, cr.Status.CA = chainPEM, caPEM
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionReady,
			Status: api.ConditionTrue, Reason: api.CertificateRequestReasonIssued, Message: "issued"}, at)
	}
}

// Failed marks the request failed at at with msg (Failed=True, Ready=False/Failed, failureTime).
func Failed(msg string, at time.Time) func(*api.CertificateRequest) {
	return func(cr *api.CertificateRequest) {
		Approved(at)(cr)
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionFailed,
			Status: api.ConditionTrue, Reason: "SigningError", Message: msg}, at)
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionReady,
			Status: api.ConditionFalse, Reason: api.CertificateRequestReasonFailed, Message: "Signing failed: " + msg}, at)
		cr.Status.FailureTime = api.NewTime(at)
	}
}

// Denied marks the request denied at at (Denied=True, Ready=False/Denied, failureTime).
func Denied(msg string, at time.Time) func(*api.CertificateRequest) {
	return func(cr *api.CertificateRequest) {
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionDenied,
			Status: api.ConditionTrue, Reason: "test", Message: msg}, at)
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionReady,
			Status: api.ConditionFalse, Reason: api.CertificateRequestReasonDenied, Message: msg}, at)
		cr.Status.FailureTime = api.NewTime(at)
	}
}

// CA is a small certificate authority for tests: a self-signed ECDSA root
// that issues leaves with chosen validity and names.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte
}

// NewCA returns a root CA valid from T0-24h to T0+10 years.
func NewCA(t testing.TB) *CA {
	t.Helper()
	return NewCAValid(t, T0.Add(-24*time.Hour), T0.Add(10*365*24*time.Hour), true)
}

// NewCAValid returns a self-signed certificate valid from nb to na; isCA
// sets the CA bit (false makes a "CA" that is not one).
func NewCAValid(t testing.TB, nb, na time.Time, isCA bool) *CA {
	t.Helper()
	key := Key(t, nil)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: "certtest CA"},
		NotBefore: nb, NotAfter: na, BasicConstraintsValid: true, IsCA: isCA,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("create CA: %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse CA: %v", err)
	}
	return &CA{Cert: c, Key: key, PEM: pki.EncodeCertificatesPEM(c)}
}

// Secret returns the CA's key pair as a secret (tls.crt, tls.key) named ns/name.
func (ca *CA) Secret(t testing.TB, ns, name string) ports.Secret {
	t.Helper()
	return ports.Secret{Namespace: ns, Name: name,
		Data: map[string][]byte{"tls.crt": ca.PEM, "tls.key": KeyPEM(t, ca.Key)}}
}

// Leaf describes a leaf to issue. Zero fields take the defaults of Issue.
type Leaf struct {
	// NotBefore and NotAfter default to T0-1h and T0-1h+90 days.
	NotBefore, NotAfter time.Time
	// Tweak edits the template last (SANs, subject, ...).
	Tweak func(*x509.Certificate)
}

// Issue signs a certificate for pub carrying crt's subject and SANs (taken
// from the CSR pki.GenerateCSR builds for crt) and returns it with its PEM.
func (ca *CA) Issue(t testing.TB, crt *api.Certificate, key crypto.Signer, l Leaf) (*x509.Certificate, []byte) {
	t.Helper()
	csr, err := pki.ParseCSRPEM(CSR(t, crt, key))
	if err != nil {
		t.Fatalf("parse CSR: %v", err)
	}
	if l.NotBefore.IsZero() {
		l.NotBefore = T0.Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = l.NotBefore.Add(90 * 24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), RawSubject: csr.RawSubject,
		NotBefore: l.NotBefore, NotAfter: l.NotAfter,
		DNSNames: csr.DNSNames, IPAddresses: csr.IPAddresses, URIs: csr.URIs, EmailAddresses: csr.EmailAddresses,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if crt.Spec.IsCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if l.Tweak != nil {
		l.Tweak(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("issue certificate: %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return c, pki.EncodeCertificatesPEM(c)
}

// IssuedSecret is what IssueSecret returns: the stored secret and its parts.
type IssuedSecret struct {
	Secret  ports.Secret
	Key     crypto.Signer
	Leaf    *x509.Certificate
	CertPEM []byte
}

// IssueSecret builds spec.secretName of crt as the issuing step stores it:
// a fresh key as spec.privateKey asks (or key when not nil), a leaf from ca
// per l, every output the spec asks for, and cert-manager's annotations
// (issuer name/kind/group, certificate name, names).
func (ca *CA) IssueSecret(t testing.TB, crt *api.Certificate, key crypto.Signer, l Leaf) IssuedSecret {
	t.Helper()
	if key == nil {
		key = Key(t, crt.Spec.PrivateKey)
	}
	leaf, certPEM := ca.Issue(t, crt, key, l)
	data, err := pki.BuildSecretData(pki.OutputInput{Key: key, CertPEM: certPEM, CAPEM: ca.PEM, Spec: &crt.Spec})
	if err != nil {
		t.Fatalf("build secret data: %v", err)
	}
	sec := ports.Secret{Namespace: crt.Namespace, Name: crt.Spec.SecretName, Data: data,
		Labels: map[string]string{}, Annotations: map[string]string{}}
	if tpl := crt.Spec.SecretTemplate; tpl != nil {
		for k, v := range tpl.Labels {
			sec.Labels[k] = v
		}
		for k, v := range tpl.Annotations {
			sec.Annotations[k] = v
		}
	}
	for k, v := range pki.SecretMetadata(crt, leaf) {
		sec.Annotations[k] = v
	}
	return IssuedSecret{Secret: sec, Key: key, Leaf: leaf, CertPEM: certPEM}
}

// NextKeySecret returns an owned next-private-key secret holding key.
func NextKeySecret(t testing.TB, crt *api.Certificate, key crypto.Signer) ports.Secret {
	t.Helper()
	return ports.Secret{Namespace: crt.Namespace, Name: certificates.NextKeySecretName(crt.Name),
		Data:        map[string][]byte{"tls.key": KeyPEM(t, key)},
		Labels:      map[string]string{api.LabelNextPrivateKey: "true"},
		Annotations: map[string]string{api.AnnotationCertificateName: crt.Name, api.LabelNextPrivateKey: "true"}}
}

// State returns the loaded state of crt at T0 (version 1) with the given
// stored secret (nil: none) and owned requests (version 1 each).
func State(crt *api.Certificate, secret *ports.Secret, reqs ...*api.CertificateRequest) *certificates.State {
	st := &certificates.State{Cert: crt, Version: 1, Now: T0, Secret: secret}
	for _, r := range reqs {
		st.Requests = append(st.Requests, certificates.Request{CR: r, Version: 1})
	}
	return st
}

// Copy returns a deep copy of v through JSON (for snapshots of written objects).
func Copy[T any](t testing.TB, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("copy: %v", err)
	}
	return &out
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("serial: %v", err)
	}
	return n
}
