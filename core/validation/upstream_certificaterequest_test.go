package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"strings"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// Transcription of internal/apis/certmanager/validation/certificaterequest_test.go
// (cert-manager at upstreamCommit): TestValidateCertificateRequest and
// TestValidateCertificateRequestUpdate. Upstream's CSRs come from
// gen.CSRForCertificate (a Certificate for example.com with the given
// usages and isCA); these come from pki.GenerateCSR, which encodes the
// same key usage extensions (and basicConstraints for a CA, which
// cert-manager's check accepts when it agrees with spec.isCA).

var (
	upKeyOnce sync.Once
	upKey     *ecdsa.PrivateKey
)

func upSigner() *ecdsa.PrivateKey {
	upKeyOnce.Do(func() {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		upKey = k
	})
	return upKey
}

// upCSR is a CSR for example.com with the given usages (encoded as
// cert-manager encodes them) and isCA.
func upCSR(isCA bool, usages ...api.KeyUsage) []byte {
	crt := &api.Certificate{Spec: api.CertificateSpec{DNSNames: []string{"example.com"}, Usages: usages, IsCA: isCA,
		PrivateKey: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}}}
	b, err := pki.GenerateCSR(crt, upSigner())
	if err != nil {
		panic(err)
	}
	return b
}

// rawCSR is a CSR for example.com with exactly the given extensions.
func rawCSR(exts ...pkix.Extension) []byte {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		DNSNames: []string{"example.com"}, ExtraExtensions: exts}, upSigner())
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func emptyKeyUsage() pkix.Extension {
	v, err := asn1.Marshal(asn1.BitString{Bytes: []byte{}, BitLength: 0})
	if err != nil {
		panic(err)
	}
	return pkix.Extension{Id: pki.OIDExtensionKeyUsage, Value: v}
}

// upCR validates a CertificateRequest in namespace default with
// cert-manager's validIssuerRef and the given spec and conditions.
func upCR(request []byte, isCA bool, usages []api.KeyUsage, conds ...api.Condition) func() ErrorList {
	return func() ErrorList {
		return CertificateRequest(&api.CertificateRequest{
			ObjectMeta: api.ObjectMeta{Name: "cr", Namespace: "default"},
			Spec: api.CertificateRequestSpec{Request: request, IssuerRef: api.IssuerReference{Name: "name", Kind: api.KindClusterIssuer},
				IsCA: isCA, Usages: usages},
			Status: api.CertificateRequestStatus{Conditions: conds},
		})
	}
}

func cond(t string, s api.ConditionStatus, reason string) api.Condition {
	return api.Condition{Type: t, Status: s, Reason: reason}
}

func kus(u ...api.KeyUsage) []api.KeyUsage { return u }

const (
	approved = api.CertificateRequestConditionApproved
	denied   = api.CertificateRequestConditionDenied
	crTest   = "TestValidateCertificateRequest"
	crUpdate = "TestValidateCertificateRequestUpdate"
)

var (
	uSig, uDS, uKE, uServer, uClient = api.UsageSigning, api.UsageDigitalSignature, api.UsageKeyEncipherment, api.UsageServerAuth, api.UsageClientAuth
	uAny, uCertSign                  = api.UsageAny, api.UsageCertSign
	anyCA                            = func() []byte { return upCSR(true, uAny) }
)

// upUpdate runs certfn's update rules (annotations and spec; conditions)
// on old → new. certfn names each changed field under spec where
// cert-manager reports "spec": such paths are folded into "spec" here.
func upUpdate(old, new *api.CertificateRequest) func() ErrorList {
	return func() ErrorList {
		errs := CertificateRequestUpdate(old, new)
		errs = append(errs, CertificateRequestConditionsUpdate(old.Status.Conditions, new.Status.Conditions, "status.conditions")...)
		for i, e := range errs {
			if strings.HasPrefix(e.Path, "spec.") || strings.HasPrefix(e.Path, "spec[") {
				errs[i].Path = "spec"
			}
		}
		return errs
	}
}

// baseCR is upstream's baseCR; mods change a copy.
func baseCR(mods ...func(*api.CertificateRequest)) *api.CertificateRequest {
	r := &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Annotations: map[string]string{"abc": "123", "cert-manager.io/foo": "abc", "acme.cert-manager.io/bar": "123"}},
		Spec: api.CertificateRequestSpec{Request: baseRequest(), IssuerRef: api.IssuerReference{Name: "name", Kind: api.KindClusterIssuer},
			UID: "abc", Username: "user-1", Groups: []string{"group-1", "group-2"},
			Extra: map[string][]string{"1": {"abc", "efg"}, "2": {"efg", "abc"}}},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

var (
	baseOnce sync.Once
	baseCSR  []byte
)

func baseRequest() []byte {
	baseOnce.Do(func() { baseCSR = upCSR(false) })
	return baseCSR
}

// condCR is a request with baseRequest, validIssuerRef and conds.
func condCR(conds ...api.Condition) *api.CertificateRequest {
	return &api.CertificateRequest{Spec: api.CertificateRequestSpec{Request: baseRequest(),
		IssuerRef: api.IssuerReference{Name: "name", Kind: api.KindClusterIssuer}},
		Status: api.CertificateRequestStatus{Conditions: conds}}
}

func requestCases() []upstreamCase {
	return []upstreamCase{
		// TestValidateCertificateRequest
		{test: crTest, name: "Test csr with no usages", run: upCR(upCSR(false), false, nil)},
		{test: crTest, name: "Test csr with double signature usages", run: upCR(upCSR(false, uSig, uDS, uKE), false, kus(uSig, uKE))},
		{test: crTest, name: "Test csr with double extended usages", run: upCR(upCSR(false, uDS, uKE, uServer, uClient), false, kus(uSig, uKE, uServer, uClient))},
		{test: crTest, name: "Test csr with reordered usages", run: upCR(upCSR(false, uDS, uKE, uServer, uClient), false, kus(uServer, uClient, uKE, uDS))},
		{test: crTest, name: "Test csr that is CA with usages set", run: upCR(upCSR(true, uAny, uDS, uKE, uCertSign), true, kus(uAny, uDS, uKE, uCertSign))},
		{test: crTest, name: "Test csr that is CA but no cert sign in usages", run: upCR(upCSR(true, uAny, uDS, uKE, uClient, uServer), true, kus(uAny, uDS, uKE, uClient, uServer))},
		{test: crTest, name: "Test csr with default usages and isCA", run: upCR(upCSR(true, uDS, uCertSign, uKE), true, nil)},
		{test: crTest, name: "Test cr with default usages", run: upCR(upCSR(false), false, kus(uKE, uDS))},
		{test: crTest, name: "Test cr with default usages, without any encoded in csr", run: upCR(rawCSR(), false, kus(uKE, uDS))},
		{test: crTest, name: "Test cr with default usages, with empty set encoded in csr", run: upCR(rawCSR(emptyKeyUsage()), false, kus(uKE, uDS)), paths: []string{"spec.request"}},
		{test: crTest, name: "Error on csr not having all usages", run: upCR(upCSR(false, uDS, uKE, uServer), false, kus(uSig, uKE, uServer, uClient)), paths: []string{"spec.request"}},
		{test: crTest, name: "Error on cr not having all usages", run: upCR(upCSR(false, uDS, uKE, uServer, uClient), false, kus(uSig, uKE)), paths: []string{"spec.request"}},
		{test: crTest, name: "Test csr with any, signing, digital signature, key encipherment, server and client auth", run: upCR(upCSR(true, uAny, uSig, uKE, uClient, uServer), true, kus(uAny, uSig, uKE, uClient, uServer))},
		{test: crTest, name: "CertificateRequest with single Approved=true condition, shouldn't error", run: upCR(anyCA(), true, kus(uAny), cond(approved, api.ConditionTrue, ""))},
		{test: crTest, name: "CertificateRequest with single Denied=true condition, shouldn't error", run: upCR(anyCA(), true, kus(uAny), cond(denied, api.ConditionTrue, ""))},
		{test: crTest, name: "CertificateRequest with single Approved=false condition, should error", run: upCR(anyCA(), true, kus(uAny), cond(approved, api.ConditionFalse, "cert-manager.io")),
			paths: []string{"status.conditions.Approved"}},
		{test: crTest, name: "CertificateRequest with single Denied=false condition, should error", run: upCR(anyCA(), true, kus(uAny), cond(denied, api.ConditionFalse, "Foo")),
			paths: []string{"status.conditions.Denied"}},
		{test: crTest, name: "CertificateRequest with both Denied=false and Approved=false conditions, should error", run: upCR(anyCA(), true, kus(uAny),
			cond(approved, api.ConditionFalse, "cert-manager.io"), cond(denied, api.ConditionFalse, "Foo")),
			paths: []string{"status.conditions.Approved", "status.conditions.Denied", "status.conditions"}},
		{test: crTest, name: "CertificateRequest with both Denied=true and Approved=true conditions, should error", run: upCR(anyCA(), true, kus(uAny),
			cond(approved, api.ConditionTrue, "cert-manager.io"), cond(denied, api.ConditionTrue, "Foo")), paths: []string{"status.conditions"}},
		{test: crTest, name: "CertificateRequest with multiple Approved conditions, should error", run: upCR(anyCA(), true, kus(uAny),
			cond(approved, api.ConditionTrue, "cert-manager.io"), cond(approved, api.ConditionFalse, "foo")), paths: []string{"status.conditions"}},
		{test: crTest, name: "CertificateRequest with multiple Denied conditions, should error", run: upCR(anyCA(), true, kus(uAny),
			cond(denied, api.ConditionTrue, "Foo"), cond(denied, api.ConditionFalse, "Foo")), paths: []string{"status.conditions"}},

		// TestValidateCertificateRequestUpdate
		{test: crUpdate, name: "if CertificateRequest spec and cert-manager.io annotations change, error", run: upUpdate(baseCR(), &api.CertificateRequest{
			ObjectMeta: api.ObjectMeta{Annotations: map[string]string{"acme.cert-manager.io/bar": "123", "123": "abc"}},
			Spec:       api.CertificateRequestSpec{Request: upCSR(false)}}),
			paths: []string{"metadata.annotations.cert-manager.io/foo", "spec"}},
		{test: crUpdate, name: "if CertificateRequest spec and acme.cert-manager.io annotations change, error", run: upUpdate(baseCR(), &api.CertificateRequest{
			ObjectMeta: api.ObjectMeta{Annotations: map[string]string{"cert-manager.io/foo": "abc", "123": "abc"}},
			Spec:       api.CertificateRequestSpec{Request: upCSR(false)}}),
			paths: []string{"metadata.annotations.acme.cert-manager.io/bar", "spec"}},
		{test: crUpdate, name: "if CertificateRequest spec and annotations do not change, don't error", run: upUpdate(baseCR(), baseCR())},
		{test: crUpdate, name: "CertificateRequest with single Approved=true condition that doesn't change, shouldn't error",
			run: upUpdate(condCR(cond(approved, api.ConditionTrue, "")), condCR(cond(approved, api.ConditionTrue, "")))},
		{test: crUpdate, name: "CertificateRequest with single Denied=true condition that doesn't change, shouldn't error",
			run: upUpdate(condCR(cond(denied, api.ConditionTrue, "")), condCR(cond(denied, api.ConditionTrue, "")))},
		{test: crUpdate, name: "CertificateRequest with single Approved=false condition that changes, should error",
			run:   upUpdate(condCR(cond(approved, api.ConditionFalse, "Foo")), condCR(cond(approved, api.ConditionTrue, "cert-manager.io"))),
			paths: []string{"status.conditions"}},
		{test: crUpdate, name: "CertificateRequest with single Denied=false condition that changes, should error",
			run:   upUpdate(condCR(cond(denied, api.ConditionTrue, "Foo")), condCR(cond(denied, api.ConditionFalse, "test"))),
			paths: []string{"status.conditions", "status.conditions.Denied"}},
		{test: crUpdate, name: "CertificateRequest with single Denied=true condition that changes to Approve=true, should error",
			run:   upUpdate(condCR(cond(denied, api.ConditionTrue, "Foo")), condCR(cond(approved, api.ConditionTrue, "cert-manager.io"))),
			paths: []string{"status.conditions"}},
		{test: crUpdate, name: "CertificateRequest with single Approved=true condition that changes to Denied=true, should error",
			run:   upUpdate(condCR(cond(approved, api.ConditionTrue, "cert-manager.io")), condCR(cond(denied, api.ConditionTrue, "Foo"))),
			paths: []string{"status.conditions"}},
		{test: crUpdate, name: "CertificateRequest with no condition that changes to Approve=true, shouldn't error",
			run: upUpdate(condCR(), condCR(cond(approved, api.ConditionTrue, "cert-manager.io")))},
		{test: crUpdate, name: "CertificateRequest with no condition that changes to Denied=true, shouldn't error",
			run: upUpdate(condCR(), condCR(cond(denied, api.ConditionTrue, "Foo")))},
		{test: crUpdate, name: "CertificateRequest with single Approved=true condition that is removed, should error",
			run: upUpdate(condCR(cond(approved, api.ConditionTrue, "")), condCR()), paths: []string{"status.conditions"}},
		{test: crUpdate, name: "CertificateRequest with single Denied=true condition that is removed, should error",
			run: upUpdate(condCR(cond(denied, api.ConditionTrue, "")), condCR()), paths: []string{"status.conditions"}},
	}
}

func TestUpstreamCertificateRequest(t *testing.T) {
	cases := requestCases()
	runUpstream(t, "internal/apis/certmanager/validation/certificaterequest_test.go", "", cases)
	countCases(t, "certificaterequest_test.go", cases, nil)
}
