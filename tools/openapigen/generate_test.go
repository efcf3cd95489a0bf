package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// The checked-in adapters/kubeapi/schemas.json is what the generator makes
// of core/api now: a changed type or doc comment without a regenerated
// file fails here.
func TestSchemasUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	want, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(root, Output))
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Fatalf("%s is stale: run go run ./tools/openapigen", Output)
	}
}

// The generated schemas carry what kubectl explain and validation read:
// the kind's group/version/kind, the JSON field names, the types and the
// doc comments.
func TestSchemaContents(t *testing.T) {
	b, err := Generate(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	crt := f.Definitions["io.cert-manager.v1.Certificate"]
	if crt == nil {
		t.Fatalf("no Certificate definition in %v", keys(f.Definitions))
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"gvk", crt.GVK[0].Group + "/" + crt.GVK[0].Version + "/" + crt.GVK[0].Kind, "cert-manager.io/v1/Certificate"},
		{"spec type", crt.Properties["spec"].Type, "object"},
		{"dnsNames items", crt.Properties["spec"].Properties["dnsNames"].Items.Type, "string"},
		{"duration", crt.Properties["spec"].Properties["duration"].Type, "string"},
		{"creationTimestamp", crt.Properties["metadata"].Properties["creationTimestamp"].Format, "date-time"},
		{"labels", crt.Properties["metadata"].Properties["labels"].AdditionalProperties.Type, "string"},
		{"spec doc", crt.Properties["spec"].Description, "CertificateSpec is cert-manager's CertificateSpec, field for field."},
		{"secret data", f.Definitions["io.k8s.api.core.v1.Secret"].Properties["data"].AdditionalProperties.Format, "byte"},
		{"csr name", DefinitionName("certificates.k8s.io/v1", "CertificateSigningRequest"), "io.k8s.api.certificates.v1.CertificateSigningRequest"},
		{"policy name", DefinitionName("policy.cert-manager.io/v1alpha1", "CertificateRequestPolicy"), "io.cert-manager.policy.v1alpha1.CertificateRequestPolicy"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	served := 0
	for _, k := range api.Kinds() {
		if !notServed[k.Kind] {
			served++
			if f.Definitions[DefinitionName(k.APIVersion, k.Kind)] == nil {
				t.Errorf("%s: no definition", k.Kind)
			}
		}
	}
	if len(f.Definitions) != served {
		t.Errorf("%d definitions for %d served kinds", len(f.Definitions), served)
	}
}

func keys(m map[string]*Schema) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
