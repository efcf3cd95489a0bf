package localmode

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/local"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/metrics"
	"github.com/certfn/certfn/core/rbac"
)

// Certificate gauges under cert-manager's metric names and labels, so that
// dashboards and alerts written for cert-manager's controller work on
// `certfn serve --metrics-listen` unchanged.
const (
	MetricExpiration = "certmanager_certificate_expiration_timestamp_seconds"
	MetricNotAfter   = "certmanager_certificate_not_after_timestamp_seconds"
	MetricNotBefore  = "certmanager_certificate_not_before_timestamp_seconds"
	MetricRenewal    = "certmanager_certificate_renewal_timestamp_seconds"
	MetricReady      = "certmanager_certificate_ready_status"
)

// processMetrics is the registry of the Go runtime's and the process's
// collectors (go_*, process_*: client_golang's own), one per Runtime and
// never the global registry.
type processMetrics struct {
	once sync.Once
	reg  *prometheus.Registry
}

func (p *processMetrics) registry() *prometheus.Registry {
	p.once.Do(func() {
		p.reg = prometheus.NewRegistry()
		p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	})
	return p.reg
}

// WriteMetrics writes, in the Prometheus text format, the certificate
// gauges read from the store now (expiration, notAfter, notBefore and
// renewal time in Unix seconds of every Certificate that has them, and
// its Ready condition as three series: condition True, False, Unknown,
// the current one 1), the serve's health gauges, certfn's counters, and
// the Go and process collectors. Every certfn and cert-manager name has
// the HELP text of core/metrics.Catalog.
func (r *Runtime) WriteMetrics(ctx context.Context, buf *bytes.Buffer) error {
	objs, err := r.Repo.List(ctx, api.KindCertificate, "")
	if err != nil {
		return fmt.Errorf("metrics: list certificates: %w", err)
	}
	var exp, notBefore, ren, ready []local.Gauge
	for _, o := range objs {
		c := o.(*api.Certificate)
		ref := c.Spec.IssuerRef
		kind := ref.Kind
		if kind == "" {
			kind = api.KindIssuer
		}
		group := ref.Group
		if group == "" {
			group = api.CertManagerGroup
		}
		labels := []string{"name", c.Name, "namespace", c.Namespace, "issuer_name", ref.Name, "issuer_kind", kind, "issuer_group", group}
		if c.Status.NotAfter != nil {
			exp = append(exp, local.Gauge{Labels: labels, Value: float64(c.Status.NotAfter.Unix())})
		}
		if c.Status.NotBefore != nil {
			notBefore = append(notBefore, local.Gauge{Labels: labels, Value: float64(c.Status.NotBefore.Unix())})
		}
		if c.Status.RenewalTime != nil {
			ren = append(ren, local.Gauge{Labels: labels, Value: float64(c.Status.RenewalTime.Unix())})
		}
		current := string(api.ConditionUnknown)
		if cond := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady); cond != nil {
			current = string(cond.Status)
		}
		for _, s := range []string{string(api.ConditionTrue), string(api.ConditionFalse), string(api.ConditionUnknown)} {
			v := 0.0
			if s == current {
				v = 1
			}
			ready = append(ready, local.Gauge{Labels: append(append([]string{}, labels...), "condition", s), Value: v})
		}
	}
	for _, g := range append([]gaugeSet{
		{MetricExpiration, exp},
		{MetricNotAfter, exp},
		{MetricNotBefore, notBefore},
		{MetricRenewal, ren},
		{MetricReady, ready},
	}, r.healthGauges()...) {
		if err := local.WriteGauges(buf, g.name, metrics.Help(g.name), g.samples); err != nil {
			return err
		}
	}
	if err := r.Metrics.WritePrometheus(buf); err != nil {
		return err
	}
	fams, err := r.process.registry().Gather()
	if err != nil {
		return fmt.Errorf("metrics: gather the Go and process collectors: %w", err)
	}
	enc := expfmt.NewEncoder(buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("metrics: encode %s: %w", f.GetName(), err)
		}
	}
	return nil
}

// MetricsHandler serves GET /metrics in the Prometheus text format,
// /healthz, /readyz and the status page's unauthenticated view on /status
// (the plain HTTP listener on loopback).
func (r *Runtime) MetricsHandler() http.Handler { return r.metricsHandler(anonymousStatus) }

// metricsHandler is MetricsHandler with the status page for the callers
// who returns (x509StatusCaller on the TLS listener).
func (r *Runtime) metricsHandler(who statusCaller) http.Handler {
	mux := http.NewServeMux()
	r.healthRoutes(mux)
	mux.Handle("/status", r.statusHandler(who))
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, req *http.Request) {
		var buf bytes.Buffer
		if err := r.WriteMetrics(req.Context(), &buf); err != nil {
			r.Log.Warn("metrics", "err", err)
			http.Error(w, "metrics unavailable: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	})
	return mux
}

// MetricsReaders is who may read /metrics on a non-loopback address: a
// caller authenticated by a client certificate (httpapi.X509Caller) who
// may list Certificates in every namespace (`certfn get certificates -A`),
// since the gauges name every team's Certificates and issuers.
// Bind it, e.g., with a ClusterRole {apiGroups: [cert-manager.io],
// resources: [certificates], verbs: [list]} and a ClusterRoleBinding to
// the scraper's certificate name (User) or organization (Group).
const MetricsReaders = "list certificates.cert-manager.io in all namespaces"

// authorizeMetrics serves next only to callers with a verified client
// certificate (401 otherwise) whom the bindings allow MetricsReaders (403
// otherwise).
func (r *Runtime) authorizeMetrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		caller, err := httpapi.X509Caller(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		err = r.App.Service.Authorize(req.Context(), caller, rbac.VerbList, api.Key{Kind: api.KindCertificate})
		switch {
		case errors.Is(err, app.ErrForbidden):
			http.Error(w, err.Error()+" (reading /metrics needs: "+MetricsReaders+")", http.StatusForbidden)
			return
		case err != nil:
			r.Log.Warn("metrics", "user", caller.Username, "err", err)
			http.Error(w, "metrics: authorization unavailable", http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// metricsAddr returns the address to bind for --metrics-listen addr and
// whether it is a loopback address. An address without a host (":9402")
// binds 127.0.0.1; a host name counts as loopback only when every
// address it resolves to is one, and then the first of them is bound
// (so what was checked is what is bound).
func metricsAddr(ctx context.Context, addr string) (string, bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("--metrics-listen %q: want host:port or :port (%v)", addr, err)
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), true, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return addr, ip.IsLoopback(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return "", false, fmt.Errorf("--metrics-listen %q: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return addr, false, nil
		}
	}
	if len(ips) == 0 {
		return addr, false, nil
	}
	return net.JoinHostPort(ips[0].String(), port), true, nil
}

// ListenMetrics serves MetricsHandler on addr and returns the bound
// address and a function that stops it. The metrics name every team's
// Certificates, so they are served in plain HTTP on a loopback address
// only (an address without a host binds 127.0.0.1). On any other address
// they are served over TLS with client certificates, with the API's
// files (tlsOpts: --api-tls-cert, --api-tls-key, --api-client-ca; its
// Listen is not used), to callers allowed MetricsReaders; without those
// files ListenMetrics refuses to start.
func (r *Runtime) ListenMetrics(addr string, tlsOpts APIOptions) (string, func(), error) {
	bind, loopback, err := metricsAddr(context.Background(), addr)
	if err != nil {
		return "", nil, err
	}
	var files *tlsFiles
	if !loopback {
		if tlsOpts.CertFile == "" || tlsOpts.KeyFile == "" || tlsOpts.ClientCAFile == "" {
			return "", nil, fmt.Errorf("--metrics-listen %s is not a loopback address: the metrics list every namespace's Certificates, "+
				"so they are served there only over TLS with client certificates: set --api-tls-cert, --api-tls-key and --api-client-ca "+
				"(readers must be allowed to %s), or listen on 127.0.0.1 (e.g. --metrics-listen :9402)", addr, MetricsReaders)
		}
		files = &tlsFiles{label: "metrics", certFile: tlsOpts.CertFile, keyFile: tlsOpts.KeyFile, caFile: tlsOpts.ClientCAFile, warn: r.Log.Warn}
		if _, err := files.config(time.Now()); err != nil {
			return "", nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
		}
	}
	l, err := listen("metrics-listen", bind)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: r.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	serve := func() error { return srv.Serve(l) }
	if files != nil {
		srv.Handler = r.authorizeMetrics(r.metricsHandler(x509StatusCaller))
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return files.config(time.Now())
		}}
		// Refused handshakes are logged at debug level, as the API's.
		srv.ErrorLog = slog.NewLogLogger(r.Log.Handler(), slog.LevelDebug)
		serve = func() error { return srv.ServeTLS(l, "", "") }
	}
	r.Log.Info("metrics", "listen", l.Addr().String(), "tls", files != nil)
	go func() {
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.Log.Warn("metrics", "err", err)
		}
	}()
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
