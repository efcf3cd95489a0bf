package api

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// IgnoredFields returns the field paths present in obj that cert-manager v1
// defines and certfn accepts but does not act on, sorted. Controllers copy
// them into status (CertificateStatus.IgnoredFields) and the CLI shows them,
// so that a manifest written for cert-manager never fails silently:
//
//   - metadata.finalizers, metadata.managedFields (Kubernetes bookkeeping);
//   - spec.vault, spec.venafi (issuer types certfn does not implement);
//   - spec.acme.externalAccountBinding.keyAlgorithm (deprecated in
//     cert-manager; the EAB MAC is always HS256);
//   - spec.acme.solvers[i].http01.ingress and .gatewayHTTPRoute (certfn's
//     http01 function serves the challenge itself);
//   - spec.acme.solvers[i].dns01.akamai (the one cert-manager provider
//     certfn has no client for);
//   - spec.acme.solvers[i].dns01.route53.auth (Kubernetes service-account
//     token federation; certfn uses the function's own cloud identity);
//   - spec.acme.solvers[i].dns01.nameservers[j] that are DNS-over-HTTPS
//     URLs (certfn's propagation check speaks plain DNS; the host:port
//     entries are used);
//   - spec.acme.renewalInformationSource: None (certfn still asks the
//     ACME server for renewal windows).
func IgnoredFields(obj Object) []string {
	var out []string
	if m := obj.GetObjectMeta(); m != nil {
		if len(m.Finalizers) > 0 {
			out = append(out, "metadata.finalizers")
		}
		if len(m.ManagedFields) > 0 {
			out = append(out, "metadata.managedFields")
		}
	}
	if gi, ok := obj.(GenericIssuer); ok {
		out = append(out, ignoredIssuerFields(gi.GetSpec())...)
	}
	sort.Strings(out)
	return out
}

func ignoredIssuerFields(spec *IssuerSpec) []string {
	var out []string
	if present(spec.Vault) {
		out = append(out, "spec.vault")
	}
	if present(spec.Venafi) {
		out = append(out, "spec.venafi")
	}
	acme := spec.ACME
	if acme == nil {
		return out
	}
	if acme.RenewalInformationSource == ACMERenewalInformationSourceNone {
		out = append(out, "spec.acme.renewalInformationSource")
	}
	if eab := acme.ExternalAccountBinding; eab != nil && eab.KeyAlgorithm != "" {
		out = append(out, "spec.acme.externalAccountBinding.keyAlgorithm")
	}
	for i, s := range acme.Solvers {
		p := fmt.Sprintf("spec.acme.solvers[%d]", i)
		if h := s.HTTP01; h != nil {
			if h.Ingress != nil {
				out = append(out, p+".http01.ingress")
			}
			if h.GatewayHTTPRoute != nil {
				out = append(out, p+".http01.gatewayHTTPRoute")
			}
		}
		if d := s.DNS01; d != nil {
			for _, u := range []struct {
				name string
				set  bool
			}{
				// akamai is accepted and validated, and keeps the issuer not
				// Ready (core/acme/dns01.Unavailable); every other provider
				// cert-manager defines is acted on.
				{"akamai", d.Akamai != nil},
				// webhook is not listed: its solverName selects a DNS-01 provider
				// compiled into certfn (core/acme/dns01.WebhookKey).
			} {
				if u.set {
					out = append(out, p+".dns01."+u.name)
				}
			}
			if d.Route53 != nil && present(d.Route53.Auth) {
				out = append(out, p+".dns01.route53.auth")
			}
			for j, ns := range d.Nameservers {
				if strings.HasPrefix(ns, "https://") {
					out = append(out, fmt.Sprintf("%s.dns01.nameservers[%d]", p, j))
				}
			}
		}
	}
	return out
}

// present reports whether a raw field was given a non-null value.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
