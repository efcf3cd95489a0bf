package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const certYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
spec:
  secretName: web-tls
  duration: 2160h
  renewBefore: 360h
  dnsNames:
  - example.com
  - www.example.com
  issuerRef:
    name: letsencrypt
    kind: ClusterIssuer
  privateKey:
    algorithm: ECDSA
    size: 256
`

// A real cert-manager ACME ClusterIssuer (from cert-manager's docs) with an
// ingress HTTP-01 solver and a Route53 DNS-01 solver.
const clusterIssuerYAML = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: letsencrypt-prod
  finalizers:
  - example.com/keep
spec:
  acme:
    email: admin@example.com
    server: https://acme-v02.api.letsencrypt.org/directory
    privateKeySecretRef:
      name: letsencrypt-prod-account-key
    externalAccountBinding:
      keyID: kid-1
      keySecretRef:
        name: eab-secret
        key: secret
      keyAlgorithm: HS256
    solvers:
    - http01:
        ingress:
          ingressClassName: nginx
          podTemplate:
            spec:
              nodeSelector:
                kubernetes.io/os: linux
    - selector:
        dnsZones:
        - example.org
      dns01:
        route53:
          region: eu-west-1
          hostedZoneID: Z123456
          role: arn:aws:iam::123456789012:role/dns
          accessKeyIDSecretRef:
            name: aws
            key: id
          secretAccessKeySecretRef:
            name: aws
            key: secret
    - dns01:
        cloudflare:
          apiTokenSecretRef:
            name: cloudflare
            key: token
`

func mustDecode(t *testing.T, in string) []Object {
	t.Helper()
	objs, err := Decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return objs
}

func TestDecodeCertificate(t *testing.T) {
	objs := mustDecode(t, certYAML)
	if len(objs) != 1 {
		t.Fatalf("got %d objects", len(objs))
	}
	c, ok := objs[0].(*Certificate)
	if !ok {
		t.Fatalf("got %T", objs[0])
	}
	if c.Namespace != DefaultNamespace {
		t.Errorf("namespace = %q, want default", c.Namespace)
	}
	if c.APIVersion != CertManagerV1 || c.Kind != KindCertificate {
		t.Errorf("type meta = %+v", c.TypeMeta)
	}
	if c.Spec.Duration.Duration != 2160*time.Hour || c.Spec.RenewBefore.Duration != 360*time.Hour {
		t.Errorf("durations = %v %v", c.Spec.Duration, c.Spec.RenewBefore)
	}
	if !reflect.DeepEqual(c.Spec.DNSNames, []string{"example.com", "www.example.com"}) {
		t.Errorf("dnsNames = %v", c.Spec.DNSNames)
	}
	if c.Spec.IssuerRef.Kind != KindClusterIssuer || c.Spec.PrivateKey.Algorithm != ECDSAKeyAlgorithm {
		t.Errorf("spec = %+v", c.Spec)
	}
}

func TestDecodeMultiDocument(t *testing.T) {
	in := "---\n# leading separator and comment\n" + certYAML +
		"--- # a separator with a comment\n\n# only a comment\n---\n" +
		strings.Replace(certYAML, "name: web", "name: api\n  namespace: team-a", 1) +
		"---\n" + clusterIssuerYAML + "---\n"
	objs := mustDecode(t, in)
	var keys []string
	for _, o := range objs {
		keys = append(keys, KeyOf(o).String())
	}
	want := []string{"Certificate/default/web", "Certificate/team-a/api", "ClusterIssuer/letsencrypt-prod"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys = %v, want %v", keys, want)
	}
}

func TestDecodeJSONForms(t *testing.T) {
	objs := mustDecode(t, certYAML)
	one, err := json.Marshal(objs[0])
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"object":       string(one),
		"stream":       string(one) + "\n" + string(one),
		"array":        "[" + string(one) + "," + string(one) + "]",
		"list":         `{"apiVersion":"v1","kind":"List","items":[` + string(one) + `,` + string(one) + `]}`,
		"yaml list":    "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(certYAML), "\n", "\n  ") + "\n",
		"flow yaml":    `{apiVersion: cert-manager.io/v1, kind: Issuer, metadata: {name: ss}, spec: {selfSigned: {}}}`,
		"yaml array":   "- apiVersion: cert-manager.io/v1\n  kind: Issuer\n  metadata: {name: a}\n  spec: {selfSigned: {}}\n",
		"bom and crlf": "\xef\xbb\xbf" + strings.ReplaceAll(certYAML, "\n", "\r\n") + "---\r\n" + strings.ReplaceAll(certYAML, "\n", "\r\n"),
	}
	wantN := map[string]int{"object": 1, "flow yaml": 1, "yaml array": 1, "yaml list": 1}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			objs := mustDecode(t, in)
			n := 2
			if w, ok := wantN[name]; ok {
				n = w
			}
			if len(objs) != n {
				t.Fatalf("got %d objects, want %d", len(objs), n)
			}
		})
	}
}

func TestDecodeEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "---\n---\n", "# nothing\n", "null"} {
		objs, err := Decode([]byte(in))
		if err != nil || len(objs) != 0 {
			t.Errorf("Decode(%q) = %v, %v; want nothing", in, objs, err)
		}
	}
}

func decodeErrors(t *testing.T, in string) FieldErrors {
	t.Helper()
	objs, err := Decode([]byte(in))
	if err == nil {
		t.Fatalf("Decode succeeded with %d objects, want an error", len(objs))
	}
	if objs != nil {
		t.Errorf("objects returned with an error")
	}
	var fe FieldErrors
	if !errors.As(err, &fe) {
		t.Fatalf("error %T is not FieldErrors: %v", err, err)
	}
	return fe
}

func TestDecodeUnknownFieldPath(t *testing.T) {
	in := clusterIssuerYAML + "---\n" + strings.Replace(certYAML, "    size: 256", "    sise: 256", 1)
	errs := decodeErrors(t, in)
	want := "document 2 (Certificate default/web): spec.privateKey.sise: unknown field"
	if errs.Error() != want {
		t.Errorf("error = %q, want %q", errs.Error(), want)
	}
	e := errs[0]
	if e.Doc != 2 || e.Object != "Certificate default/web" || e.Path != "spec.privateKey.sise" || e.Rule != "unknown field" {
		t.Errorf("field error = %+v", e)
	}
}

func TestDecodeUnknownFieldsDeep(t *testing.T) {
	in := strings.Replace(clusterIssuerYAML, "          hostedZoneID: Z123456\n",
		"          hostedZoneID: Z123456\n          hostedZone: Z1\n", 1)
	in = strings.Replace(in, "        name: eab-secret\n", "        name: eab-secret\n        nmae: x\n", 1)
	in = strings.Replace(in, "  finalizers:\n", "  labelz: {}\n  finalizers:\n", 1)
	errs := decodeErrors(t, in)
	var got []string
	for _, e := range errs {
		got = append(got, e.Path+": "+e.Rule)
	}
	want := []string{
		"metadata.labelz: unknown field",
		"spec.acme.externalAccountBinding.keySecretRef.nmae: unknown field",
		"spec.acme.solvers[1].dns01.route53.hostedZone: unknown field",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range errs {
		if e.Doc != 1 || e.Object != "ClusterIssuer letsencrypt-prod" {
			t.Errorf("error %+v: want document 1 of ClusterIssuer letsencrypt-prod", e)
		}
	}
}

func TestDecodeTypeMismatches(t *testing.T) {
	cases := []struct {
		name, from, to, path, rule string
	}{
		{"string for list", "  dnsNames:\n  - example.com\n  - www.example.com\n", "  dnsNames: example.com\n", "spec.dnsNames", "want a list, got a string"},
		{"string for int", "    size: 256", "    size: big", "spec.privateKey.size", "want an integer, got a string"},
		{"float for int", "    size: 256", "    size: 256.5", "spec.privateKey.size", "want an integer that fits in 64 bits"},
		{"int32 overflow", "  secretName: web-tls\n", "  secretName: web-tls\n  revisionHistoryLimit: 4294967296\n", "spec.revisionHistoryLimit", "want an integer that fits in 32 bits"},
		{"bad duration", "  duration: 2160h", "  duration: 90d", "spec.duration", `want a duration such as "2160h" or "90m", got "90d"`},
		{"number duration", "  duration: 2160h", "  duration: 5", "spec.duration", "want a duration string"},
		{"bool for string", "  secretName: web-tls", "  secretName: yes", "spec.secretName", "want a string, got a boolean (true); quote the value"},
		{"list for object", "  issuerRef:\n    name: letsencrypt\n    kind: ClusterIssuer\n", "  issuerRef: [letsencrypt]\n", "spec.issuerRef", "want an object, got a list"},
		{"string for bool", "  secretName: web-tls", "  secretName: web-tls\n  isCA: \"true\"", "spec.isCA", "want true or false, got a string"},
		{"bad map value", "  secretName: web-tls", "  secretName: web-tls\n  secretTemplate:\n    labels:\n      team: [a]", "spec.secretTemplate.labels[team]", "want a string, got a list"},
		{"bad time", "    size: 256\n", "    size: 256\nstatus:\n  notAfter: tomorrow\n", "status.notAfter", `want an RFC 3339 timestamp, got "tomorrow"`},
		{"metadata not object", "metadata:\n  name: web\n", "metadata: web\n", "metadata", "want an object, got a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(certYAML, tc.from, tc.to, 1)
			if in == certYAML {
				t.Fatalf("replacement %q not found", tc.from)
			}
			errs := decodeErrors(t, in)
			if len(errs) != 1 || errs[0].Path != tc.path || !strings.HasPrefix(errs[0].Rule, tc.rule) {
				t.Errorf("errors = %v\nwant one at %s: %s", errs, tc.path, tc.rule)
			}
		})
	}
}

func TestDecodeBase64(t *testing.T) {
	in := `apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: r, namespace: ns}
spec:
  issuerRef: {name: ca}
  request: "-----BEGIN CERTIFICATE REQUEST-----"
`
	errs := decodeErrors(t, in)
	if len(errs) != 1 || errs[0].Path != "spec.request" || !strings.HasPrefix(errs[0].Rule, "want a base64-encoded string") {
		t.Errorf("errors = %v", errs)
	}
	ok := strings.Replace(in, `"-----BEGIN CERTIFICATE REQUEST-----"`, "aGVsbG8=", 1)
	objs := mustDecode(t, ok)
	if got := string(objs[0].(*CertificateRequest).Spec.Request); got != "hello" {
		t.Errorf("request = %q", got)
	}
}

func TestDecodeCollectsAllErrors(t *testing.T) {
	in := strings.Replace(certYAML, "    size: 256", "    size: big\n    colour: red", 1)
	in = strings.Replace(in, "  duration: 2160h", "  duration: forever", 1)
	in += "---\napiVersion: cert-manager.io/v1alpha2\nkind: Issuer\nmetadata: {name: old}\n" +
		"---\nkind: Issuer\nmetadata: {name: x}\n" +
		"---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n" +
		"---\napiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: ci, namespace: kube-system}\nspec: {selfSigned: {}}\n" +
		"---\n- 42\n" +
		"---\njust a string\n" +
		"---\nkey: [unclosed\n"
	errs := decodeErrors(t, in)
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		// YAML syntax errors are found first, while splitting.
		"document 8: invalid YAML (document starts at line",
		`document 1 (Certificate default/web): spec.duration: want a duration such as "2160h" or "90m", got "forever"`,
		"document 1 (Certificate default/web): spec.privateKey.colour: unknown field",
		"document 1 (Certificate default/web): spec.privateKey.size: want an integer, got a string",
		`document 2 (Issuer default/old): apiVersion: kind Issuer is served as cert-manager.io/v1, not "cert-manager.io/v1alpha2"`,
		"document 3 (Issuer default/x): apiVersion: required",
		`document 4 (Widget w): kind: unknown kind "Widget"`,
		// document 5, a ClusterIssuer with a namespace, decodes (TestDecodeClusterScopedNamespaceWarns).
		"document 6: [0]: want an object with apiVersion and kind, got a number (42)",
		"document 7: want an object with apiVersion and kind, got a string",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q\nwant prefix %q", i, got[i], want[i])
		}
	}
	if lines := strings.Count(errs.Error(), "\n") + 1; lines != len(want) {
		t.Errorf("Error() has %d lines, want %d", lines, len(want))
	}
}

func TestDecodeListItemPaths(t *testing.T) {
	in := `{"apiVersion":"v1","kind":"List","items":[
	 {"apiVersion":"cert-manager.io/v1","kind":"Issuer","metadata":{"name":"a"},"spec":{"selfSigned":{}}},
	 {"apiVersion":"cert-manager.io/v1","kind":"Issuer","metadata":{"name":"b"},"spec":{"selfSigned":{"crl":[]}}}]}`
	errs := decodeErrors(t, in)
	want := "document 1 (Issuer default/b): items[1].spec.selfSigned.crl: unknown field"
	if errs.Error() != want {
		t.Errorf("error = %q, want %q", errs.Error(), want)
	}
}

func TestDecodeDuplicateKeys(t *testing.T) {
	in := strings.Replace(certYAML, "  secretName: web-tls\n", "  secretName: web-tls\n  secretName: other\n", 1)
	errs := decodeErrors(t, in)
	if len(errs) != 1 || !strings.Contains(errs[0].Rule, "already") {
		t.Errorf("errors = %v", errs)
	}
}

func TestDecodeReaderLimit(t *testing.T) {
	big := bytes.Repeat([]byte("#"), MaxManifestSize+1)
	if _, err := DecodeReader(bytes.NewReader(big)); err == nil {
		t.Error("DecodeReader accepted an oversized input")
	}
	objs, err := DecodeReader(strings.NewReader(certYAML))
	if err != nil || len(objs) != 1 {
		t.Errorf("DecodeReader = %v, %v", objs, err)
	}
}

func TestIgnoredFieldsClusterIssuer(t *testing.T) {
	objs := mustDecode(t, clusterIssuerYAML)
	got := IgnoredFields(objs[0])
	want := []string{
		"metadata.finalizers",
		"spec.acme.externalAccountBinding.keyAlgorithm",
		"spec.acme.solvers[0].http01.ingress",
		// solvers[2]'s cloudflare is acted on (adapters/dns/cloudflare).
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IgnoredFields =\n%q\nwant\n%q", got, want)
	}
}

func TestIgnoredFieldsOther(t *testing.T) {
	in := `apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: mixed
  managedFields:
  - manager: kubectl
    operation: Apply
spec:
  vault:
    server: https://vault.example.com
  venafi:
    zone: z
  acme:
    server: https://acme.example.com/dir
    privateKeySecretRef: {name: k}
    solvers:
    - http01:
        gatewayHTTPRoute:
          parentRefs: [{name: gw}]
    - dns01:
        route53:
          auth:
            kubernetes:
              serviceAccountRef: {name: sa}
    - dns01:
        rfc2136: {nameserver: 10.0.0.1}
        webhook: {groupName: acme.example.com, solverName: x}
`
	got := IgnoredFields(mustDecode(t, in)[0])
	want := []string{
		"metadata.managedFields",
		"spec.acme.solvers[0].http01.gatewayHTTPRoute",
		"spec.acme.solvers[1].dns01.route53.auth",
		"spec.vault",
		"spec.venafi",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IgnoredFields =\n%q\nwant\n%q", got, want)
	}
	if got := IgnoredFields(mustDecode(t, certYAML)[0]); len(got) != 0 {
		t.Errorf("IgnoredFields(plain certificate) = %q", got)
	}
}

// FuzzDecode checks that Decode never panics and that whatever it decodes
// re-encodes to JSON that decodes again to the same object.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(certYAML))
	f.Add([]byte(clusterIssuerYAML))
	f.Add([]byte(certYAML + "---\n" + clusterIssuerYAML))
	f.Add([]byte(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: ca-issuer
  namespace: sandbox
spec:
  ca:
    secretName: ca-key-pair
    crlDistributionPoints: ["http://crl.example.com/ca.crl"]
`))
	f.Add([]byte(`apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata:
  name: my-ca-cr
spec:
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K
  isCA: false
  usages: [signing, digital signature, server auth]
  duration: 90d
  expirationSeconds: 600
  issuerRef:
    name: ca-issuer
    kind: Issuer
    group: cert-manager.io
`))
	f.Add([]byte(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: keystores
  namespace: default
  labels: {app: x}
  creationTimestamp: "2024-01-02T03:04:05.123Z"
spec:
  literalSubject: "CN=app,O=Example\\, Inc.+OU=ops"
  secretName: ks
  issuerRef: {name: ca}
  keystores:
    pkcs12: {create: true, profile: Modern2023, passwordSecretRef: {name: p, key: k}}
    jks: {create: true, password: changeit, alias: app}
  additionalOutputFormats: [{type: DER}, {type: CombinedPEM}]
  otherNames: [{oid: 1.3.6.1.4.1.311.20.2.3, utf8Value: upn@example.com}]
  nameConstraints: {critical: true, permitted: {dnsDomains: [example.com], ipRanges: [10.0.0.0/8]}}
  renewBeforePercentage: 30
status:
  conditions: [{type: Ready, status: "True", lastTransitionTime: "2024-01-02T03:04:05Z"}]
  revision: 3
`))
	f.Add([]byte(`[{"apiVersion":"cert-manager.io/v1","kind":"Issuer","metadata":{"name":"s"},"spec":{"selfSigned":{}}}]`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[]}`))
	f.Add([]byte("---\n- 1\n---\n{]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(data)
		if err != nil {
			if objs != nil {
				t.Fatal("objects returned with an error")
			}
			return
		}
		for _, o := range objs {
			j1, err := json.Marshal(o)
			if err != nil {
				t.Fatalf("re-encode %T: %v", o, err)
			}
			again, err := Decode(j1)
			if err != nil {
				t.Fatalf("re-decode of %s: %v", j1, err)
			}
			if len(again) != 1 {
				t.Fatalf("re-decode gave %d objects", len(again))
			}
			j2, err := json.Marshal(again[0])
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEquivalent(t, j1, j2) {
				t.Fatalf("round trip changed the object:\n%s\n%s", j1, j2)
			}
			if reflect.TypeOf(again[0]) != reflect.TypeOf(o) {
				t.Fatalf("type changed: %T -> %T", o, again[0])
			}
		}
	})
}

// jsonEquivalent compares two JSON documents, treating a null member as absent
// (as Kubernetes does; a zero Time encodes as null and decodes as unset).
func jsonEquivalent(t *testing.T, a, b []byte) bool {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(dropNulls(va), dropNulls(vb))
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else {
				x[k] = dropNulls(e)
			}
		}
	case []any:
		for i := range x {
			x[i] = dropNulls(x[i])
		}
	}
	return v
}

// TestDecodeTrailingGarbageAfterJSON: a JSON document followed by anything
// that is not another JSON value is refused, naming where the rest starts
// (YAML's parser would otherwise drop it silently).
func TestDecodeTrailingGarbageAfterJSON(t *testing.T) {
	const doc = `{"apiVersion":"cert-manager.io/v1","kind":"Issuer","metadata":{"name":"a"},"spec":{"selfSigned":{}}}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"word", doc + " garbage", `unexpected "garbage" after the JSON document, at line 1, column ` + strconv.Itoa(len(doc)+2)},
		{"extra brace", doc + "}", `unexpected "}" after the JSON document, at line 1, column ` + strconv.Itoa(len(doc)+1)},
		{"bracket on next line", doc + "\n]", `unexpected "]" after the JSON document, at line 2, column 1`},
		{"array then word", "[" + doc + "]\n\n  x", `unexpected "x" after the JSON document, at line 3, column 3`},
		{"truncated second", doc + "\n" + `{"x":`, `unexpected "{\"x\":" after the JSON document, at line 2, column 1`},
		{"after separator", "kind: x\n---\n" + doc + " tail", `document 2: invalid JSON: unexpected "tail" after the JSON document, at line 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %d objects, err %v", tc.want, len(objs), err)
			}
		})
	}
	for _, ok := range []string{doc, doc + "\n  \n", doc + "\n" + doc, "[" + doc + "]", "---\n" + doc + "\n---\n" + doc + "\n" + doc, "{apiVersion: cert-manager.io/v1, kind: Issuer, metadata: {name: a}, spec: {selfSigned: {}}}"} {
		if _, err := Decode([]byte(ok)); err != nil {
			t.Errorf("%q: unexpected error %v", ok, err)
		}
	}
}

// A cluster-scoped object naming a namespace is accepted with the namespace
// cleared and a warning, as the Kubernetes API server does; namespaced
// objects keep theirs.
func TestDecodeClusterScopedNamespaceWarns(t *testing.T) {
	in := "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: ci, namespace: cert-manager}\nspec: {selfSigned: {}}\n" +
		"---\napiVersion: policy.cert-manager.io/v1alpha1\nkind: CertificateRequestPolicy\nmetadata: {name: p, namespace: x}\nspec: {selector: {issuerRef: {}}}\n" +
		"---\napiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: i, namespace: team}\nspec: {selfSigned: {}}\n"
	objs, warns, err := DecodeWarnings([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("%d objects", len(objs))
	}
	for i, want := range []string{"", "", "team"} {
		if ns := objs[i].GetObjectMeta().Namespace; ns != want {
			t.Errorf("object %d: namespace %q, want %q", i, ns, want)
		}
	}
	want := []string{
		"document 1 (ClusterIssuer cert-manager/ci): metadata.namespace: ignored: kind ClusterIssuer is cluster-scoped",
		"document 2 (CertificateRequestPolicy x/p): metadata.namespace: ignored: kind CertificateRequestPolicy is cluster-scoped",
	}
	if strings.Join(warns, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warns, "\n"), strings.Join(want, "\n"))
	}
	if _, w2, err := DecodeWarnings([]byte(in + "---\nkind: Nope\n")); err == nil || w2 != nil {
		t.Errorf("invalid input: err %v, warnings %v (want an error and no warnings)", err, w2)
	}
}
