package tfprovider

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseImportID(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"Certificate/team-a/web", "Certificate/team-a/web", ""},
		{"ClusterIssuer/le", "ClusterIssuer/le", ""},
		{"Certificate/web", "", "Certificate is namespaced: want Certificate/<namespace>/<name>"},
		{"ClusterIssuer/ns/le", "", "ClusterIssuer is cluster-scoped: want ClusterIssuer/<name>"},
		{"Certificate/team-a/", "", "is namespaced"},
		{"Widget/a/b", "", "want kind/namespace/name"},
		{"", "", "want kind/namespace/name"},
	} {
		id, err := parseImportID(tc.in)
		switch {
		case tc.err == "" && (err != nil || id.ID() != tc.want):
			t.Errorf("parseImportID(%q) = %q, %v; want %q", tc.in, id.ID(), err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseImportID(%q): error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestParseManifestAndCheck(t *testing.T) {
	for _, tc := range []struct{ name, in, want, err string }{
		{"yaml", "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: x}\nspec: {selfSigned: {}}\nstatus: {conditions: []}\n", "Issuer/default/x", ""},
		{"json", `{"apiVersion":"cert-manager.io/v1","kind":"ClusterIssuer","metadata":{"name":"x"},"spec":{"selfSigned":{}}}`, "ClusterIssuer/x", ""},
		{"leading separator", "---\napiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: x, namespace: a}\n", "Issuer/a/x", ""},
		{"two documents", "kind: Issuer\n---\nkind: Issuer\n", "", "holds 2 YAML documents"},
		{"empty", " \n", "", "the manifest is empty"},
		{"not yaml", "kind: [", "", "not YAML or JSON"},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "", "kind: required"},
		{"no apiVersion", "kind: Issuer\nmetadata: {name: x}\n", "", "apiVersion: required"},
		{"no name", "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {generateName: x-}\n", "", "metadata.name: required"},
		{"cluster-scoped with namespace", "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: x, namespace: a}\n", "", "ClusterIssuer is cluster-scoped"},
		{"secret", "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n", "", "Secret manifests are not managed"},
	} {
		d, err := parseManifest(tc.in)
		var id identity
		if err == nil {
			id, err = check(d)
		}
		switch {
		case tc.err == "" && (err != nil || id.ID() != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, id.ID(), err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case err == nil && d["status"] != nil:
			t.Errorf("%s: status kept", tc.name)
		}
	}
}

// The user's fields, as certfn stores them: certfn's spelling of a value
// (a duration) is the same value; extra server fields are not the user's;
// a changed value is a change.
func TestSameManaged(t *testing.T) {
	user := doc{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec": map[string]any{"duration": "2160h", "dnsNames": []any{"a.example.com"}, "secretName": "web-tls", "issuerRef": map[string]any{"name": "ss"}}}
	stored := doc{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "web", "namespace": "default", "uid": "u", "generation": float64(3), "labels": map[string]any{"x": "y"}},
		"spec":     map[string]any{"duration": "2160h0m0s", "dnsNames": []any{"a.example.com"}, "secretName": "web-tls", "issuerRef": map[string]any{"name": "ss"}},
		"status":   map[string]any{"revision": float64(2)}}
	if !sameManaged("Certificate", user, stored) {
		t.Fatal("the stored object differs only in certfn's spelling and its own fields, but sameManaged says it changed")
	}
	stored["spec"].(map[string]any)["dnsNames"] = []any{"b.example.com"}
	if sameManaged("Certificate", user, stored) {
		t.Fatal("changed dnsNames not seen")
	}
	got := project(stored, user)
	want := doc{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec": map[string]any{"duration": "2160h0m0s", "dnsNames": []any{"b.example.com"}, "secretName": "web-tls", "issuerRef": map[string]any{"name": "ss"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("project = %v\nwant %v", got, want)
	}
	m := managed(stored)
	if _, ok := m["status"]; ok {
		t.Fatal("managed kept status")
	}
	if meta := m["metadata"].(map[string]any); meta["uid"] != nil || meta["generation"] != nil || meta["labels"] == nil {
		t.Fatalf("managed metadata = %v", meta)
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: x}\nspec: {dnsNames: [a]}\n")
	f.Add(`{"kind":"Issuer","apiVersion":"cert-manager.io/v1","metadata":{"name":"x","namespace":"y"}}`)
	f.Add("---\n---\n")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseManifest(s)
		if err != nil {
			return
		}
		id, err := check(d)
		if err != nil {
			return
		}
		if id.Name == "" || id.Kind == "" || (id.Namespaced && id.Namespace == "") {
			t.Fatalf("%q: accepted with identity %+v", s, id)
		}
		if _, err := canonical(d); err != nil {
			t.Fatalf("%q: accepted but not encodable: %v", s, err)
		}
		back, err := parseImportID(id.ID())
		if err != nil || back.ID() != id.ID() {
			t.Fatalf("%q: ID %q does not parse back: %v", s, id.ID(), err)
		}
	})
}
