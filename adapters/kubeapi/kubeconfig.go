package kubeapi

import (
	"errors"
	"fmt"
	"net/url"

	"sigs.k8s.io/yaml"
)

// KubeconfigOptions describe a kubeconfig for certfn's API: where it
// listens and the files a client authenticates with.
type KubeconfigOptions struct {
	// Server is the API's URL (https://host:port).
	Server string
	// CAFile is the CA bundle that verifies the server's certificate.
	CAFile string
	// CertFile and KeyFile are the client's certificate (CN = user,
	// O = groups) and key. They are referenced by path, never embedded, so
	// a renewed pair is used without a new kubeconfig and no key is copied.
	CertFile, KeyFile string
	// User names the kubeconfig's user entry (default "certfn").
	User string
	// Namespace is the context's namespace (default "default").
	Namespace string
	// Name names the cluster and context (default "certfn").
	Name string
}

// Kubeconfig returns a kubeconfig (YAML) with one cluster, user and
// context, current, for kubectl and client-go tools. Every field but User,
// Namespace and Name is required; Server must be an https URL.
func Kubeconfig(o KubeconfigOptions) ([]byte, error) {
	if o.Server == "" {
		return nil, errors.New("server: required (https://host:port of serve --api-listen)")
	}
	u, err := url.Parse(o.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server %q: want https://host:port (the API serves TLS only)", o.Server)
	}
	for _, f := range []struct{ name, v string }{{"certificate-authority", o.CAFile}, {"client-certificate", o.CertFile}, {"client-key", o.KeyFile}} {
		if f.v == "" {
			return nil, fmt.Errorf("%s: required (a file path)", f.name)
		}
	}
	if o.User == "" {
		o.User = "certfn"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Name == "" {
		o.Name = "certfn"
	}
	type named struct {
		Name    string         `json:"name"`
		Cluster map[string]any `json:"cluster,omitempty"`
		User    map[string]any `json:"user,omitempty"`
		Context map[string]any `json:"context,omitempty"`
	}
	cfg := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"clusters":        []named{{Name: o.Name, Cluster: map[string]any{"server": o.Server, "certificate-authority": o.CAFile}}},
		"users":           []named{{Name: o.User, User: map[string]any{"client-certificate": o.CertFile, "client-key": o.KeyFile}}},
		"contexts":        []named{{Name: o.Name, Context: map[string]any{"cluster": o.Name, "user": o.User, "namespace": o.Namespace}}},
		"current-context": o.Name,
		"preferences":     map[string]any{},
	}
	return yaml.Marshal(cfg)
}
