package validation

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// The example manifests of cert-manager's documentation (selfSigned, CA,
// ACME HTTP-01 and every DNS-01 provider page), copied unchanged into
// testdata/upstream-docs with a header naming the page and commit, go
// through the path `certfn apply` takes: api.DecodeWarnings (as
// cmd/certfn's readManifests) and the webhook-equivalent validation
// (validation.Object, as core/app's Service.validate). Every document of
// every file is accounted for below: applied, or skipped for a stated
// reason.

// docElisions completes the examples the documentation writes with
// elisions or placeholders (a "..." line standing for the ACME issuer's
// server and account key, "<...>" text): cert-manager's own webhook
// refuses them as written too (server and privateKeySecretRef.name are
// required there). Only the elided text is replaced; everything else is
// applied as the page shows it.
var docElisions = map[string][][2]string{
	"acmedns-1.yaml": {{"  acme:\n    solvers:", "  acme:\n" + acmeHead + "    solvers:"}},
	"acmedns-2.yaml": {{"  acme:\n    solvers:", "  acme:\n" + acmeHead + "    solvers:"}},
	"http01-4.yaml":  {{"  acme:\n    solvers:", "  acme:\n" + acmeHead + "    solvers:"}},
	"http01-2.yaml": {
		{"  name: ...", "  name: example-issuer"},
		{"    server: ...", "    server: https://acme-staging-v02.api.letsencrypt.org/directory"},
		{"      name: ...", "      name: example-issuer-account-key"},
	},
	"http01-3.yaml": {
		{"  name: ...", "  name: example-issuer"},
		{"    server: ...", "    server: https://acme-staging-v02.api.letsencrypt.org/directory"},
		{"      name: ...", "      name: example-issuer-account-key"},
	},
	// The HTTP-01 Gateway page's Certificate leaves out secretName, which
	// cert-manager requires too.
	"http01-6.yaml": {{"spec:\n  issuerRef:", "spec:\n  secretName: example-tls\n  issuerRef:"}},
	"rfc2136-1.yaml": {
		{"nameserver: <address of authoritative nameserver configured above>", "nameserver: 192.0.2.53"},
		{"tsigKeyName: <key name used in `dnssec-keygen`, use something semantically meaningful in both environments>", "tsigKeyName: example-com-secret"},
		{"tsigAlgorithm: HMACSHA512 // should be matched to the algo you chose in `dnssec-keygen`", "tsigAlgorithm: HMACSHA512"},
		{"name: <the name of the k8s secret holding the TSIG key.. not the key itself!>", "name: tsig-secret"},
		{"key: <name of the key *inside* the secret>", "key: tsig-secret-key"},
	},
}

// acmeHead is what a "..." under spec.acme stands for.
const acmeHead = "    server: https://acme-v02.api.letsencrypt.org/directory\n" +
	"    privateKeySecretRef:\n      name: example-issuer-account-key\n"

// docKindsSkipped are kinds of the pages that are not cert-manager's and
// that certfn has no use for: Azure AD pod identity and the Gateway API
// objects a cluster's Gateway controller reads.
var docKindsSkipped = map[string]string{
	"AzureIdentity":        "Azure AD pod identity (Kubernetes only): certfn uses the deployment's own cloud identity",
	"AzureIdentityBinding": "Azure AD pod identity (Kubernetes only)",
	"Gateway":              "Gateway API object read by a cluster's Gateway controller; certfn answers HTTP-01 itself",
	"HTTPRoute":            "Gateway API object cert-manager creates for a challenge; certfn answers HTTP-01 itself",
}

// docInvalidAsWritten are documents the Kubernetes API server refuses as
// written too (errors in the documentation, not in certfn): certfn must
// refuse them with an error naming the field.
var docInvalidAsWritten = map[string]string{
	// No apiVersion: kubectl says "apiVersion not set".
	"acmedns-2.yaml/kind: Secret": "apiVersion: required",
	// A placeholder where base64 is required: the API server refuses it.
	"digitalocean-1.yaml/kind: Secret": "data[access-token]: want a base64-encoded string",
}

var kindLine = regexp.MustCompile(`(?m)^kind:\s*"?([A-Za-z0-9]+)"?\s*$`)

func TestUpstreamDocExamplesApply(t *testing.T) {
	files, err := filepath.Glob("testdata/upstream-docs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	sort.Strings(files)
	applied := map[string]int{} // provider page → objects applied
	for _, f := range files {
		name := filepath.Base(f)
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		if !strings.HasPrefix(text, "# Copied unchanged from cert-manager's website documentation:") {
			t.Errorf("%s: the header naming the source is missing", name)
		}
		// Most provider pages write spec.acme's server and account key as
		// a "..." line.
		text = strings.ReplaceAll(text, "\n  acme:\n    ...\n", "\n  acme:\n"+acmeHead)
		for _, e := range docElisions[name] {
			if !strings.Contains(text, e[0]) {
				t.Fatalf("%s: elision %q not found (the copy changed?)", name, e[0])
			}
			text = strings.Replace(text, e[0], e[1], 1)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(text, -1) {
			m := kindLine.FindStringSubmatch(doc)
			if m == nil {
				continue // the comment header before the first document
			}
			kind := m[1]
			t.Run(name+"/"+strings.TrimSpace(m[0]), func(t *testing.T) {
				if why, ok := docKindsSkipped[kind]; ok {
					t.Skipf("document %d: %s: %s", i+1, kind, why)
				}
				objs, _, err := api.DecodeWarnings([]byte(doc))
				if want, ok := docInvalidAsWritten[name+"/"+strings.TrimSpace(m[0])]; ok {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("decode = %v, want the error %q (invalid as written, for Kubernetes too)", err, want)
					}
					return
				}
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if len(objs) != 1 {
					t.Fatalf("decoded %d objects, want 1", len(objs))
				}
				if errl := Object(objs[0]); len(errl) > 0 {
					t.Fatalf("invalid: %v", errl)
				}
				applied[strings.SplitN(name, "-", 2)[0]]++
			})
		}
	}
	// Each page's issuer (and the selfSigned/CA chains) applied.
	for _, page := range []string{"selfsigned", "ca", "http01", "cloudflare", "route53", "azuredns", "clouddns",
		"digitalocean", "acmedns", "rfc2136", "akamai"} {
		if applied[page] == 0 {
			t.Errorf("no example of the %s page applied", page)
		}
	}
}
