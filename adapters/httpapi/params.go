package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/certfn/certfn/core/app"
)

// verb is one method of a route and the query parameters it implements.
// Every other parameter is refused (400 naming it), so a Kubernetes
// parameter certfn does not implement (watch, resourceVersion,
// fieldManager, a misspelled labelSelector) is never silently ignored;
// each parameter may be given once.
type verb struct {
	method string
	params []string
}

func on(method string, params ...string) verb { return verb{method: method, params: params} }

// The query parameters of the routes.
var (
	// listParams: GET on a collection.
	listParams = []string{"namespace", "limit", "continue", "labelSelector", "fieldSelector"}
	// deleteParams: DELETE on an object, Kubernetes' DeleteOptions as
	// query parameters (and the preconditions, which Kubernetes takes in
	// the body only).
	deleteParams = []string{"dryRun", "propagationPolicy", "gracePeriodSeconds", "preconditions.uid", "preconditions.resourceVersion"}
)

// query parses r's query string and checks it against the parameters
// allowed: an unknown parameter, a repeated one or a query that does not
// parse is a 400 naming it.
func query(r *http.Request, allowed []string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequestf("", "query string: %v", err)
	}
	for name, vals := range q {
		if !contains(allowed, name) {
			if len(allowed) == 0 {
				return nil, badRequestf(name, "query parameter %q is not supported by %s %s (it takes no query parameters)", name, r.Method, r.URL.Path)
			}
			return nil, badRequestf(name, "query parameter %q is not supported by %s %s (supported: %s)", name, r.Method, r.URL.Path, strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return nil, badRequestf(name, "query parameter %q is given %d times: give it once", name, len(vals))
		}
	}
	return q, nil
}

// listOptions are the collection's selectors (checked by the service).
func listOptions(q url.Values) app.ListOptions {
	return app.ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}
}

// DeleteOptions is the body a DELETE may carry: Kubernetes'
// meta/v1 DeleteOptions, of which certfn implements dryRun, the
// preconditions, propagationPolicy Background or Foreground (what an
// object owns is always deleted with it) and gracePeriodSeconds (as for
// custom resources in Kubernetes, deletion is immediate whatever the
// value). Any other field (orphanDependents) is refused.
type DeleteOptions struct {
	Kind               string            `json:"kind,omitempty"`
	APIVersion         string            `json:"apiVersion,omitempty"`
	DryRun             []string          `json:"dryRun,omitempty"`
	GracePeriodSeconds *int64            `json:"gracePeriodSeconds,omitempty"`
	PropagationPolicy  *string           `json:"propagationPolicy,omitempty"`
	Preconditions      app.Preconditions `json:"preconditions,omitzero"`
}

// deleteOptions reads the DeleteOptions of a DELETE from its body (may be
// empty) and its query parameters; a value given in both must agree.
func deleteOptions(r *http.Request, q url.Values) (app.DeleteOptions, error) {
	var opts app.DeleteOptions
	var body DeleteOptions
	b, err := readBody(r)
	if err != nil {
		return opts, err
	}
	if strings.TrimSpace(string(b)) != "" {
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				f = strings.Trim(f, `"`)
				return opts, badRequestf(f, "body: DeleteOptions field %q is not supported (supported: dryRun, preconditions, propagationPolicy, gracePeriodSeconds)", f)
			}
			return opts, badRequestf("", "body is not a valid DeleteOptions JSON object: %v", err)
		}
		if dec.More() {
			return opts, badRequestf("", "body: want one DeleteOptions object")
		}
		if body.Kind != "" && body.Kind != "DeleteOptions" {
			return opts, badRequestf("kind", "body: kind %q: want DeleteOptions", body.Kind)
		}
		switch body.APIVersion {
		case "", "v1", "meta.k8s.io/v1":
		default:
			return opts, badRequestf("apiVersion", "body: apiVersion %q: want v1 or meta.k8s.io/v1", body.APIVersion)
		}
	}
	dry := body.DryRun
	if v, ok := q["dryRun"]; ok {
		if len(dry) > 0 && !equalStrings(dry, v) {
			return opts, badRequestf("dryRun", "dryRun: the query's %q and the body's %q differ", v, dry)
		}
		dry = v
	}
	for _, d := range dry {
		if d != "All" {
			return opts, badRequestf("dryRun", "dryRun=%q: want All (or leave it out)", d)
		}
		opts.DryRun = true
	}
	policy := body.PropagationPolicy
	if v, ok := q["propagationPolicy"]; ok {
		if policy != nil && *policy != v[0] {
			return opts, badRequestf("propagationPolicy", "propagationPolicy: the query's %q and the body's %q differ", v[0], *policy)
		}
		policy = &v[0]
	}
	if policy != nil {
		switch *policy {
		case "Background", "Foreground":
		case "Orphan":
			return opts, badRequestf("propagationPolicy", "propagationPolicy=Orphan is not supported: what an object owns is deleted with it (want Background or Foreground)")
		default:
			return opts, badRequestf("propagationPolicy", "propagationPolicy=%q: want Background or Foreground", *policy)
		}
	}
	grace := body.GracePeriodSeconds
	if v, ok := q["gracePeriodSeconds"]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return opts, badRequestf("gracePeriodSeconds", "gracePeriodSeconds=%q: want a whole number of seconds >= 0", v[0])
		}
		if grace != nil && *grace != n {
			return opts, badRequestf("gracePeriodSeconds", "gracePeriodSeconds: the query's %d and the body's %d differ", n, *grace)
		}
		grace = &n
	}
	if grace != nil && *grace < 0 {
		return opts, badRequestf("gracePeriodSeconds", "gracePeriodSeconds=%d: want a whole number of seconds >= 0", *grace)
	}
	opts.Preconditions = body.Preconditions
	for name, dst := range map[string]**string{"preconditions.uid": &opts.Preconditions.UID, "preconditions.resourceVersion": &opts.Preconditions.ResourceVersion} {
		v, ok := q[name]
		if !ok {
			continue
		}
		if *dst != nil && **dst != v[0] {
			return opts, badRequestf(name, "%s: the query's %q and the body's %q differ", name, v[0], **dst)
		}
		*dst = &v[0]
	}
	return opts, nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkAllowed is route's check of the method and the query.
func checkAllowed(r *http.Request, verbs []verb) error {
	var methods []string
	for _, v := range verbs {
		if v.method == "" || v.method == r.Method {
			if v.method == "" {
				return nil
			}
			_, err := query(r, v.params)
			return err
		}
		methods = append(methods, v.method)
	}
	return &requestError{status: http.StatusMethodNotAllowed, allow: strings.Join(methods, ", "),
		msg: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(methods, ", "))}
}
