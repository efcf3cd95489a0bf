package kubeapi

import (
	"crypto/sha512"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
)

// schemasJSON is tools/openapigen's output: the schema of every served
// kind, from core/api's types and doc comments.
//
//go:embed schemas.json
var schemasJSON []byte

// The media types of the OpenAPI documents.
const (
	mimeV2Protobuf = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mimeV2ProtoAlt = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// openAPIDocs are the documents, built once.
type openAPIDocs struct {
	v2JSON, v2Proto []byte
	// v3 holds each group/version's document ("api/v1",
	// "apis/cert-manager.io/v1") and v3Index the discovery document.
	v3      map[string][]byte
	v3Index []byte
	err     error
}

var (
	docsOnce sync.Once
	docs     openAPIDocs
)

func buildDocs(version string) *openAPIDocs {
	docsOnce.Do(func() { docs = build(version) })
	return &docs
}

// definitions reads the embedded schemas.
func definitions() (map[string]json.RawMessage, error) {
	var f struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(schemasJSON, &f); err != nil {
		return nil, fmt.Errorf("kubeapi: schemas.json: %w", err)
	}
	return f.Definitions, nil
}

// definitionName is the name of res's schema in schemas.json.
func definitionName(res *resource) string { return DefinitionName(res.info.APIVersion, res.info.Kind) }

// DefinitionName is Kubernetes' OpenAPI definition name of a kind: the
// reversed group (io.k8s.api.<group> for Kubernetes' own groups), the
// version and the kind: io.cert-manager.v1.Certificate,
// io.k8s.api.core.v1.Secret. tools/openapigen names the schemas with it.
func DefinitionName(apiVersion, kind string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	var prefix string
	switch {
	case group == "":
		prefix = "io.k8s.api.core"
	case strings.HasSuffix(group, ".k8s.io"):
		prefix = "io.k8s.api." + strings.Split(group, ".")[0]
	default:
		parts := strings.Split(group, ".")
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		prefix = strings.Join(parts, ".")
	}
	return prefix + "." + version + "." + kind
}

// operation is one path operation of either version.
func operation(res *resource, action, ref string, v3 bool, params []string) map[string]any {
	op := map[string]any{
		"operationId":                     action + res.info.Kind,
		"x-kubernetes-action":             action,
		"x-kubernetes-group-version-kind": map[string]string{"group": res.group, "version": res.version, "kind": res.info.Kind},
		"tags":                            []string{strings.ReplaceAll(res.groupVersion(), "/", "_")},
	}
	var ps []any
	for _, p := range params {
		if v3 {
			ps = append(ps, map[string]any{"name": p, "in": "query", "schema": map[string]string{"type": "string"}, "description": paramDoc[p]})
		} else {
			ps = append(ps, map[string]any{"name": p, "in": "query", "type": "string", "uniqueItems": true, "description": paramDoc[p]})
		}
	}
	if ps != nil {
		op["parameters"] = ps
	}
	schema := map[string]string{"$ref": ref}
	if v3 {
		op["responses"] = map[string]any{"200": map[string]any{"description": "OK",
			"content": map[string]any{"application/json": map[string]any{"schema": schema}}}}
	} else {
		op["responses"] = map[string]any{"200": map[string]any{"description": "OK", "schema": schema}}
		op["produces"] = []string{"application/json"}
	}
	return op
}

var paramDoc = map[string]string{
	"dryRun":          "All: every check, nothing written.",
	"fieldManager":    "Accepted; certfn keeps no managedFields.",
	"fieldValidation": "Strict only: unknown and duplicate fields are always refused.",
	"labelSelector":   "Kubernetes label selector.",
	"fieldSelector":   "metadata.name and metadata.namespace.",
	"limit":           "At most this many items, with metadata.continue when more follow.",
	"continue":        "The token of the next page.",
}

// paths returns res's collection and item paths with their operations
// (what kubectl reads to learn that the server validates fields).
func paths(res *resource, ref string, v3 bool) map[string]any {
	base := "/api/" + res.version
	if res.group != "" {
		base = "/apis/" + res.groupVersion()
	}
	coll := base + "/" + res.info.Plural
	if res.info.Namespaced {
		coll = base + "/namespaces/{namespace}/" + res.info.Plural
	}
	write := []string{"dryRun", "fieldManager", "fieldValidation"}
	collOps := map[string]any{"get": operation(res, "list", ref, v3, []string{"labelSelector", "fieldSelector", "limit", "continue"})}
	itemOps := map[string]any{"get": operation(res, "get", ref, v3, nil), "delete": operation(res, "delete", ref, v3, []string{"dryRun"})}
	if res.can("create") {
		collOps["post"] = operation(res, "post", ref, v3, write)
	}
	if res.can("update") {
		itemOps["put"] = operation(res, "put", ref, v3, write)
	}
	if res.can("patch") {
		itemOps["patch"] = operation(res, "patch", ref, v3, write)
	}
	return map[string]any{coll: collOps, coll + "/{name}": itemOps}
}

func build(version string) openAPIDocs {
	defs, err := definitions()
	if err != nil {
		return openAPIDocs{err: err}
	}
	info := map[string]string{"title": "certfn", "version": version}
	// v2: one document.
	v2Paths := map[string]any{}
	v2Defs := map[string]json.RawMessage{}
	for _, res := range resources {
		name := definitionName(res)
		def, ok := defs[name]
		if !ok {
			return openAPIDocs{err: fmt.Errorf("kubeapi: schemas.json has no %s: run go run ./tools/openapigen", name)}
		}
		v2Defs[name] = def
		for p, ops := range paths(res, "#/definitions/"+name, false) {
			v2Paths[p] = ops
		}
	}
	v2, err := json.Marshal(map[string]any{"swagger": "2.0", "info": info, "paths": v2Paths, "definitions": v2Defs})
	if err != nil {
		return openAPIDocs{err: err}
	}
	doc, err := openapi_v2.ParseDocument(v2)
	if err != nil {
		return openAPIDocs{err: fmt.Errorf("kubeapi: OpenAPI v2 document: %w", err)}
	}
	pb, err := proto.Marshal(doc)
	if err != nil {
		return openAPIDocs{err: fmt.Errorf("kubeapi: OpenAPI v2 protobuf: %w", err)}
	}
	// v3: one document per group/version, and the index of them.
	out := openAPIDocs{v2JSON: v2, v2Proto: pb, v3: map[string][]byte{}}
	index := map[string]any{}
	for _, gv := range groupVersions() {
		p := "apis/" + gv
		if gv == "v1" {
			p = "api/v1"
		}
		v3Paths := map[string]any{}
		schemas := map[string]json.RawMessage{}
		for _, res := range resourcesOf(gv) {
			name := definitionName(res)
			schemas[name] = defs[name]
			for path, ops := range paths(res, "#/components/schemas/"+name, true) {
				v3Paths[path] = ops
			}
		}
		b, err := json.Marshal(map[string]any{"openapi": "3.0.0", "info": info, "paths": v3Paths,
			"components": map[string]any{"schemas": schemas}})
		if err != nil {
			return openAPIDocs{err: err}
		}
		out.v3[p] = b
		sum := sha512.Sum512(b)
		index[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
	}
	out.v3Index, err = json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return openAPIDocs{err: err}
	}
	return out
}

// openAPI: GET /openapi/v2 (JSON, or protobuf when Accept asks for it),
// /openapi/v3 (the index) and /openapi/v3/{api/v1|apis/G/V}. The only
// query parameter is v3's hash (any value: the documents change only with
// the binary).
func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) error {
	for name := range r.URL.Query() {
		if name != "hash" || !strings.HasPrefix(r.URL.Path, "/openapi/v3/") {
			return badRequest(fmt.Sprintf("query parameter %q is not supported on %s", name, r.URL.Path))
		}
	}
	d := buildDocs(h.cfg.Version)
	if d.err != nil {
		return d.err
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/openapi/v2":
		switch acceptOpenAPI(r.Header.Get("Accept")) {
		case "protobuf":
			// The answer names the dotted form: the @ form does not parse as a media type.
			writeBytes(w, http.StatusOK, mimeV2ProtoAlt, d.v2Proto)
		case "json":
			writeBytes(w, http.StatusOK, "application/json", d.v2JSON)
		default:
			return &statusError{code: http.StatusNotAcceptable, reason: "NotAcceptable",
				msg: "only the following media types are accepted: application/json, " + mimeV2Protobuf}
		}
		return nil
	case p == "/openapi/v3":
		writeBytes(w, http.StatusOK, "application/json", d.v3Index)
		return nil
	case strings.HasPrefix(p, "/openapi/v3/"):
		b, ok := d.v3[strings.TrimPrefix(p, "/openapi/v3/")]
		if !ok {
			return notFound("the server could not find the requested resource")
		}
		if acceptOpenAPI(r.Header.Get("Accept")) != "json" {
			return &statusError{code: http.StatusNotAcceptable, reason: "NotAcceptable", msg: "only application/json is served for OpenAPI v3"}
		}
		writeBytes(w, http.StatusOK, "application/json", b)
		return nil
	}
	return notFound("the server could not find the requested resource")
}

// acceptOpenAPI picks "protobuf" or "json" from Accept (in its order), or "".
func acceptOpenAPI(accept string) string {
	if strings.TrimSpace(accept) == "" {
		return "json"
	}
	type choice struct {
		form string
		q    string
		i    int
	}
	var cs []choice
	for i, part := range strings.Split(accept, ",") {
		// Not mime.ParseMediaType: the protobuf type's '@' is a tspecial.
		fields := strings.Split(part, ";")
		q := ""
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(f), "q="); ok {
				q = v
			}
		}
		switch strings.ToLower(strings.TrimSpace(fields[0])) {
		case mimeV2Protobuf, mimeV2ProtoAlt:
			cs = append(cs, choice{"protobuf", q, i})
		case "application/json", "*/*", "application/*":
			cs = append(cs, choice{"json", q, i})
		}
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].q == "" && cs[b].q != "" })
	if len(cs) == 0 {
		return ""
	}
	return cs[0].form
}
