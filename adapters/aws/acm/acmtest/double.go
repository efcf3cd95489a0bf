// Package acmtest holds a HAND-WRITTEN TEST DOUBLE of AWS Certificate
// Manager for the tests of adapters/aws/acm and for end-to-end tests that
// import certificates.
//
// HAND-WRITTEN TEST DOUBLE — NOT AWS CERTIFICATE MANAGER.
//
// No ACM emulator can be installed on these machines, so Double is an
// httptest.Server that speaks the service's JSON protocol (awsJson1_1:
// POST /, X-Amz-Target: CertificateManager.<Op>, blobs as base64, errors
// as {"__type": ...} with HTTP 400) for ImportCertificate,
// DescribeCertificate, GetCertificate, ListCertificates and
// ListTagsForCertificate, with the behaviour AWS documents for them: an
// import checks that the certificate, chain and key are PEM and that the
// key matches the certificate (RSA 1024-4096 and ECDSA P-256/384/521 only),
// that the current time (Now) is between the certificate's NotBefore and
// NotAfter (ValidationException otherwise, as ImportCertificate's
// reference requires), a re-import keeps the ARN and refuses tags, an unknown ARN is
// ResourceNotFoundException, ListCertificates returns only RSA_2048
// certificates unless Includes.keyTypes says otherwise and pages with
// MaxItems/NextToken, Serial is ACM's colon-separated hex. It can also
// emulate the worker's IAM policy (Deployment: certificates without that
// certfn-deployment tag answer AccessDeniedException to
// DescribeCertificate, ListTagsForCertificate and re-import), answer a
// chosen error for the next N calls, and count calls per operation. It is
// not a faithful emulator (no expiry of held certificates, export, renewal, in-use checks, tag
// policies or quotas); tests run against LocalStack instead when
// AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_ACM) is set.
package acmtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cert is one certificate the double holds.
type Cert struct {
	ARN      string
	Leaf     *x509.Certificate
	CertPEM  []byte
	ChainPEM []byte
	KeyAlg   string
	Tags     map[string]string
	Imports  int // 1 + re-imports
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	// URL is the endpoint (awscfg.ForEndpoint(d.URL, ...)).
	URL string
	// Deployment, when set, emulates the worker's IAM policy: certificates
	// whose certfn-deployment tag differs may not be described, re-imported
	// or have their tags listed, and new imports must carry the tag.
	Deployment string
	// Now is the time an import's validity is checked against; nil is the
	// wall clock, as ACM's. Set it before the first call.
	Now func() time.Time

	mu       sync.Mutex
	certs    map[string]*Cert
	order    []string
	seq      int
	calls    map[string]int
	failNext int
	failOp   string
	failType string
	failMsg  string
	failCode int
}

// New starts a double for t.
func New(t testing.TB) *Double {
	t.Helper()
	d := &Double{certs: map[string]*Cert{}, calls: map[string]int{}}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	d.URL = srv.URL
	return d
}

// Calls returns how many times op was called (failed calls included).
func (d *Double) Calls(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

// FailNext makes the next n calls of op ("" : any operation) answer
// errType with message msg and HTTP status code.
func (d *Double) FailNext(n int, op, errType, msg string, code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failNext, d.failOp, d.failType, d.failMsg, d.failCode = n, op, errType, msg, code
}

// Get returns a copy of the certificate arn, if the double holds it.
func (d *Double) Get(arn string) (Cert, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.certs[arn]
	if !ok {
		return Cert{}, false
	}
	out := *c
	out.Tags = map[string]string{}
	for k, v := range c.Tags {
		out.Tags[k] = v
	}
	return out, true
}

// ARNs returns the ARNs held, oldest first.
func (d *Double) ARNs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.order)
}

// Delete forgets arn (a certificate deleted in the console).
func (d *Double) Delete(arn string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.certs, arn)
	d.order = slices.DeleteFunc(d.order, func(a string) bool { return a == arn })
}

type apiError struct {
	typ, msg string
	code     int
}

// ServeHTTP implements http.Handler.
func (d *Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "CertificateManager.")
	if r.Method != http.MethodPost || !ok {
		http.Error(w, "not an ACM call", http.StatusBadRequest)
		return
	}
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"__type": "SerializationException", "message": err.Error()})
		return
	}
	out, aerr := d.call(op, in)
	if aerr != nil {
		code := aerr.code
		if code == 0 {
			code = http.StatusBadRequest
		}
		writeJSON(w, code, map[string]any{"__type": aerr.typ, "message": aerr.msg})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *Double) call(op string, in map[string]any) (map[string]any, *apiError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[op]++
	if d.failNext > 0 && (d.failOp == "" || d.failOp == op) {
		d.failNext--
		return nil, &apiError{d.failType, d.failMsg, d.failCode}
	}
	switch op {
	case "ImportCertificate":
		return d.importCertificate(in)
	case "DescribeCertificate":
		return d.describeCertificate(in)
	case "GetCertificate":
		return d.getCertificate(in)
	case "ListCertificates":
		return d.listCertificates(in)
	case "ListTagsForCertificate":
		return d.listTags(in)
	}
	return nil, &apiError{typ: "UnknownOperationException", msg: "the test double does not implement " + op}
}

func str(in map[string]any, k string) string {
	s, _ := in[k].(string)
	return s
}

func blob(in map[string]any, k string) ([]byte, bool) {
	s, ok := in[k].(string)
	if !ok {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}

// lookup finds arn, applying the IAM emulation.
func (d *Double) lookup(arn string) (*Cert, *apiError) {
	c, ok := d.certs[arn]
	if !ok {
		if !strings.HasPrefix(arn, "arn:aws:acm:") {
			return nil, &apiError{typ: "InvalidArnException", msg: fmt.Sprintf("%s is not a valid ARN", arn)}
		}
		return nil, &apiError{typ: "ResourceNotFoundException", msg: fmt.Sprintf("Could not find certificate %s.", arn)}
	}
	if d.Deployment != "" && c.Tags["certfn-deployment"] != d.Deployment {
		return nil, &apiError{typ: "AccessDeniedException", msg: "User is not authorized to perform this action on " + arn}
	}
	return c, nil
}

func (d *Double) importCertificate(in map[string]any) (map[string]any, *apiError) {
	certPEM, ok1 := blob(in, "Certificate")
	keyPEM, ok2 := blob(in, "PrivateKey")
	if !ok1 || !ok2 || len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, &apiError{typ: "ValidationException", msg: "Certificate and PrivateKey are required"}
	}
	leaf, err := onlyCertificate(certPEM)
	if err != nil {
		return nil, &apiError{typ: "ValidationException", msg: "The certificate field contains " + err.Error()}
	}
	now := time.Now()
	if d.Now != nil {
		now = d.Now()
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return nil, &apiError{typ: "ValidationException", msg: fmt.Sprintf(
			"The certificate is not valid at the current time: it is valid from %s to %s",
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))}
	}
	chainPEM, _ := blob(in, "CertificateChain")
	if len(chainPEM) > 0 {
		if _, err := certificates(chainPEM); err != nil {
			return nil, &apiError{typ: "ValidationException", msg: "Could not validate the certificate chain: " + err.Error()}
		}
	}
	alg, aerr := keyAlgorithm(keyPEM, leaf)
	if aerr != nil {
		return nil, aerr
	}
	tags := map[string]string{}
	rawTags, _ := in["Tags"].([]any)
	for _, t := range rawTags {
		m, _ := t.(map[string]any)
		tags[str(m, "Key")] = str(m, "Value")
	}
	if arn := str(in, "CertificateArn"); arn != "" {
		c, aerr := d.lookup(arn)
		if aerr != nil {
			return nil, aerr
		}
		if len(tags) > 0 {
			return nil, &apiError{typ: "ValidationException", msg: "You cannot apply tags when reimporting a certificate."}
		}
		c.Leaf, c.CertPEM, c.ChainPEM, c.KeyAlg = leaf, certPEM, chainPEM, alg
		c.Imports++
		return map[string]any{"CertificateArn": arn}, nil
	}
	if d.Deployment != "" && tags["certfn-deployment"] != d.Deployment {
		return nil, &apiError{typ: "AccessDeniedException", msg: "User is not authorized to perform: acm:ImportCertificate (missing request tag certfn-deployment)"}
	}
	d.seq++
	arn := fmt.Sprintf("arn:aws:acm:us-east-1:000000000000:certificate/00000000-0000-4000-8000-%012d", d.seq)
	d.certs[arn] = &Cert{ARN: arn, Leaf: leaf, CertPEM: certPEM, ChainPEM: chainPEM, KeyAlg: alg, Tags: tags, Imports: 1}
	d.order = append(d.order, arn)
	return map[string]any{"CertificateArn": arn}, nil
}

// serial writes a serial as ACM does.
func serial(c *x509.Certificate) string {
	b := c.SerialNumber.Bytes()
	parts := make([]string, len(b))
	for i, o := range b {
		parts[i] = hex.EncodeToString([]byte{o})
	}
	return strings.Join(parts, ":")
}

func domainName(c *x509.Certificate) string {
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	if len(c.DNSNames) > 0 {
		return c.DNSNames[0]
	}
	return ""
}

func (d *Double) describeCertificate(in map[string]any) (map[string]any, *apiError) {
	c, aerr := d.lookup(str(in, "CertificateArn"))
	if aerr != nil {
		return nil, aerr
	}
	return map[string]any{"Certificate": map[string]any{
		"CertificateArn": c.ARN, "DomainName": domainName(c.Leaf), "SubjectAlternativeNames": c.Leaf.DNSNames,
		"Serial": serial(c.Leaf), "Type": "IMPORTED", "Status": "ISSUED", "KeyAlgorithm": c.KeyAlg,
		"NotBefore": float64(c.Leaf.NotBefore.Unix()), "NotAfter": float64(c.Leaf.NotAfter.Unix()),
		"ImportedAt": float64(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Unix()),
	}}, nil
}

func (d *Double) getCertificate(in map[string]any) (map[string]any, *apiError) {
	c, aerr := d.lookup(str(in, "CertificateArn"))
	if aerr != nil {
		return nil, aerr
	}
	out := map[string]any{"Certificate": string(c.CertPEM)}
	if len(c.ChainPEM) > 0 {
		out["CertificateChain"] = string(c.ChainPEM)
	}
	return out, nil
}

func (d *Double) listCertificates(in map[string]any) (map[string]any, *apiError) {
	keyTypes := []string{"RSA_2048"} // ACM's default filter
	if inc, ok := in["Includes"].(map[string]any); ok {
		if kts, ok := inc["keyTypes"].([]any); ok && len(kts) > 0 {
			keyTypes = nil
			for _, k := range kts {
				s, _ := k.(string)
				keyTypes = append(keyTypes, s)
			}
		}
	}
	maxItems := 1000
	if v, ok := in["MaxItems"].(float64); ok && v > 0 {
		maxItems = int(v)
	}
	start := 0
	if tok := str(in, "NextToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil {
			return nil, &apiError{typ: "InvalidArgsException", msg: "bad NextToken"}
		}
		start = n
	}
	var list []any
	next := ""
	for i := start; i < len(d.order); i++ {
		c := d.certs[d.order[i]]
		if !slices.Contains(keyTypes, c.KeyAlg) {
			continue
		}
		if len(list) == maxItems {
			next = strconv.Itoa(i)
			break
		}
		list = append(list, map[string]any{
			"CertificateArn": c.ARN, "DomainName": domainName(c.Leaf), "SubjectAlternativeNameSummaries": c.Leaf.DNSNames,
			"Type": "IMPORTED", "Status": "ISSUED", "KeyAlgorithm": c.KeyAlg,
		})
	}
	out := map[string]any{"CertificateSummaryList": list}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

func (d *Double) listTags(in map[string]any) (map[string]any, *apiError) {
	c, aerr := d.lookup(str(in, "CertificateArn"))
	if aerr != nil {
		return nil, aerr
	}
	keys := make([]string, 0, len(c.Tags))
	for k := range c.Tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var tags []any
	for _, k := range keys {
		tags = append(tags, map[string]any{"Key": k, "Value": c.Tags[k]})
	}
	return map[string]any{"Tags": tags}, nil
}

// certificates parses a PEM bundle of certificates.
func certificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a %s block", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return out, nil
}

// onlyCertificate parses exactly one certificate.
func onlyCertificate(b []byte) (*x509.Certificate, error) {
	cs, err := certificates(b)
	if err != nil {
		return nil, err
	}
	if len(cs) != 1 {
		return nil, fmt.Errorf("more than one certificate")
	}
	return cs[0], nil
}

// keyAlgorithm parses an unencrypted PEM key, checks it matches leaf and
// returns ACM's name for it, or the ValidationException ACM answers with (in
// ACM's wording, which never quotes the key).
func keyAlgorithm(keyPEM []byte, leaf *x509.Certificate) (string, *apiError) {
	invalid := func(msg string) *apiError { return &apiError{typ: "ValidationException", msg: msg} }
	blk, _ := pem.Decode(keyPEM)
	if blk == nil {
		return "", invalid("The private key is not PEM")
	}
	var key crypto.Signer
	switch blk.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
		if err != nil {
			return "", invalid("The private key is invalid")
		}
		key = k
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(blk.Bytes)
		if err != nil {
			return "", invalid("The private key is invalid")
		}
		key = k
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return "", invalid("The private key is invalid")
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return "", invalid("The private key is not supported")
		}
		key = s
	default:
		return "", invalid(fmt.Sprintf("The private key is not supported (%s)", blk.Type))
	}
	type eq interface{ Equal(crypto.PublicKey) bool }
	if pub, ok := key.Public().(eq); !ok || !pub.Equal(leaf.PublicKey) {
		return "", invalid("The private key does not match the certificate")
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		switch n := k.N.BitLen(); n {
		case 1024, 2048, 3072, 4096:
			return "RSA_" + strconv.Itoa(n), nil
		}
		return "", invalid(fmt.Sprintf("The private key length %d is not supported", k.N.BitLen()))
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return "EC_prime256v1", nil
		case elliptic.P384():
			return "EC_secp384r1", nil
		case elliptic.P521():
			return "EC_secp521r1", nil
		}
	}
	return "", invalid("The private key algorithm is not supported")
}
