package lambdarie

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/tests/emulators"
	"github.com/certfn/certfn/tests/pebbletest"
)

// adminRole is the IAM role that applies the manifests: api_admin_arns
// (system:masters) and api_invoker_arns. The api sees its assumed-role
// session, as an AWS_IAM Function URL reports it.
const adminRole = "arn:aws:iam::" + emulators.MotoAccountID + ":role/certfn-rie-admin"

// acmeName is the ACME Certificate's DNS name (the example's
// acme_dns_names). It must resolve to the http01 stand-in on port 80 for
// the worker's self-check, which dials <name>:80 with the machine's
// resolver (Pebble's VA resolves every name to 127.0.0.1 by itself).
const acmeName = "localhost"

// caManifests add a CA issuance to the example's objects: a namespaced CA
// Issuer whose key pair the test installs as an operator would, and a
// 10-minute Certificate from it, renewed 5 minutes after issuance (the
// shortest lifetime before renewal the validation allows). The example's
// CertificateRequestPolicy approves it (its names, usages, key).
const caManifests = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ca, namespace: default}
spec: {ca: {secretName: rie-ca}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: ca-web, namespace: default}
spec:
  secretName: ca-web-tls
  commonName: www.example.internal
  dnsNames: [www.example.internal]
  duration: 10m
  renewBefore: 5m
  usages: [digital signature, key encipherment, server auth]
  privateKey: {algorithm: ECDSA, size: 256, rotationPolicy: Always}
  issuerRef: {name: ca, kind: Issuer, group: cert-manager.io}
`

// acmeManifests add the ACME issuance: a Certificate from the example's
// ACME Issuer (default/acme) for acmeName. The example's own acme-web is
// not used: it sets no duration, and the example's policy, whose
// maxDuration is 2160h, denies a request without one (as approver-policy
// does).
const acmeManifests = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: rie-acme, namespace: default}
spec:
  secretName: rie-acme-tls
  dnsNames: [` + acmeName + `]
  duration: 2160h
  usages: [digital signature, key encipherment, server auth]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: acme, kind: Issuer, group: cert-manager.io}
`

// TestLambdaRIE is the package's test (see the package comment). With
// CERTFN_TEST_CLOUD=1 (make test-cloud) it also waits for ca-web's
// renewal.
func TestLambdaRIE(t *testing.T) {
	began := time.Now() // figures are reported, never asserted
	full := os.Getenv("CERTFN_TEST_CLOUD") == "1"
	root, tmp := repoRoot(t), t.TempDir()
	ctx := context.Background()

	// Port 80 first: nothing else is worth starting without it.
	const http01Addr = "127.0.0.1:80"
	if l, err := net.Listen("tcp", http01Addr); err != nil {
		t.Fatalf("the http01 Function URL stand-in needs %s (HTTP-01 is validated on port 80; binding it needs root or "+
			"CAP_NET_BIND_SERVICE, and no other process on the port): %v", http01Addr, err)
	} else {
		l.Close()
	}
	// Pebble's VA validates HTTP-01 on 127.0.0.1:80, the stand-in.
	peb := pebbletest.Start(t, 80)

	var (
		rie, zips, certfnMirror string
		moto                    *emulators.GcloudProcess
	)
	err := parallel(map[string]func() error{
		"aws-lambda-rie":  func() (err error) { rie, err = rieBinary(root); return err },
		"lambda zips":     func() (err error) { zips, err = buildZips(tmp); return err },
		"certfn provider": func() (err error) { certfnMirror, err = buildProviderMirror(root, tmp); return err },
		"moto_server":     func() (err error) { moto, err = emulators.StartMoto(); return err },
	})
	if moto != nil {
		t.Cleanup(moto.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	awsMirror, err := providerMirror()
	if err != nil {
		t.Fatal(err)
	}
	built := time.Since(began)
	t.Logf("tools built and moto started in %s", built.Round(time.Second))
	endpoint := "http://" + moto.Host

	arch, err := lambdaArch(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	d := applyExample(t, root, tmp, awsMirror, certfnMirror, map[string]string{
		"aws_endpoint_url":     endpoint,
		"account_id":           emulators.MotoAccountID,
		"lambda_zip_dir":       zips,
		"lambda_architecture":  arch,
		"api_admin_arns":       hclList(adminRole),
		"api_invoker_arns":     hclList(adminRole),
		"manage_certificates":  "false",
		"acme_server_url":      peb.DirURL,
		"acme_skip_tls_verify": "true",
		"acme_dns_names":       hclList(acmeName),
	})
	applied := time.Since(began)
	t.Logf("terraform apply done at %s", applied.Round(time.Second))

	// The functions: each deployed zip's bootstrap under its own RIE.
	fns := map[string]*lambdaFn{}
	for _, name := range functionNames() {
		f := d.Functions[name]
		if f == nil {
			t.Fatalf("the state has no function %s", name)
		}
		zipPath := filepath.Join(zips, name+".zip")
		hash, err := zipHash(zipPath)
		if err != nil {
			t.Fatal(err)
		}
		if f.SourceCodeHash != hash || f.Runtime != "provided.al2023" || f.Handler != "bootstrap" || !slices.Equal(f.Architectures, []string{arch}) {
			t.Fatalf("function %s in the state: hash %s runtime %s handler %s architectures %v; want the zip built here (%s), provided.al2023, bootstrap, [%s]",
				f.Name, f.SourceCodeHash, f.Runtime, f.Handler, f.Architectures, hash, arch)
		}
		boot, err := unpackBootstrap(zipPath, filepath.Join(tmp, "task", name))
		if err != nil {
			t.Fatal(err)
		}
		// The one variable that is not the deployment's: where AWS is
		// (and, to debug, the log level).
		extra := map[string]string{"AWS_ENDPOINT_URL": endpoint}
		if os.Getenv("CERTFN_TEST_LOG") == "1" {
			extra["CERTFN_LOG_LEVEL"] = "debug"
		}
		fns[name] = startRIE(t, rie, boot, f, extra)
	}

	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(endpoint)}
	sqsc, smc := sqs.NewFromConfig(cfg), sm.NewFromConfig(cfg)
	disableMotoMappings(t, ctx, lambda.NewFromConfig(cfg), d.Mappings)

	// The triggers, as the state declares them.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mappings []*eventSourceMapping
	for _, m := range d.Mappings {
		f, q := d.byARN(m.FunctionARN), d.Queues[m.SourceARN]
		if f == nil || q.URL == "" || !m.Enabled || m.BatchSize < 1 || !slices.Contains(m.ResponseTypes, "ReportBatchItemFailures") {
			t.Fatalf("event source mapping %+v: want an enabled mapping of a deployed function and queue, with ReportBatchItemFailures", m)
		}
		e := &eventSourceMapping{m: m, q: q, fn: fns[f.Key], sqs: sqsc, keys: map[string]int{}, trace: os.Getenv("CERTFN_TEST_LOG") == "1"}
		mappings = append(mappings, e)
		wg.Add(1)
		go func() { defer wg.Done(); e.run(runCtx) }()
	}
	every, err := parseRate(d.Schedule.Expression)
	if err != nil {
		t.Fatal(err)
	}
	target := d.byARN(d.Schedule.TargetARN)
	if target == nil {
		t.Fatalf("the schedule's target %s is not a deployed function", d.Schedule.TargetARN)
	}
	sched := &scheduleStandIn{s: d.Schedule, every: every, fn: fns[target.Key]}
	wg.Add(1)
	go func() { defer wg.Done(); sched.run(runCtx) }()
	stopAll := sync.OnceFunc(func() { stop(); wg.Wait() })
	t.Cleanup(stopAll)

	if d.URLs["api"].AuthType != "AWS_IAM" || d.URLs["http01"].AuthType != "NONE" {
		t.Fatalf("function URLs %+v: want api with AWS_IAM and http01 with NONE", d.URLs)
	}
	apiURL := &functionURLStandIn{u: d.URLs["api"], fn: fns["api"], caller: &iamCaller{AccountID: emulators.MotoAccountID,
		UserARN: "arn:aws:sts::" + emulators.MotoAccountID + ":assumed-role/certfn-rie-admin/lambdarie",
		UserID:  "AROARIEADMIN0000000000:lambdarie", AccessKey: "ASIARIEADMIN00000000"}}
	http01URL := &functionURLStandIn{u: d.URLs["http01"], fn: fns["http01"]}
	http01URL.listen(t, http01Addr)

	// The CA key pair, installed as `aws secretsmanager create-secret
	// --tags Key=certfn-role,Value=ca` would.
	prefix := d.output(t, "secret_prefix")
	ca := ct.NewCAValid(t, time.Now().Add(-time.Hour), time.Now().Add(10*365*24*time.Hour), true)
	install, err := secrets.New(smc, secrets.Options{Prefix: prefix, Tags: map[string]string{secrets.TagRole: "ca"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Create(ctx, ca.Secret(t, "default", "rie-ca")); err != nil {
		t.Fatalf("install the CA key pair: %v", err)
	}

	// The example's manifests and the CA's, through the api's Function URL.
	manifests := d.output(t, "manifests") + "\n---\n" + caManifests + "---\n" + acmeManifests
	status, body, err := apiURL.call(ctx, http.MethodPost, "/v1/apply", "application/yaml", []byte(manifests))
	if err != nil || status != http.StatusOK {
		t.Fatalf("POST /v1/apply: %d %s %v", status, body, err)
	}
	var applyResp struct {
		Results []struct{ Kind, Namespace, Name, Action string } `json:"results"`
	}
	if err := json.Unmarshal(body, &applyResp); err != nil || len(applyResp.Results) < 9 {
		t.Fatalf("POST /v1/apply answered %s (%v): want the results of the example's objects and the CA's", body, err)
	}
	flowsBegan := time.Now()

	get := func(name string) *api.Certificate {
		t.Helper()
		status, body, err := apiURL.call(ctx, http.MethodGet, "/v1/namespaces/default/certificates/"+name, "", nil)
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET certificate default/%s: %d %s %v", name, status, body, err)
		}
		var c api.Certificate
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("GET certificate default/%s: %v", name, err)
		}
		return &c
	}
	waitFor := func(name string, within time.Duration, done func(*api.Certificate) bool) (*api.Certificate, time.Duration) {
		t.Helper()
		start := time.Now()
		for {
			c := get(name)
			if done(c) {
				return c, time.Since(flowsBegan)
			}
			if time.Since(start) > within {
				t.Fatalf("certificate default/%s not done after %s: conditions %+v\n%s", name, within, c.Status.Conditions, triggerReport(mappings, sched))
			}
			time.Sleep(time.Second)
		}
	}
	ready := func(c *api.Certificate) bool {
		return api.IsTrue(c.Status.Conditions, "Ready") && !api.IsTrue(c.Status.Conditions, "Issuing")
	}

	// The CA issuance: api → worker → signer → worker.
	caCert, caTook := waitFor("ca-web", 3*time.Minute, ready)
	first := checkSecret(t, ctx, smc, d, prefix, "ca-web-tls", caCert, []string{"www.example.internal"}, rootsOf(ca.Cert))

	// The ACME issuance: Pebble validates HTTP-01 through the http01
	// Function URL stand-in.
	acmeCert, acmeTook := waitFor("rie-acme", 3*time.Minute, ready)
	checkSecret(t, ctx, smc, d, prefix, "rie-acme-tls", acmeCert, []string{acmeName}, peb.Roots)
	var pebbleGets int
	for _, c := range http01URL.served() {
		if strings.HasPrefix(c.UserAgent, "LetsEncrypt-Pebble-VA") && strings.HasPrefix(c.Path, "/.well-known/acme-challenge/") && c.Status == http.StatusOK && hostname(c.Host) == acmeName {
			pebbleGets++
		}
	}
	if pebbleGets == 0 {
		t.Errorf("Pebble's VA never got its token from the http01 function: %+v", http01URL.served())
	}

	// The example's self-signed web Certificate comes along.
	webCert, _ := waitFor("web", time.Minute, ready)
	checkSecret(t, ctx, smc, d, prefix, "web-tls", webCert, []string{"www.example.internal"}, nil)

	renewTook := time.Duration(0)
	if full {
		// The renewal: ca-web is due 5 minutes after issuance; the worker's
		// delayed message or the scheduler's sweep brings it back.
		var renewed *api.Certificate
		renewed, renewTook = waitFor("ca-web", 10*time.Minute, func(c *api.Certificate) bool {
			return ready(c) && c.Status.Revision != nil && *c.Status.Revision >= 2
		})
		second := checkSecret(t, ctx, smc, d, prefix, "ca-web-tls", renewed, []string{"www.example.internal"}, rootsOf(ca.Cert))
		if second.SerialNumber.Cmp(first.SerialNumber) == 0 || !second.NotBefore.After(first.NotBefore) {
			t.Errorf("renewal: serial %s notBefore %s, the first was %s %s: not a new certificate", second.SerialNumber, second.NotBefore, first.SerialNumber, first.NotBefore)
		}
		if prev := previousSecret(t, ctx, smc, prefix+"/default/ca-web-tls"); prev.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Errorf("renewal: AWSPREVIOUS holds serial %s, want the first certificate's %s", prev.SerialNumber, first.SerialNumber)
		}
	}
	flows := time.Since(flowsBegan)

	stopAll()
	for _, e := range mappings {
		_, problems := e.report()
		for _, p := range problems {
			t.Errorf("event source mapping %s: %s", e.q.Name, p)
		}
	}
	if sched.runs == 0 || len(sched.problems) > 0 {
		t.Errorf("scheduler: %d runs, problems: %v", sched.runs, sched.problems)
	}
	for _, q := range d.Queues {
		if !strings.HasSuffix(q.Name, "-dlq") {
			continue
		}
		out, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil {
			t.Fatalf("dead-letter queue %s: %v", q.Name, err)
		}
		if n := out.Attributes["ApproximateNumberOfMessages"]; n != "0" {
			t.Errorf("dead-letter queue %s holds %s messages", q.Name, n)
		}
	}
	mode := "sample (CA and ACME issuances; CERTFN_TEST_CLOUD=1 adds the renewal)"
	if full {
		mode = "all flows"
	}
	t.Logf("%s: tools and moto %s, terraform apply done at %s; Ready after the apply: ca-web %s, rie-acme %s (Pebble's VA fetched its token %d times); renewal at %s; flows %s, whole test %s\n%s",
		mode, built.Round(time.Second), applied.Round(time.Second), caTook.Round(100*time.Millisecond), acmeTook.Round(100*time.Millisecond), pebbleGets,
		renewTook.Round(time.Second), flows.Round(time.Second), time.Since(began).Round(time.Second), triggerReport(mappings, sched))
}

// disableMotoMappings turns off moto's own emulation of the event source
// mappings, leaving the state as it is. moto polls a mapping's queue
// itself whenever a message is sent to it: it receives a batch (waiting
// up to the queue's 20 s ReceiveMessageWaitTimeSeconds inside the
// sender's SendMessage call) and hands it to a function it cannot run
// (invoking needs Docker), then deletes the batch or makes it visible
// again. It would take the messages from the stand-in.
func disableMotoMappings(t *testing.T, ctx context.Context, c *lambda.Client, ms []mapping) {
	t.Helper()
	for _, m := range ms {
		if _, err := c.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: aws.String(m.UUID), Enabled: aws.Bool(false)}); err != nil {
			t.Fatalf("disable moto's event source mapping %s (%s): %v", m.UUID, m.SourceARN, err)
		}
		got, err := c.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(m.UUID)})
		if err != nil {
			t.Fatalf("event source mapping %s: %v", m.UUID, err)
		}
		if st := aws.ToString(got.State); st != "Disabled" && st != "Disabling" {
			t.Fatalf("moto's event source mapping %s is %q after disabling it", m.UUID, st)
		}
	}
}

// triggerReport describes what the stand-ins delivered.
func triggerReport(ms []*eventSourceMapping, s *scheduleStandIn) string {
	var lines []string
	for _, e := range ms {
		r, problems := e.report()
		lines = append(lines, r)
		for _, p := range problems {
			lines = append(lines, "  "+p)
		}
	}
	s.mu.Lock()
	lines = append(lines, fmt.Sprintf("schedule %s → %s every %s: %d runs, %d due keys found and sent; problems %v",
		s.s.Expression, s.fn.fn.Name, s.every, s.runs, s.due, s.problems))
	s.mu.Unlock()
	for _, e := range ms {
		lines = append(lines, fmt.Sprintf("%s invocations: %d (%d failed)", e.fn.fn.Name, e.fn.invocations.Load(), e.fn.failures.Load()))
	}
	return strings.Join(lines, "\n")
}

// hostname is host without its port.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

func rootsOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// checkSecret reads <prefix>/default/<name> from Secrets Manager: tagged
// certfn-role=certificate with c's name, issuer and notAfter, encrypted
// with the worker's KMS key, holding c's certificate (c.Status.NotAfter) for dnsNames that
// chains to roots (nil: self-signed) with its private key. It returns the
// leaf.
func checkSecret(t *testing.T, ctx context.Context, smc *sm.Client, d *deployment, prefix, name string, c *api.Certificate, dnsNames []string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	id := prefix + "/default/" + name
	desc, err := smc.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String(id)})
	if err != nil {
		t.Fatalf("secret %s: %v", id, err)
	}
	tags := map[string]string{}
	for _, tg := range desc.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	want := map[string]string{secrets.TagRole: secrets.RoleCertificate, secrets.TagNamespace: "default",
		secrets.TagCertificate: c.Name, secrets.TagIssuer: c.Spec.IssuerRef.Kind + "/" + c.Spec.IssuerRef.Name}
	if c.Status.NotAfter != nil {
		want[secrets.TagNotAfter] = c.Status.NotAfter.UTC().Format(time.RFC3339)
	}
	for k, v := range want {
		if tags[k] != v {
			t.Errorf("secret %s: tag %s = %q, want %q (tags %v)", id, k, tags[k], v, tags)
		}
	}
	if key := d.Functions["worker"].Env["CERTFN_KMS_KEY_ID"]; aws.ToString(desc.KmsKeyId) != key {
		t.Errorf("secret %s: KMS key %q, want the module's %q", id, aws.ToString(desc.KmsKeyId), key)
	}
	out, err := smc.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		t.Fatalf("secret %s: %v", id, err)
	}
	sec, err := secretpayload.Decode([]byte(aws.ToString(out.SecretString)))
	if err != nil {
		t.Fatalf("secret %s: %v", id, err)
	}
	return checkKeyPair(t, id, sec, c, dnsNames, roots)
}

func checkKeyPair(t *testing.T, id string, sec ports.Secret, c *api.Certificate, dnsNames []string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil || len(chain) == 0 {
		t.Fatalf("secret %s: tls.crt: %v", id, err)
	}
	leaf := chain[0]
	if !slices.Equal(leaf.DNSNames, dnsNames) {
		t.Errorf("secret %s: DNS names %v, want %v", id, leaf.DNSNames, dnsNames)
	}
	if c.Status.NotAfter == nil || !c.Status.NotAfter.Time.Equal(leaf.NotAfter) {
		t.Errorf("secret %s: notAfter %s, the Certificate's status says %v", id, leaf.NotAfter, c.Status.NotAfter)
	}
	key, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
	if err != nil {
		t.Fatalf("secret %s: tls.key: %v", id, err)
	}
	if !pki.PublicKeysEqual(key.Public(), leaf.PublicKey) {
		t.Errorf("secret %s: tls.key is not the certificate's key", id)
	}
	if roots == nil {
		roots = rootsOf(leaf)
	}
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: dnsNames[0],
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("secret %s: the certificate does not verify: %v", id, err)
	}
	return leaf
}

// previousSecret returns the leaf of secret id at AWSPREVIOUS.
func previousSecret(t *testing.T, ctx context.Context, smc *sm.Client, id string) *x509.Certificate {
	t.Helper()
	out, err := smc.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(id), VersionStage: aws.String("AWSPREVIOUS")})
	if err != nil {
		t.Fatalf("secret %s at AWSPREVIOUS: %v", id, err)
	}
	sec, err := secretpayload.Decode([]byte(aws.ToString(out.SecretString)))
	if err != nil {
		t.Fatalf("secret %s at AWSPREVIOUS: %v", id, err)
	}
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil || len(chain) == 0 {
		t.Fatalf("secret %s at AWSPREVIOUS: tls.crt: %v", id, err)
	}
	return chain[0]
}
