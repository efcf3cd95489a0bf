package validation

import (
	"crypto/x509"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
)

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

// IssuerSpec checks that exactly one issuer type is set and validates it.
// Vault and Venafi count as a type (they decode and are reported as
// ignored fields) but have no further rules.
func IssuerSpec(s *api.IssuerSpec, path string) ErrorList {
	var errs ErrorList
	var set []string
	if s.ACME != nil {
		set = append(set, "acme")
	}
	if s.CA != nil {
		set = append(set, "ca")
	}
	if s.SelfSigned != nil {
		set = append(set, "selfSigned")
	}
	if rawSet(s.Vault) {
		set = append(set, "vault")
	}
	if rawSet(s.Venafi) {
		set = append(set, "venafi")
	}
	switch len(set) {
	case 0:
		errs.add(path, "exactly one issuer type must be set: acme, ca or selfSigned")
	case 1:
	default:
		errs.add(path, "exactly one issuer type must be set, got "+strings.Join(set, ", "))
	}
	if ca := s.CA; ca != nil {
		errs = append(errs, secretName(path+".ca.secretName", ca.SecretName)...)
		urls(&errs, path+".ca.crlDistributionPoints", ca.CRLDistributionPoints)
		urls(&errs, path+".ca.ocspServers", ca.OCSPServers)
		urls(&errs, path+".ca.issuingCertificateURLs", ca.IssuingCertificateURLs)
	}
	if ss := s.SelfSigned; ss != nil {
		urls(&errs, path+".selfSigned.crlDistributionPoints", ss.CRLDistributionPoints)
	}
	if s.ACME != nil {
		acmeIssuer(&errs, path+".acme", s.ACME)
	}
	return errs
}

func rawSet(raw []byte) bool { return len(raw) > 0 && string(raw) != "null" }

func urls(errs *ErrorList, path string, us []string) {
	for i, u := range us {
		if msg := uriSAN(u); msg != "" {
			errs.addValue(idx(path, i), u, msg)
		}
	}
}

func acmeIssuer(errs *ErrorList, path string, a *api.ACMEIssuer) {
	if a.Server == "" {
		errs.add(path+".server", "required: the ACME directory URL, e.g. https://acme-v02.api.letsencrypt.org/directory")
	} else if msg := serverURL(a.Server, true); msg != "" {
		errs.addValue(path+".server", a.Server, msg)
	}
	if a.Email != "" && emailAddress(a.Email) != "" {
		errs.addValue(path+".email", a.Email, "invalid email address")
	}
	if utf8.RuneCountInString(a.PreferredChain) > 64 {
		errs.add(path+".preferredChain", "must be no more than 64 characters")
	}
	if a.PrivateKeySecretRef.Name == "" {
		errs.add(path+".privateKeySecretRef.name", "required: the secret that holds (or will hold) the ACME account key")
	} else {
		secretRef(errs, path+".privateKeySecretRef.name", a.PrivateKeySecretRef.Name)
	}
	if len(a.CABundle) > 0 {
		if a.SkipTLSVerify {
			errs.add(path+".caBundle", "must not be set together with skipTLSVerify")
		}
		if !x509.NewCertPool().AppendCertsFromPEM(a.CABundle) {
			errs.add(path+".caBundle", "contains no PEM CERTIFICATE that parses")
		}
	}
	if eab := a.ExternalAccountBinding; eab != nil {
		ep := path + ".externalAccountBinding"
		if eab.KeyID == "" {
			errs.add(ep+".keyID", "required")
		}
		if eab.Key.Name == "" {
			errs.add(ep+".keySecretRef.name", "required")
		} else {
			secretRef(errs, ep+".keySecretRef.name", eab.Key.Name)
		}
		switch eab.KeyAlgorithm {
		case "", "HS256", "HS384", "HS512":
		default:
			errs.addValue(ep+".keyAlgorithm", eab.KeyAlgorithm, "unknown; want HS256, HS384 or HS512")
		}
	}
	for i, s := range a.Solvers {
		solver(errs, idx(path+".solvers", i), s)
	}
}

func solver(errs *ErrorList, path string, s api.ACMEChallengeSolver) {
	switch {
	case s.HTTP01 == nil && s.DNS01 == nil:
		errs.add(path, "exactly one of http01 or dns01 must be set")
	case s.HTTP01 != nil && s.DNS01 != nil:
		errs.add(path, "only one of http01 or dns01 may be set")
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
	if h := s.HTTP01; h != nil && rawSet(h.Ingress) && rawSet(h.GatewayHTTPRoute) {
		errs.add(path+".http01", "only one of ingress or gatewayHTTPRoute may be set")
	}
	if d := s.DNS01; d != nil {
		dns01(errs, path+".dns01", d)
	}
}

func dns01(errs *ErrorList, path string, d *api.ACMEChallengeSolverDNS01) {
	var set []string
	for _, p := range []struct {
		name string
		ok   bool
	}{
		{"acmeDNS", d.AcmeDNS != nil}, {"akamai", d.Akamai != nil}, {"azureDNS", d.AzureDNS != nil},
		{"cloudDNS", d.CloudDNS != nil}, {"cloudflare", d.Cloudflare != nil}, {"digitalocean", d.DigitalOcean != nil},
		{"rfc2136", d.RFC2136 != nil}, {"route53", d.Route53 != nil}, {"webhook", rawSet(d.Webhook)},
	} {
		if p.ok {
			set = append(set, p.name)
		}
	}
	switch len(set) {
	case 0:
		errs.add(path, "exactly one DNS provider must be set (certfn acts on rfc2136, route53 or cloudDNS)")
	case 1:
	default:
		errs.add(path, "only one DNS provider may be set, got "+strings.Join(set, ", "))
	}
	switch d.CNAMEStrategy {
	case "", "None", "Follow":
	default:
		errs.addValue(path+".cnameStrategy", d.CNAMEStrategy, "unknown; want None or Follow")
	}
	if r := d.RFC2136; r != nil {
		rp := path + ".rfc2136"
		if r.Nameserver == "" {
			errs.add(rp+".nameserver", "required: the DNS server that accepts updates, as host or host:port")
		} else if msg := hostPort(r.Nameserver); msg != "" {
			errs.addValue(rp+".nameserver", r.Nameserver, msg)
		}
		if r.TSIGKeyName != "" && r.TSIGSecret.Name == "" {
			errs.add(rp+".tsigSecretSecretRef.name", "required when tsigKeyName is set")
		}
		secretRef(errs, rp+".tsigSecretSecretRef.name", r.TSIGSecret.Name)
		switch strings.ToUpper(r.TSIGAlgorithm) {
		case "", "HMACMD5", "HMACSHA1", "HMACSHA256", "HMACSHA512":
		default:
			errs.addValue(rp+".tsigAlgorithm", r.TSIGAlgorithm, "unknown; want HMACMD5, HMACSHA1, HMACSHA256 or HMACSHA512")
		}
		switch r.Protocol {
		case "", "TCP", "UDP":
		default:
			errs.addValue(rp+".protocol", r.Protocol, "unknown; want TCP or UDP")
		}
	}
	if r := d.Route53; r != nil {
		if r.AccessKeyID != "" && r.SecretAccessKeyID != nil && r.SecretAccessKeyID.Name != "" {
			errs.add(path+".route53", "only one of accessKeyID or accessKeyIDSecretRef may be set")
		}
		if r.SecretAccessKeyID != nil {
			secretRef(errs, path+".route53.accessKeyIDSecretRef.name", r.SecretAccessKeyID.Name)
		}
		secretRef(errs, path+".route53.secretAccessKeySecretRef.name", r.SecretAccessKey.Name)
	}
	if c := d.CloudDNS; c != nil {
		if c.Project == "" {
			errs.add(path+".cloudDNS.project", "required: the Google Cloud project of the zone")
		}
		if c.ServiceAccount != nil {
			secretRef(errs, path+".cloudDNS.serviceAccountSecretRef.name", c.ServiceAccount.Name)
		}
	}
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
