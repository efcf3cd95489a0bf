package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Doer sends one API request (path with its query) as a caller allowed
// everything in the namespace the suite is given, and returns the
// answer's status and body.
type Doer func(t *testing.T, method, path, contentType, body string) (status int, answer string)

// Semantics checks, through do, that the API's Kubernetes parameters mean
// what they mean in Kubernetes and that a parameter it does not implement
// is refused, never ignored: a label or field selector that selects
// nothing lists nothing (so `kubectl delete -l` deletes nothing), a dry-run
// delete deletes nothing, preconditions and a manifest's resourceVersion
// are checked, a collection has no DELETE, and an unknown, misspelled or
// repeated query parameter is a 400 naming it. It creates three
// Certificates (web, db, bare), an Issuer and Roles in namespace ns, which
// must be otherwise empty of Certificates; it deletes none of the
// Certificates.
func Semantics(t *testing.T, ns string, do Doer) {
	t.Helper()
	base := "/v1/namespaces/" + ns + "/certificates"
	must := func(t *testing.T, want int, method, path, ct, body string) string {
		t.Helper()
		code, ans := do(t, method, path, ct, body)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, ans, want)
		}
		return ans
	}
	cert := func(name, labels string) string {
		return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  secretName: %s-tls
  dnsNames: [%s.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: ss}
`, name, ns, labels, name, name)
	}
	must(t, 200, "POST", "/v1/apply", "application/yaml",
		Docs(Issuer(ns, "ss"), cert("web", "app: web, tier: frontend"), cert("db", "app: db, tier: backend"), cert("bare", "")))
	names := func(t *testing.T, query string) []string {
		t.Helper()
		var l struct {
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"items"`
		}
		ans := must(t, 200, "GET", base+query, "", "")
		if err := json.Unmarshal([]byte(ans), &l); err != nil {
			t.Fatalf("list: %v: %s", err, ans)
		}
		out := []string{}
		for _, it := range l.Items {
			out = append(out, it.Metadata.Name)
		}
		slices.Sort(out)
		return out
	}
	all := []string{"bare", "db", "web"}
	stored := func(t *testing.T, want []string) {
		t.Helper()
		if got := names(t, ""); !slices.Equal(got, want) {
			t.Fatalf("stored Certificates %v, want %v", got, want)
		}
	}
	refused := func(t *testing.T, want int, method, path, ct, body, mention string) {
		t.Helper()
		code, ans := do(t, method, path, ct, body)
		if code != want || !strings.Contains(ans, mention) {
			t.Fatalf("%s %s: %d %s, want %d naming %q", method, path, code, ans, want, mention)
		}
	}
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return "?" + v.Encode()
	}

	t.Run("selectors", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			want  []string
		}{
			// `kubectl delete certificates -l app=does-not-exist` lists
			// with this selector and deletes what the list holds.
			{q("labelSelector", "app=does-not-exist"), []string{}},
			{q("labelSelector", "app=web"), []string{"web"}},
			{q("labelSelector", "app==web"), []string{"web"}},
			{q("labelSelector", "app!=web"), []string{"bare", "db"}},
			{q("labelSelector", "app"), []string{"db", "web"}},
			{q("labelSelector", "!app"), []string{"bare"}},
			{q("labelSelector", "tier in (frontend,backend),app notin (db)"), []string{"web"}},
			{q("labelSelector", "app=web", "limit", "1"), []string{"web"}},
			// `kubectl wait certificate/web` lists with this field selector.
			{q("fieldSelector", "metadata.name=web"), []string{"web"}},
			{q("fieldSelector", "metadata.name==does-not-exist"), []string{}},
			{q("fieldSelector", "metadata.name!=web"), []string{"bare", "db"}},
			{q("fieldSelector", "metadata.namespace="+ns+",metadata.name!=db"), []string{"bare", "web"}},
			{q("fieldSelector", "metadata.namespace=elsewhere"), []string{}},
			{q("labelSelector", "app", "fieldSelector", "metadata.name!=web"), []string{"db"}},
		} {
			if got := names(t, tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("GET %s: %v, want %v", tc.query, got, tc.want)
			}
		}
		refused(t, 400, "GET", base+q("fieldSelector", "spec.secretName=web-tls"), "", "", "field label not supported: spec.secretName")
		refused(t, 400, "GET", base+q("labelSelector", "app in web"), "", "", "labelSelector")
		refused(t, 400, "GET", base+q("fieldSelector", "metadata.name"), "", "", "fieldSelector")
	})

	t.Run("unknown and repeated parameters", func(t *testing.T) {
		for _, tc := range []struct{ method, path, ct, body, param string }{
			{"GET", base + q("watch", "true"), "", "", "watch"},
			{"GET", base + q("labelselector", "app=web"), "", "", "labelselector"},
			{"GET", base + q("resourceVersion", "0"), "", "", "resourceVersion"},
			{"GET", base + q("labelSelector", "app=web", "labelSelector", "app=db"), "", "", "labelSelector"},
			{"GET", base + "/web" + q("resourceVersion", "1"), "", "", "resourceVersion"},
			{"DELETE", base + "/web" + q("dryrun", "All"), "", "", "dryrun"},
			{"DELETE", base + "/web" + q("orphanDependents", "false"), "", "", "orphanDependents"},
			{"DELETE", base + "/web" + q("dryRun", "All", "dryRun", "All"), "", "", "dryRun"},
			{"DELETE", base + "/web", "application/json", `{"orphanDependents": true}`, "orphanDependents"},
			{"DELETE", base + "/web", "application/json", `{"preconditions": {"generation": 1}}`, "generation"},
			{"DELETE", base + "/web" + q("dryRun", "Yes"), "", "", "dryRun"},
			{"DELETE", base + "/web" + q("propagationPolicy", "Orphan"), "", "", "propagationPolicy"},
			{"POST", "/v1/apply" + q("fieldManager", "kubectl"), "application/yaml", cert("web", "app: web, tier: frontend"), "fieldManager"},
			{"POST", "/v1/apply" + q("dryRun", "All", "dryRun", "All"), "application/yaml", cert("web", "app: web, tier: frontend"), "dryRun"},
		} {
			refused(t, 400, tc.method, tc.path, tc.ct, tc.body, tc.param)
		}
		stored(t, all)
	})

	t.Run("dry-run delete deletes nothing", func(t *testing.T) {
		ans := must(t, 200, "DELETE", base+"/web"+q("dryRun", "All"), "", "")
		if !strings.Contains(ans, `"dryRun":true`) || strings.Contains(ans, `"deleted":true`) {
			t.Fatalf("dry run answered %s", ans)
		}
		must(t, 200, "DELETE", base+"/web", "application/json", `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"],"propagationPolicy":"Background"}`)
		refused(t, 404, "DELETE", base+"/missing"+q("dryRun", "All"), "", "", "missing")
		stored(t, all)
	})

	t.Run("a collection has no delete", func(t *testing.T) {
		refused(t, http.StatusMethodNotAllowed, "DELETE", base+q("labelSelector", "app=does-not-exist"), "", "", "DELETE")
		stored(t, all)
	})

	// Preconditions on Roles: no reconciler writes them, so their
	// resourceVersion moves only with the suite's own writes, whatever
	// runs the engine behind the API.
	rolesBase := "/v1/namespaces/" + ns + "/roles"
	role := func(name, rv, verbs string) string {
		meta := fmt.Sprintf("{name: %s, namespace: %s}", name, ns)
		if rv != "" {
			meta = fmt.Sprintf("{name: %s, namespace: %s, resourceVersion: %q}", name, ns, rv)
		}
		return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: %s
rules: [{apiGroups: [cert-manager.io], resources: [certificates], verbs: [%s]}]
`, meta, verbs)
	}
	roleMeta := func(t *testing.T, name string) (uid, rv string) {
		t.Helper()
		var o struct {
			Metadata struct{ UID, ResourceVersion string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(must(t, 200, "GET", rolesBase+"/"+name, "", "")), &o); err != nil {
			t.Fatal(err)
		}
		return o.Metadata.UID, o.Metadata.ResourceVersion
	}
	must(t, 200, "POST", "/v1/apply", "application/yaml", Docs(role("pre", "", "get"), role("ver", "", "get")))

	t.Run("delete preconditions", func(t *testing.T) {
		uid, rv := roleMeta(t, "pre")
		for _, body := range []string{
			`{"preconditions": {"resourceVersion": "999999"}}`,
			`{"preconditions": {"uid": "not-its-uid"}}`,
			fmt.Sprintf(`{"preconditions": {"uid": %q, "resourceVersion": "999999"}}`, uid),
		} {
			refused(t, http.StatusConflict, "DELETE", rolesBase+"/pre", "application/json", body, "precondition")
		}
		refused(t, http.StatusConflict, "DELETE", rolesBase+"/pre"+q("preconditions.uid", "not-its-uid"), "", "", "preconditions.uid")
		roleMeta(t, "pre") // still there
		must(t, 200, "DELETE", rolesBase+"/pre", "application/json", fmt.Sprintf(`{"preconditions": {"uid": %q, "resourceVersion": %q}}`, uid, rv))
		refused(t, http.StatusNotFound, "GET", rolesBase+"/pre", "", "", "pre")
	})

	t.Run("apply with a resourceVersion", func(t *testing.T) {
		_, rv := roleMeta(t, "ver")
		refused(t, http.StatusConflict, "POST", "/v1/apply", "application/yaml", role("ver", "999999", "get, list"), "resourceVersion")
		refused(t, http.StatusConflict, "POST", "/v1/apply"+q("dryRun", "All"), "application/yaml", role("ver", "999999", "get, list"), "resourceVersion")
		refused(t, http.StatusConflict, "POST", "/v1/apply", "application/yaml", role("never-created", "1", "get"), "resourceVersion")
		if _, now := roleMeta(t, "ver"); now != rv {
			t.Fatalf("a stale apply changed the Role: resourceVersion %s -> %s", rv, now)
		}
		must(t, 200, "POST", "/v1/apply", "application/yaml", role("ver", rv, "get, list"))
		if _, now := roleMeta(t, "ver"); now == rv {
			t.Fatal("the apply over the current resourceVersion wrote nothing")
		}
		refused(t, http.StatusConflict, "POST", "/v1/apply", "application/yaml", role("ver", rv, "get, list, watch"), "resourceVersion")
	})
}
