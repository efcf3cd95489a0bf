package validation

import (
	"crypto/x509"
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
)

// The issuer rules follow cert-manager's webhook
// (internal/apis/certmanager/validation/issuer.go): the same checks, in
// the same order, at the same field paths — including the few paths where
// cert-manager's differ from the JSON field names (ca.ocspServer[i],
// http01.gateway, akamai.accessToken, ...), so that a message matches
// what cert-manager reports. certfn adds: an ACME server that is an
// http(s) URL, secret names that are Kubernetes secret names, known
// keyAlgorithm and protocol values, solver selector names, and it accepts
// "http01: {}" (certfn answers HTTP-01 itself). See docs/guide/migrating.md.

// Issuer validates a namespaced Issuer.
func Issuer(i *api.Issuer) ErrorList {
	errs := Metadata(&i.ObjectMeta, true)
	return append(errs, IssuerSpec(&i.Spec, "spec")...)
}

// ClusterIssuer validates a cluster-scoped ClusterIssuer.
func ClusterIssuer(i *api.ClusterIssuer) ErrorList {
	errs := Metadata(&i.ObjectMeta, false)
	return append(errs, IssuerSpec(&i.Spec, "spec")...)
}

// IssuerSpec checks that exactly one issuer type is set and validates it,
// as cert-manager's ValidateIssuerConfig: the first type set (in the
// order acme, ca, selfSigned, vault, venafi) is validated, every further
// one is an error at its own path, and none at all is an error at path.
// Vault and Venafi count as a type (they decode and are reported as
// ignored fields) but have no further rules.
func IssuerSpec(s *api.IssuerSpec, path string) ErrorList {
	var errs ErrorList
	n := 0
	one := func(set bool, name string, validate func(p string)) {
		if !set {
			return
		}
		p := path + "." + name
		if n > 0 {
			errs.add(p, "may not specify more than one issuer type")
			return
		}
		n++
		if validate != nil {
			validate(p)
		}
	}
	one(s.ACME != nil, "acme", func(p string) { acmeIssuer(&errs, p, s.ACME) })
	one(s.CA != nil, "ca", func(p string) { caIssuer(&errs, p, s.CA) })
	one(s.SelfSigned != nil, "selfSigned", func(p string) {
		urls(&errs, p+".crlDistributionPoints", s.SelfSigned.CRLDistributionPoints)
	})
	one(rawSet(s.Vault), "vault", nil)
	one(rawSet(s.Venafi), "venafi", nil)
	if n == 0 {
		errs.add(path, "at least one issuer must be configured (acme, ca or selfSigned)")
	}
	return errs
}

// caIssuer checks a CA issuer: secretName required (a Kubernetes secret
// name), URLs not empty (and absolute, certfn).
func caIssuer(errs *ErrorList, path string, ca *api.CAIssuer) {
	*errs = append(*errs, secretName(path+".secretName", ca.SecretName)...)
	urls(errs, path+".crlDistributionPoints", ca.CRLDistributionPoints)
	// cert-manager names this path "ocspServer" (singular).
	for i, u := range ca.OCSPServers {
		if u == "" {
			errs.add(idx(path+".ocspServer", i), "must be a valid URL, e.g., http://ocsp.int-x3.letsencrypt.org")
		} else if msg := uriSAN(u); msg != "" {
			errs.addValue(idx(path+".ocspServer", i), u, "must be a valid URL: "+msg)
		}
	}
	for i, u := range ca.IssuingCertificateURLs {
		if u == "" {
			errs.add(idx(path+".issuingCertificateURLs", i), "must be a valid URL")
		} else if msg := uriSAN(u); msg != "" {
			errs.addValue(idx(path+".issuingCertificateURLs", i), u, "must be a valid URL: "+msg)
		}
	}
}

func rawSet(raw []byte) bool { return len(raw) > 0 && string(raw) != "null" }

func urls(errs *ErrorList, path string, us []string) {
	for i, u := range us {
		if msg := uriSAN(u); msg != "" {
			errs.addValue(idx(path, i), u, msg)
		}
	}
}

// acmeIssuer checks an ACME issuer in cert-manager's order: caBundle and
// skipTLSVerify, the account key secret, the server, the external account
// binding, then each solver.
func acmeIssuer(errs *ErrorList, path string, a *api.ACMEIssuer) {
	if len(a.CABundle) > 0 && a.SkipTLSVerify {
		errs.add(path+".caBundle", "caBundle and skipTLSVerify are mutually exclusive and cannot both be set")
		errs.add(path+".skipTLSVerify", "caBundle and skipTLSVerify are mutually exclusive and cannot both be set")
	}
	if len(a.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(a.CABundle) {
		errs.add(path+".caBundle", "cert bundle didn't contain any valid certificates (no PEM CERTIFICATE that parses)")
	}
	if a.PrivateKeySecretRef.Name == "" {
		errs.add(path+".privateKeySecretRef.name", "private key secret name is a required field: the secret that holds (or will hold) the ACME account key")
	} else {
		secretRef(errs, path+".privateKeySecretRef.name", a.PrivateKeySecretRef.Name)
	}
	if a.Server == "" {
		errs.add(path+".server", "acme server URL is a required field, e.g. https://acme-v02.api.letsencrypt.org/directory")
	} else if msg := serverURL(a.Server, true); msg != "" {
		errs.addValue(path+".server", a.Server, msg)
	}
	if utf8.RuneCountInString(a.PreferredChain) > 64 {
		errs.add(path+".preferredChain", "must be no more than 64 characters")
	}
	switch a.RenewalInformationSource {
	case "", api.ACMERenewalInformationSourceARI, api.ACMERenewalInformationSourceNone:
	default:
		errs.addValue(path+".renewalInformationSource", a.RenewalInformationSource, "unsupported value; want ARI or None")
	}
	if eab := a.ExternalAccountBinding; eab != nil {
		ep := path + ".externalAccountBinding"
		if eab.KeyID == "" {
			errs.add(ep+".keyID", "the keyID field is required when using externalAccountBinding")
		}
		secretKeySelector(errs, ep+".keySecretRef", eab.Key)
		switch eab.KeyAlgorithm {
		case "", "HS256", "HS384", "HS512":
		default:
			errs.addValue(ep+".keyAlgorithm", eab.KeyAlgorithm, "unknown; want HS256, HS384 or HS512 (deprecated: the value is ignored)")
		}
	}
	for i, s := range a.Solvers {
		solver(errs, idx(path+".solvers", i), s)
	}
}

// secretKeySelector checks a reference to one key of a secret: name and
// key required, the name a Kubernetes secret name (cert-manager's
// ValidateSecretKeySelector, plus certfn's name rule).
func secretKeySelector(errs *ErrorList, path string, s api.SecretKeySelector) {
	if s.Name == "" {
		errs.add(path+".name", "secret name is required")
	} else {
		secretRef(errs, path+".name", s.Name)
	}
	if s.Key == "" {
		errs.add(path+".key", "secret key is required")
	}
}

// solver checks one ACME solver: exactly one of http01 and dns01 (the
// second is an error at the solver's path), each validated, and a
// waitInsteadOfSelfCheck that is not negative.
func solver(errs *ErrorList, path string, s api.ACMEChallengeSolver) {
	n := 0
	if s.HTTP01 != nil {
		n++
		http01(errs, path+".http01", s.HTTP01)
	}
	if s.DNS01 != nil {
		if n > 0 {
			errs.add(path, "may not specify more than one solver type in a single solver (http01 or dns01)")
		} else {
			n++
			dns01(errs, path+".dns01", s.DNS01)
		}
	}
	if n == 0 {
		errs.add(path, "no solver type configured: set http01 or dns01")
	}
	if w := s.WaitInsteadOfSelfCheck; w != nil && w.Duration < 0 {
		errs.addValue(path+".waitInsteadOfSelfCheck", w.Duration.String(), "waitInsteadOfSelfCheck must not be negative")
	}
	if sel := s.Selector; sel != nil {
		for i, n := range sel.DNSNames {
			if msg := dnsName(n); msg != "" {
				errs.addValue(idx(path+".selector.dnsNames", i), n, "invalid DNS name: "+msg)
			}
		}
		for i, n := range sel.DNSZones {
			if msg := dnsName(n); msg != "" {
				errs.addValue(idx(path+".selector.dnsZones", i), n, "invalid DNS zone: "+msg)
			}
		}
	}
}

// http01 checks an HTTP-01 solver: at most one of ingress and
// gatewayHTTPRoute, each as cert-manager's webhook checks it. Neither is
// certfn's own form (it answers the challenges itself); cert-manager
// requires one.
func http01(errs *ErrorList, path string, h *api.ACMEChallengeSolverHTTP01) {
	if h.Ingress != nil && h.GatewayHTTPRoute != nil {
		errs.add(path, "only 1 HTTP01 solver type may be configured: ingress or gatewayHTTPRoute")
	}
	if in := h.Ingress; in != nil {
		ip := path + ".ingress"
		n := 0
		for _, set := range []bool{in.Class != nil, in.IngressClassName != nil, in.Name != ""} {
			if set {
				n++
			}
		}
		if n > 1 {
			errs.add(ip, "only one of 'ingressClassName', 'name' or 'class' should be specified")
		}
		if c := in.IngressClassName; c != nil {
			if msg := dns1123Subdomain(*c); msg != "" {
				errs.addValue(ip+".ingressClassName", *c, "must be a valid IngressClass name: "+msg)
			}
		}
		serviceType(errs, ip+".serviceType", in.ServiceType)
	}
	if g := h.GatewayHTTPRoute; g != nil {
		// cert-manager names this path "gateway".
		gp := path + ".gateway"
		serviceType(errs, gp+".serviceType", g.ServiceType)
		for i, r := range g.ParentRefs {
			rp := idx(gp+".parentRefs", i)
			if r.Kind != nil && r.Name == "" {
				errs.add(rp+".name", "name is required when kind is specified")
				break
			}
			if r.Name != "" && r.Kind == nil {
				errs.add(rp+".kind", "kind is required when name is specified")
				break
			}
		}
	}
}

func serviceType(errs *ErrorList, path, t string) {
	switch t {
	case "", api.ServiceTypeClusterIP, api.ServiceTypeNodePort:
	default:
		errs.addValue(path, t, `must be empty, "ClusterIP" or "NodePort"`)
	}
}

// supportedTSIGAlgorithms are the rfc2136 TSIG algorithms (any case).
var supportedTSIGAlgorithms = []string{"HMACMD5", "HMACSHA1", "HMACSHA256", "HMACSHA512"}

// dns01 checks a DNS-01 solver as cert-manager's
// ValidateACMEChallengeSolverDNS01: cnameStrategy, nameservers, then the
// providers in cert-manager's order (akamai, azureDNS, cloudDNS,
// cloudflare, route53, acmeDNS, digitalocean, rfc2136, webhook). A
// provider after the first is an error at its own path; akamai and
// acmeDNS are always validated, as in cert-manager.
func dns01(errs *ErrorList, path string, d *api.ACMEChallengeSolverDNS01) {
	switch d.CNAMEStrategy {
	case "", "None", "Follow":
	default:
		errs.addValue(path+".cnameStrategy", d.CNAMEStrategy, `must be one of "None" or "Follow"`)
	}
	for i, ns := range d.Nameservers {
		if msg := dns01Nameserver(ns); msg != "" {
			errs.addValue(idx(path+".nameservers", i), ns, msg)
		}
	}
	n := 0
	// another reports (and counts) a provider after the first.
	another := func(set bool, name string) bool {
		if !set {
			return false
		}
		if n > 0 {
			errs.add(path+"."+name, "may not specify more than one provider type")
			return false
		}
		n++
		return true
	}
	if p := d.Akamai; p != nil {
		n++
		ap := path + ".akamai"
		// cert-manager names these paths without the "SecretRef" suffix.
		secretKeySelector(errs, ap+".accessToken", p.AccessToken)
		secretKeySelector(errs, ap+".clientSecret", p.ClientSecret)
		secretKeySelector(errs, ap+".clientToken", p.ClientToken)
		if p.ServiceConsumerDomain == "" {
			errs.add(ap+".serviceConsumerDomain", "required")
		}
	}
	if another(d.AzureDNS != nil, "azureDNS") {
		azureDNS(errs, path+".azureDNS", d.AzureDNS)
	}
	if another(d.CloudDNS != nil, "cloudDNS") {
		p := d.CloudDNS
		if p.ServiceAccount != nil {
			secretKeySelector(errs, path+".cloudDNS.serviceAccountSecretRef", *p.ServiceAccount)
		}
		if p.Project == "" {
			errs.add(path+".cloudDNS.project", "required: the Google Cloud project of the zone")
		}
	}
	if another(d.Cloudflare != nil, "cloudflare") {
		p, cp := d.Cloudflare, path+".cloudflare"
		if p.APIKey != nil {
			secretKeySelector(errs, cp+".apiKeySecretRef", *p.APIKey)
		}
		if p.APIToken != nil {
			secretKeySelector(errs, cp+".apiTokenSecretRef", *p.APIToken)
		}
		if p.APIKey != nil && p.APIToken != nil {
			errs.add(cp, "apiKeySecretRef and apiTokenSecretRef cannot both be specified")
		}
		if p.APIKey == nil && p.APIToken == nil {
			errs.add(cp, "apiKeySecretRef or apiTokenSecretRef is required")
		}
		if p.Email == "" && p.APIKey != nil {
			errs.add(cp+".email", "required with apiKeySecretRef")
		}
	}
	if another(d.Route53 != nil, "route53") {
		p, rp := d.Route53, path+".route53"
		// Neither key is required: ambient credentials may be used.
		if p.AccessKeyID != "" && p.SecretAccessKeyID != nil {
			errs.add(rp, "accessKeyID and accessKeyIDSecretRef cannot both be specified")
		}
		if p.SecretAccessKeyID != nil {
			secretKeySelector(errs, rp+".accessKeyIDSecretRef", *p.SecretAccessKeyID)
		}
		secretRef(errs, rp+".secretAccessKeySecretRef.name", p.SecretAccessKey.Name)
	}
	if p := d.AcmeDNS; p != nil {
		n++
		secretKeySelector(errs, path+".acmeDNS.accountSecretRef", p.AccountSecret)
		if p.Host == "" {
			errs.add(path+".acmeDNS.host", "required: the acme-dns server's URL")
		}
	}
	if another(d.DigitalOcean != nil, "digitalocean") {
		secretKeySelector(errs, path+".digitalocean.tokenSecretRef", d.DigitalOcean.Token)
	}
	if another(d.RFC2136 != nil, "rfc2136") {
		rfc2136(errs, path+".rfc2136", d.RFC2136)
	}
	if another(rawSet(d.Webhook), "webhook") {
		var w struct {
			SolverName string `json:"solverName"`
		}
		if err := json.Unmarshal(d.Webhook, &w); err != nil || w.SolverName == "" {
			errs.add(path+".webhook.solverName", "solver name must be specified")
		}
	}
	if n == 0 {
		errs.add(path, "no DNS01 provider configured (certfn acts on rfc2136, route53, cloudDNS, cloudflare, digitalocean, acmeDNS and azureDNS, and webhook solvers it knows)")
	}
}

// azureDNS checks an azureDNS provider: a service principal (clientID,
// clientSecretSecretRef and tenantID together) or a managed identity, the
// subscription and resource group, and the environment.
func azureDNS(errs *ErrorList, path string, p *api.ACMEIssuerDNS01ProviderAzureDNS) {
	if p.ClientID != "" || p.TenantID != "" || p.ClientSecret != nil {
		if p.ClientID == "" {
			errs.add(path+".clientID", "required with clientSecretSecretRef or tenantID")
		}
		if p.ClientSecret == nil {
			errs.add(path+".clientSecretSecretRef", "required with clientID or tenantID")
		} else {
			secretKeySelector(errs, path+".clientSecretSecretRef", *p.ClientSecret)
		}
		if p.TenantID == "" {
			errs.add(path+".tenantID", "required with clientID or clientSecretSecretRef")
		}
		if p.ManagedIdentity != nil {
			errs.add(path+".managedIdentity", "managed identity cannot be used at the same time as clientID, clientSecretSecretRef or tenantID")
		}
	} else if mi := p.ManagedIdentity; mi != nil {
		if mi.ClientID != "" && mi.ResourceID != "" {
			errs.add(path+".managedIdentity", "managedIdentityClientID and managedIdentityResourceID cannot both be specified")
		}
		if mi.TenantID != "" && mi.ResourceID != "" {
			errs.add(path+".managedIdentity", "managedIdentityTenantID and managedIdentityResourceID cannot both be specified")
		}
		if mi.TenantID != "" && mi.ClientID == "" {
			errs.add(path+".managedIdentity", "managedIdentityClientID is required when using managedIdentityTenantID")
		}
	}
	if p.SubscriptionID == "" {
		errs.add(path+".subscriptionID", "required")
	}
	if p.ResourceGroupName == "" {
		errs.add(path+".resourceGroupName", "required")
	}
	switch p.Environment {
	case "", api.AzurePublicCloud, api.AzureChinaCloud, api.AzureGermanCloud, api.AzureUSGovernmentCloud:
	default:
		errs.addValue(path+".environment", p.Environment, "must be either empty or one of AzurePublicCloud, AzureChinaCloud, AzureGermanCloud, or AzureUSGovernmentCloud")
	}
	switch p.ZoneType {
	case "", api.AzurePrivateZone, api.AzurePublicZone:
	default:
		errs.addValue(path+".zoneType", p.ZoneType, "must be either empty or one of AzurePublicZone or AzurePrivateZone")
	}
}

// rfc2136 checks an rfc2136 provider: the nameserver (host, host:port,
// [IPv6] or [IPv6]:port), the TSIG algorithm, and the TSIG key name and
// secret, which go together.
func rfc2136(errs *ErrorList, path string, r *api.ACMEIssuerDNS01ProviderRFC2136) {
	if r.Nameserver == "" {
		errs.add(path+".nameserver", "required: the DNS server that accepts updates, as host or host:port")
	} else if msg := rfc2136Nameserver(r.Nameserver); msg != "" {
		errs.addValue(path+".nameserver", r.Nameserver, msg)
	}
	if r.TSIGAlgorithm != "" && !containsString(supportedTSIGAlgorithms, strings.ToUpper(r.TSIGAlgorithm)) {
		errs.addValue(path+".tsigAlgorithm", r.TSIGAlgorithm, "unsupported value; want one of "+strings.Join(supportedTSIGAlgorithms, ", "))
	}
	var secret ErrorList
	secretKeySelector(&secret, path+".tsigSecretSecretRef", r.TSIGSecret)
	if r.TSIGKeyName != "" {
		*errs = append(*errs, secret...)
	} else if r.TSIGSecret.Name != "" {
		secretRef(errs, path+".tsigSecretSecretRef.name", r.TSIGSecret.Name)
	}
	if len(secret) == 0 && r.TSIGKeyName == "" {
		errs.add(path+".tsigKeyName", "required with tsigSecretSecretRef")
	}
	switch r.Protocol {
	case "", "TCP", "UDP":
	default:
		errs.addValue(path+".protocol", r.Protocol, "unknown; want TCP or UDP")
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rfc2136Nameserver returns why s is not an rfc2136 nameserver, or "":
// cert-manager's ValidNameserver (host, host:, host:port, [IPv6],
// [IPv6]:port; an IPv6 address needs brackets) plus a port in 1-65535.
func rfc2136Nameserver(s string) string {
	const form = "nameserver must be set in the form host:port where host is an IPv4 address, an enclosed IPv6 address or a hostname and port is an optional port number."
	s = strings.TrimSpace(s)
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if !strings.Contains(err.Error(), "missing port") {
			return form
		}
		host, port = strings.Trim(s, "[]"), ""
		if strings.Contains(host, ":") && !(strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")) {
			return form // an IPv6 address without brackets
		}
	}
	if host == "" {
		return form
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "invalid port " + strconv.Quote(port) + "; " + form
		}
	}
	return ""
}

// dns01Nameserver returns why s is not a DNS-01 check nameserver, or "":
// host:port, or an https:// DNS-over-HTTPS URL with a host.
func dns01Nameserver(s string) string {
	if strings.HasPrefix(s, "https://") {
		if u, err := url.ParseRequestURI(s); err != nil || u.Host == "" {
			return "must be in the format https://<DoH RFC 8484 server address>"
		}
		return ""
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return "must be in the format <ip address>:<port>"
	}
	return ""
}

// secretRef checks a named (optional here) secret reference: when set, it
// must be a DNS-1123 subdomain, as Kubernetes secret names are. That
// refuses "..", "/" and the like before a name reaches a store key.
func secretRef(errs *ErrorList, path, name string) {
	if name == "" {
		return
	}
	if msg := dns1123Subdomain(name); msg != "" {
		errs.addValue(path, name, "invalid secret name: "+msg)
	}
}
