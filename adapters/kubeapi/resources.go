package kubeapi

import (
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// resource is one kind as the Kubernetes API serves it: its group,
// version and plural (the URL), what discovery says of it, and its table
// columns.
type resource struct {
	info       api.KindInfo
	group      string
	version    string
	shortNames []string
	categories []string
	verbs      []string
	columns    []column
}

func (r *resource) groupVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

func (r *resource) singular() string { return strings.ToLower(r.info.Kind) }

// writable: create, update and patch are served (verbs lists them).
func (r *resource) can(verb string) bool {
	for _, v := range r.verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// The verbs discovery announces. Orders, Challenges and Events are
// written by certfn only (core/app refuses writes of them); secrets are
// read as metadata only (their data never leaves the secret store), so a
// read-modify-write (update, patch) of one is refused.
var (
	allVerbs      = []string{"create", "delete", "get", "list", "patch", "update"}
	readOnlyVerbs = []string{"delete", "get", "list"}
	secretVerbs   = []string{"create", "delete", "get", "list"}
)

// kubeShortNames are the short names discovery announces: cert-manager's
// and approver-policy's CRDs', Kubernetes' for its own kinds.
var kubeShortNames = map[string][]string{
	api.KindCertificate:               {"cert", "certs"},
	api.KindCertificateRequest:        {"cr", "crs"},
	api.KindCertificateRequestPolicy:  {"crp"},
	api.KindCertificateSigningRequest: {"csr"},
	api.KindNamespace:                 {"ns"},
	api.KindEvent:                     {"ev"},
}

// kubeCategories are the CRDs' categories (`kubectl get cert-manager`).
var kubeCategories = map[string][]string{
	api.KindCertificate:              {"cert-manager"},
	api.KindCertificateRequest:       {"cert-manager"},
	api.KindIssuer:                   {"cert-manager"},
	api.KindClusterIssuer:            {"cert-manager"},
	api.KindOrder:                    {"cert-manager", "cert-manager-acme"},
	api.KindChallenge:                {"cert-manager", "cert-manager-acme"},
	api.KindCertificateRequestPolicy: {"cert-manager"},
}

// notServed are kinds certfn stores that the Kubernetes API does not
// serve: the ACME issuer's Challenge leases are certfn's bookkeeping.
var notServed = map[string]bool{api.KindChallengeLease: true}

// resources is the table of served kinds, built once from core/api's
// kind table.
var resources = buildResources()

func buildResources() []*resource {
	var out []*resource
	for _, info := range api.Kinds() {
		if notServed[info.Kind] {
			continue
		}
		group, version := "", info.APIVersion
		if g, v, ok := strings.Cut(info.APIVersion, "/"); ok {
			group, version = g, v
		}
		verbs := allVerbs
		switch info.Kind {
		case api.KindOrder, api.KindChallenge, api.KindEvent:
			verbs = readOnlyVerbs
		case api.KindSecret:
			verbs = secretVerbs
		}
		out = append(out, &resource{info: info, group: group, version: version,
			shortNames: kubeShortNames[info.Kind], categories: kubeCategories[info.Kind],
			verbs: verbs, columns: columnsFor(info.Kind)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].group != out[j].group {
			return out[i].group < out[j].group
		}
		return out[i].info.Plural < out[j].info.Plural
	})
	return out
}

// groupVersions lists the served group/versions ("v1" is the core group),
// core first, then by name.
func groupVersions() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range resources {
		if gv := r.groupVersion(); !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == "v1") != (out[j] == "v1") {
			return out[i] == "v1"
		}
		return out[i] < out[j]
	})
	return out
}

// resourcesOf returns the resources of group/version gv.
func resourcesOf(gv string) []*resource {
	var out []*resource
	for _, r := range resources {
		if r.groupVersion() == gv {
			out = append(out, r)
		}
	}
	return out
}

// lookup finds the resource served as plural in gv.
func lookup(gv, plural string) *resource {
	for _, r := range resources {
		if r.groupVersion() == gv && r.info.Plural == plural {
			return r
		}
	}
	return nil
}
