package localmode

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/certfn/certfn/core/api"
)

// progress logs what happens to Certificates while serve runs — each
// issuance, renewal and failed attempt at the default (info/warn) level,
// so that `serve --until-idle` from cron leaves a record — and counts them
// for the summary line. It compares each Certificate after a reconcile
// with what it saw before (the first sight is the baseline: nothing is
// logged for the state a Certificate was in when serve started).
type progress struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[api.Key]certSeen
	// counts of this serve
	issued, renewed, failed int
}

// certSeen is what progress remembers of one Certificate.
type certSeen struct {
	revision, failures int
}

func newProgress(log *slog.Logger) *progress {
	return &progress{log: log, seen: map[api.Key]certSeen{}}
}

func revisionOf(c *api.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}

func failuresOf(c *api.Certificate) int {
	if c.Status.FailedIssuanceAttempts == nil {
		return 0
	}
	return *c.Status.FailedIssuanceAttempts
}

// baseline records c without logging (serve's start).
func (p *progress) baseline(c *api.Certificate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[api.KeyOf(c)] = certSeen{revision: revisionOf(c), failures: failuresOf(c)}
}

// observe logs what changed in c since it was last seen.
func (p *progress) observe(c *api.Certificate) {
	key := api.KeyOf(c)
	now := certSeen{revision: revisionOf(c), failures: failuresOf(c)}
	p.mu.Lock()
	was, ok := p.seen[key]
	p.seen[key] = now
	if !ok {
		was = certSeen{} // created while serving
	}
	issued := now.revision > was.revision
	failed := now.failures > was.failures
	switch {
	case issued && now.revision == 1:
		p.issued++
	case issued:
		p.renewed++
	}
	if failed {
		p.failed++
	}
	p.mu.Unlock()
	attrs := []any{"namespace", c.Namespace, "certificate", c.Name, "secret", c.Spec.SecretName}
	if issued {
		what := "certificate issued"
		if now.revision > 1 {
			what = "certificate renewed"
		}
		p.log.Info(what, append(attrs, "revision", now.revision, "notAfter", timeString(c.Status.NotAfter),
			"renewal", timeString(c.Status.RenewalTime))...)
	}
	if failed {
		p.log.Warn("certificate issuance failed", append(attrs, "attempts", now.failures,
			"reason", reasonOf(c.Status.Conditions, api.CertificateConditionIssuing, api.CertificateConditionReady))...)
	}
}

// summary returns the line serve --until-idle ends with and the
// Certificates that are not Ready (sorted "namespace/name: blocker"),
// each with what blocks it as `certfn status` and `certfn wait` say it
// (blocker; nil: the Certificate's own conditions).
func (p *progress) summary(certs []*api.Certificate, blocker func(*api.Certificate) string) (string, []string) {
	var notReady []string
	for _, c := range certs {
		if !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) {
			why := ""
			if blocker != nil {
				why = blocker(c)
			}
			if why == "" {
				why = reasonOf(c.Status.Conditions, api.CertificateConditionReady, api.CertificateConditionIssuing)
			}
			notReady = append(notReady, fmt.Sprintf("%s/%s: %s", c.Namespace, c.Name, why))
		}
	}
	sort.Strings(notReady)
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d certificates: %d ready, %d not ready; this run: %d issued, %d renewed, %d failed attempts",
		len(certs), len(certs)-len(notReady), len(notReady), p.issued, p.renewed, p.failed), notReady
}

// reasonOf returns the message (else the reason) of the first condition
// of types that is not True; "no condition yet" when none has one.
func reasonOf(conds []api.Condition, types ...string) string {
	for _, t := range types {
		c := api.FindCondition(conds, t)
		if c == nil || c.Status == api.ConditionTrue {
			continue
		}
		if c.Message != "" {
			return c.Message
		}
		if c.Reason != "" {
			return c.Reason
		}
	}
	return "no condition yet"
}

func timeString(t *api.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// NotReadyError is serve --until-idle's error when Certificates are not
// Ready at its end: the run could not resolve them.
type NotReadyError struct {
	Certificates []string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("%d certificates not ready after serve --until-idle: %s", len(e.Certificates), strings.Join(e.Certificates, "; "))
}

// listCertificates returns every stored Certificate.
func (r *Runtime) listCertificates(ctx context.Context) ([]*api.Certificate, error) {
	objs, err := r.Repo.List(ctx, api.KindCertificate, "")
	if err != nil {
		return nil, fmt.Errorf("list certificates: %w", err)
	}
	out := make([]*api.Certificate, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*api.Certificate))
	}
	return out, nil
}
