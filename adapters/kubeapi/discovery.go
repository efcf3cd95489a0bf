package kubeapi

import (
	"net/http"
	"runtime"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// VersionInfo is /version's answer (k8s.io/apimachinery/pkg/version.Info).
type VersionInfo struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// The Kubernetes API version certfn's API follows (what kubectl's version
// skew warning compares with).
const kubeMajor, kubeMinor = "1", "33"

func (h *Handler) version(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, VersionInfo{Major: kubeMajor, Minor: kubeMinor,
		GitVersion:   "v" + kubeMajor + "." + kubeMinor + ".0+certfn." + buildMetadata(h.cfg.Version),
		GitTreeState: "clean", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH})
	return nil
}

// coreVersions: GET /api.
func (h *Handler) coreVersions(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, APIVersions{Kind: "APIVersions", Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	return nil
}

func apiGroup(name string) APIGroup {
	g := APIGroup{Name: name}
	for _, gv := range append(groupVersions(), reviewGroupVersion) {
		if group, version, ok := strings.Cut(gv, "/"); ok && group == name {
			v := GroupVersionForDiscovery{GroupVersion: gv, Version: version}
			g.Versions = append(g.Versions, v)
			g.PreferredVersion = v
		}
	}
	return g
}

// groups: GET /apis, every named group (legacy discovery; clients that ask
// for aggregated discovery fall back to it).
func (h *Handler) groups(w http.ResponseWriter, _ *http.Request) error {
	list := APIGroupList{Kind: "APIGroupList", APIVersion: "v1", Groups: []APIGroup{}}
	seen := map[string]bool{}
	for _, gv := range append(groupVersions(), reviewGroupVersion) {
		if group, _, ok := strings.Cut(gv, "/"); ok && !seen[group] {
			seen[group] = true
			list.Groups = append(list.Groups, apiGroup(group))
		}
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// group: GET /apis/{group}.
func (h *Handler) group(w http.ResponseWriter, _ *http.Request, name string) error {
	g := apiGroup(name)
	if len(g.Versions) == 0 {
		return notFound("the server could not find the requested resource")
	}
	g.Kind, g.APIVersion = "APIGroup", "v1"
	writeJSON(w, http.StatusOK, g)
	return nil
}

// resourceList: GET /api/v1 and /apis/{group}/{version}.
func (h *Handler) resourceList(w http.ResponseWriter, _ *http.Request, gv string) error {
	list := APIResourceList{Kind: "APIResourceList", APIVersion: "v1", GroupVersion: gv, Resources: []APIResource{}}
	for _, res := range resourcesOf(gv) {
		list.Resources = append(list.Resources, APIResource{Name: res.info.Plural, SingularName: res.singular(),
			Namespaced: res.info.Namespaced, Kind: res.info.Kind, Verbs: res.verbs,
			ShortNames: res.shortNames, Categories: res.categories})
		switch res.info.Kind {
		case api.KindCertificateSigningRequest:
			list.Resources = append(list.Resources, APIResource{Name: res.info.Plural + "/approval", Kind: res.info.Kind, Verbs: []string{"update"}})
		case api.KindCertificate, api.KindCertificateRequest:
			list.Resources = append(list.Resources, APIResource{Name: res.info.Plural + "/status", Namespaced: true, Kind: res.info.Kind, Verbs: []string{"update"}})
		}
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// buildMetadata makes certfn's version a semantic version's build
// metadata: [0-9A-Za-z.-] only.
func buildMetadata(v string) string {
	b := []byte(strings.TrimPrefix(v, "v"))
	for i, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), ".-")
}
