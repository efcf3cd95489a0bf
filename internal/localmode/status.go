package localmode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
)

// The status page: GET /status, a read-only HTML page (html/template, no
// JavaScript; its Content-Security-Policy forbids scripts) with the
// Certificates a caller may list, their expiry and Ready condition, the
// next renewals in time order, the failures with the blocker line `certfn
// status` prints (app.Report.Summary), and the scheduler's last sweep.
//
// Who sees what (docs/reference/status-page.md):
//   - On the API listener, and on a metrics listener served over TLS, the
//     caller is the client certificate's subject (httpapi.X509Caller) and
//     sees the Certificates of the namespaces where it may list them (every
//     namespace with a cluster-wide grant); the blocker lines of those it
//     may also get. A caller who may list Certificates nowhere gets 403,
//     whatever the store holds.
//   - On a metrics listener in plain HTTP on loopback (no caller) the page
//     shows what /metrics there shows: every Certificate's name, issuer,
//     expiry, renewal time and Ready status (with the condition's reason),
//     the sweep time, and no blocker lines, which quote issuers' and ACME
//     servers' messages.

// statusCSS is the page's only style sheet, allowed by its hash.
const statusCSS = `body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1b1b1b;background:#fff}
h1{font-size:1.4rem;margin:0 0 .3rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
p.meta{color:#555;margin:.2rem 0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .6rem;border-bottom:1px solid #ddd;vertical-align:top}
th{background:#f3f3f3}
.True{color:#0a6b2d;font-weight:600}.False{color:#b00020;font-weight:600}.Unknown{color:#7a5a00;font-weight:600}
ol.timeline{list-style:none;padding:0;margin:0}ol.timeline li{padding:.3rem .6rem;border-left:4px solid #3b6fb6;margin:.3rem 0;background:#f6f9fd}
ol.timeline li.overdue{border-left-color:#b00020;background:#fdf3f4}
ul.failures{padding:0;list-style:none}ul.failures li{padding:.4rem .6rem;margin:.3rem 0;border-left:4px solid #b00020;background:#fdf3f4}
ul.failures li.issuing{border-left-color:#7a5a00;background:#fdfaf0}
.blocker{font-family:ui-monospace,monospace;white-space:pre-wrap;display:block;margin-top:.2rem}
.none{color:#555;font-style:italic}`

// statusCSP forbids everything but the style sheet above: no script,
// no image, no form, no frame, no base URL.
var statusCSP = func() string {
	sum := sha256.Sum256([]byte(statusCSS))
	return "default-src 'none'; script-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
}()

var statusTemplate = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>certfn status</title>
<style>{{.CSS}}</style></head>
<body>
<h1>certfn status</h1>
<p class="meta" id="scope">{{if .Caller}}For {{.Caller}}: {{end}}{{.Scope}}. Shown at {{.Now}}.</p>
<p class="meta" id="sweep">Last sweep: {{if .LastSweep}}{{.LastSweep}} ({{.SweepAgo}} ago){{else}}none yet{{end}}{{if .SweepInterval}}, every {{.SweepInterval}}{{end}}. {{.Readiness}}</p>
{{if .Restricted}}<p class="meta" id="restricted">Blocker lines are not shown on this listener; the API listener's /status shows them to callers allowed to read the Certificates.</p>{{end}}

<h2>Certificates</h2>
{{if .Certificates}}<table id="certificates"><thead><tr><th>Namespace</th><th>Name</th><th>Issuer</th><th>Ready</th><th>Expires</th><th>Renews</th></tr></thead><tbody>
{{range .Certificates}}<tr data-certificate="{{.Namespace}}/{{.Name}}"><td>{{.Namespace}}</td><td>{{.Name}}</td><td>{{.Issuer}}</td><td class="{{.Ready}}">{{.Ready}}{{if .Reason}} ({{.Reason}}){{end}}</td><td>{{if .NotAfter}}{{.NotAfter}} ({{.ExpiresIn}}){{else}}<span class="none">no certificate</span>{{end}}</td><td>{{if .Renewal}}{{.Renewal}} ({{.RenewsIn}}){{else}}<span class="none">—</span>{{end}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="none" id="certificates">No Certificates.</p>{{end}}

<h2>Next renewals</h2>
{{if .Renewals}}<ol class="timeline" id="renewals">
{{range .Renewals}}<li data-certificate="{{.Namespace}}/{{.Name}}"{{if .Overdue}} class="overdue"{{end}}><time>{{.Renewal}}</time> ({{.RenewsIn}}): {{.Namespace}}/{{.Name}}</li>
{{end}}</ol>{{else}}<p class="none" id="renewals">No renewal scheduled.</p>{{end}}

<h2>Failures and blockers</h2>
{{if .Failures}}<ul class="failures" id="failures">
{{range .Failures}}<li data-certificate="{{.Namespace}}/{{.Name}}"{{if .Issuing}} class="issuing"{{end}}><strong>{{.Namespace}}/{{.Name}}</strong>{{if .Permanent}} (needs a change: waiting will not help){{end}}<span class="blocker">{{.Blocker}}</span></li>
{{end}}</ul>{{else}}<p class="none" id="failures">None.</p>{{end}}
</body></html>
`))

// statusPage is what the template shows.
type statusPage struct {
	CSS                                template.CSS
	Caller, Scope, Now                 string
	LastSweep, SweepAgo, SweepInterval string
	Readiness                          string
	Restricted                         bool
	Certificates, Renewals             []statusRow
	Failures                           []statusFailure
}

// statusRow is one Certificate.
type statusRow struct {
	Namespace, Name, Issuer, Ready, Reason string
	NotAfter, ExpiresIn, Renewal, RenewsIn string
	Overdue                                bool
	renewal                                time.Time
}

// statusFailure is a Certificate that is not Ready (or whose renewal
// waits), with the blocker line of its explanation.
type statusFailure struct {
	Namespace, Name, Blocker string
	Permanent, Issuing       bool
}

// errNoNamespaces: the caller may list Certificates in no namespace.
var errNoNamespaces = errors.New("may not list certificates.cert-manager.io in any namespace")

// statusCaller says who asks for the page: the verified client
// certificate's subject, or nil for the unauthenticated view.
type statusCaller func(*http.Request) (*app.Caller, error)

// x509StatusCaller is the caller of a TLS listener with client certificates.
func x509StatusCaller(req *http.Request) (*app.Caller, error) {
	c, err := httpapi.X509Caller(req)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// anonymousStatus is the loopback metrics listener's view.
func anonymousStatus(*http.Request) (*app.Caller, error) { return nil, nil }

// statusHandler serves GET /status (and HEAD) to the caller who returns:
// 401 when who fails, 403 for a caller who may list Certificates in no
// namespace, 405 for another method. Every answer carries the page's
// Content-Security-Policy.
func (r *Runtime) statusHandler(who statusCaller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", statusCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "status: only GET", http.StatusMethodNotAllowed)
			return
		}
		caller, err := who(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		page, err := r.statusPage(req.Context(), caller)
		switch {
		case errors.Is(err, errNoNamespaces) || errors.Is(err, app.ErrForbidden):
			http.Error(w, caller.Username+" "+errNoNamespaces.Error()+" (the status page shows the Certificates a caller may list)", http.StatusForbidden)
			return
		case err != nil:
			r.Log.Warn("status", "err", err)
			http.Error(w, "status unavailable", http.StatusInternalServerError)
			return
		}
		var buf bytes.Buffer
		if err := statusTemplate.Execute(&buf, page); err != nil {
			r.Log.Warn("status", "err", err)
			http.Error(w, "status unavailable", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	})
}

// statusPage reads the page's data: for a caller, the Certificates it may
// list and the explanation of those it may get; for nil, every
// Certificate without explanations.
func (r *Runtime) statusPage(ctx context.Context, caller *app.Caller) (*statusPage, error) {
	now := r.Opts.Clock.Now()
	page := &statusPage{CSS: template.CSS(statusCSS), Now: now.UTC().Format(time.RFC3339), Restricted: caller == nil}
	var certs []api.Object
	if caller == nil {
		objs, err := r.Repo.List(ctx, api.KindCertificate, "")
		if err != nil {
			return nil, fmt.Errorf("status: list certificates: %w", err)
		}
		certs, page.Scope = objs, "every namespace (what /metrics on this listener shows)"
	} else {
		page.Caller = caller.Username
		namespaces, all, err := r.listableNamespaces(ctx, *caller)
		if err != nil {
			return nil, err
		}
		if all {
			namespaces, page.Scope = []string{""}, "every namespace"
		} else {
			page.Scope = "namespaces " + strings.Join(namespaces, ", ")
			if len(namespaces) == 1 {
				page.Scope = "namespace " + namespaces[0]
			}
		}
		for _, ns := range namespaces {
			objs, err := r.App.Service.List(ctx, *caller, api.KindCertificate, ns, app.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("status: list certificates in %q: %w", ns, err)
			}
			certs = append(certs, objs...)
		}
	}
	for _, o := range certs {
		c := o.(*api.Certificate)
		row := statusRow{Namespace: c.Namespace, Name: c.Name, Issuer: issuerLabel(c.Spec.IssuerRef), Ready: string(api.ConditionUnknown)}
		ready := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady)
		if ready != nil {
			row.Ready, row.Reason = string(ready.Status), ready.Reason
		}
		if t := c.Status.NotAfter; t != nil {
			row.NotAfter, row.ExpiresIn = t.UTC().Format(time.RFC3339), relative(t.Sub(now), "in ", "expired ")
		}
		if t := c.Status.RenewalTime; t != nil {
			row.Renewal, row.RenewsIn, row.Overdue, row.renewal = t.UTC().Format(time.RFC3339), relative(t.Sub(now), "in ", "due "), !t.After(now), t.Time
			page.Renewals = append(page.Renewals, row)
		}
		page.Certificates = append(page.Certificates, row)
		if f, ok, err := r.statusFailure(ctx, caller, c, ready); err != nil {
			return nil, err
		} else if ok {
			page.Failures = append(page.Failures, f)
		}
	}
	sort.Slice(page.Certificates, func(i, j int) bool {
		a, b := page.Certificates[i], page.Certificates[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	sort.SliceStable(page.Renewals, func(i, j int) bool { return page.Renewals[i].renewal.Before(page.Renewals[j].renewal) })
	sort.Slice(page.Failures, func(i, j int) bool {
		a, b := page.Failures[i], page.Failures[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	at, interval := r.health.read()
	if !at.IsZero() {
		page.LastSweep, page.SweepAgo = at.UTC().Format(time.RFC3339), time.Since(at).Round(time.Second).String()
	}
	if interval > 0 {
		page.SweepInterval = interval.String()
	}
	page.Readiness = "Ready."
	if why := r.ready(ctx); why != "" {
		page.Readiness = "Not ready: " + why + "."
	}
	return page, nil
}

// statusFailure returns the failure row of c when it is not Ready or its
// renewal waits. For a caller allowed to get c the row holds the blocker
// line of `certfn status` (app.Report.Summary); for a caller who may only
// list it, a note saying so; in the unauthenticated view (caller nil) only
// the Ready condition's status and reason, no message.
func (r *Runtime) statusFailure(ctx context.Context, caller *app.Caller, c *api.Certificate, ready *api.Condition) (statusFailure, bool, error) {
	f := statusFailure{Namespace: c.Namespace, Name: c.Name}
	isReady := ready != nil && ready.Status == api.ConditionTrue
	issuing := api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing)
	if isReady && !issuing {
		return f, false, nil
	}
	if caller == nil {
		if isReady {
			return f, false, nil // renewing: the reason is shown only with the explanation
		}
		f.Blocker = "Ready is " + string(api.ConditionUnknown)
		if ready != nil {
			f.Blocker = "Ready is " + string(ready.Status) + " (" + ready.Reason + ")"
		}
		return f, true, nil
	}
	rep, err := r.App.Service.Status(ctx, *caller, api.KeyOf(c))
	switch {
	case errors.Is(err, app.ErrForbidden):
		f.Blocker = "not shown: " + caller.Username + " may list this Certificate but not get it"
		return f, !isReady, nil
	case err != nil:
		return f, false, fmt.Errorf("status: explain %s: %w", api.KeyOf(c), err)
	}
	if strings.HasPrefix(rep.Summary, "Ready:") {
		return f, false, nil
	}
	f.Blocker, f.Permanent, f.Issuing = rep.Summary, rep.Permanent, strings.HasPrefix(rep.Summary, "Issuing:")
	return f, true, nil
}

// listableNamespaces returns the namespaces where caller may list
// Certificates, or all when it may list them cluster-wide. A namespaced
// grant comes from a RoleBinding in its namespace, so the namespaces of the
// RoleBindings are every candidate: the answer depends on the bindings
// only, never on which Certificates exist. errNoNamespaces when there is
// none.
func (r *Runtime) listableNamespaces(ctx context.Context, caller app.Caller) ([]string, bool, error) {
	svc := r.App.Service
	err := svc.Authorize(ctx, caller, rbac.VerbList, api.Key{Kind: api.KindCertificate})
	if err == nil {
		return nil, true, nil
	}
	if !errors.Is(err, app.ErrForbidden) {
		return nil, false, fmt.Errorf("status: authorize: %w", err)
	}
	bindings, err := r.Repo.List(ctx, api.KindRoleBinding, "")
	if err != nil {
		return nil, false, fmt.Errorf("status: list role bindings: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, b := range bindings {
		ns := b.GetObjectMeta().Namespace
		if seen[ns] {
			continue
		}
		seen[ns] = true
		err := svc.Authorize(ctx, caller, rbac.VerbList, api.Key{Kind: api.KindCertificate, Namespace: ns})
		switch {
		case err == nil:
			out = append(out, ns)
		case !errors.Is(err, app.ErrForbidden):
			return nil, false, fmt.Errorf("status: authorize in %q: %w", ns, err)
		}
	}
	if len(out) == 0 {
		return nil, false, errNoNamespaces
	}
	sort.Strings(out)
	return out, false, nil
}

// issuerLabel renders an issuerRef as Kind/name.
func issuerLabel(ref api.IssuerReference) string {
	kind := ref.Kind
	if kind == "" {
		kind = api.KindIssuer
	}
	return kind + "/" + ref.Name
}

// relative renders d as "in 3d4h" (future) or "expired 2h ago" (past),
// to the minute.
func relative(d time.Duration, future, past string) string {
	if d >= 0 {
		return future + human(d)
	}
	return past + human(-d) + " ago"
}

func human(d time.Duration) string {
	d = d.Round(time.Minute)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, d/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	default:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
}
