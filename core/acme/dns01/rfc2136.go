package dns01

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/certfn/certfn/core/errs"
)

// RFC2136Config is a validated spec.solver.dns01.rfc2136 together with its
// TSIG secret. Its String method never shows the secret.
type RFC2136Config struct {
	// Nameserver is "host:port" (port 53 when the spec gave none).
	Nameserver string
	// Net is "udp" (cert-manager's default) or "tcp".
	Net string
	// KeyName is the TSIG key name, canonical (lower case, trailing dot);
	// empty for unsigned updates.
	KeyName string
	// Algorithm is the TSIG algorithm as a DNS name (dns.HmacSHA256, ...);
	// empty for unsigned updates.
	Algorithm string
	// Secret is the base64 TSIG secret; empty for unsigned updates.
	Secret string
}

// String describes c without its secret.
func (c RFC2136Config) String() string {
	if c.KeyName == "" {
		return fmt.Sprintf("rfc2136 %s/%s (no TSIG)", c.Nameserver, c.Net)
	}
	return fmt.Sprintf("rfc2136 %s/%s key %s (%s)", c.Nameserver, c.Net, c.KeyName, c.Algorithm)
}

// GoString is String, so that %#v cannot print the secret either.
func (c RFC2136Config) GoString() string { return c.String() }

// tsigAlgorithms maps cert-manager's tsigAlgorithm values (case-insensitive)
// and BIND's spellings to TSIG algorithm names. HMACSHA384 is a certfn
// extension; cert-manager's default is HMACMD5.
var tsigAlgorithms = map[string]string{
	"HMACMD5":    dns.HmacMD5,
	"HMACSHA1":   dns.HmacSHA1,
	"HMACSHA256": dns.HmacSHA256,
	"HMACSHA384": dns.HmacSHA384,
	"HMACSHA512": dns.HmacSHA512,
	// BIND's names (key "..." { algorithm hmac-sha256; };)
	"HMAC-MD5":                 dns.HmacMD5,
	"HMAC-MD5.SIG-ALG.REG.INT": dns.HmacMD5,
	"HMAC-SHA1":                dns.HmacSHA1,
	"HMAC-SHA256":              dns.HmacSHA256,
	"HMAC-SHA384":              dns.HmacSHA384,
	"HMAC-SHA512":              dns.HmacSHA512,
}

// TSIGAlgorithm returns the TSIG algorithm name for a tsigAlgorithm value
// ("" is cert-manager's default, HMACMD5) and whether it is supported.
func TSIGAlgorithm(v string) (string, bool) {
	if v == "" {
		return dns.HmacMD5, true
	}
	a, ok := tsigAlgorithms[strings.ToUpper(strings.TrimSuffix(strings.TrimSpace(v), "."))]
	return a, ok
}

// ParseRFC2136 validates req.DNS01.RFC2136 and reads its TSIG secret:
//   - nameserver is required, "host", "host:port" or "[ipv6]:port"
//     (port 53 by default);
//   - protocol is "", "UDP" or "TCP" (case-insensitive; default UDP);
//   - tsigKeyName and tsigSecretSecretRef go together (neither: unsigned
//     updates); tsigKeyName must be a domain name; tsigAlgorithm is one of
//     HMACMD5 (default), HMACSHA1, HMACSHA256, HMACSHA384, HMACSHA512
//     (case-insensitive; BIND's hmac-sha256 spellings are accepted);
//   - the secret value must be base64 (what BIND's key statement holds).
//
// Every violation is a permanent error naming the field; a failing secret
// store is transient (see ProviderRequest.SecretValue).
func ParseRFC2136(ctx context.Context, req ProviderRequest) (RFC2136Config, error) {
	p := req.Path + ".rfc2136"
	if req.DNS01 == nil || req.DNS01.RFC2136 == nil {
		return RFC2136Config{}, errs.Permanentf("%s: required", p)
	}
	spec := req.DNS01.RFC2136
	var c RFC2136Config
	ns, err := normalizeNameserver(spec.Nameserver)
	if err != nil {
		return RFC2136Config{}, errs.Permanentf("%s.nameserver: %v", p, err)
	}
	c.Nameserver = ns
	switch strings.ToUpper(strings.TrimSpace(spec.Protocol)) {
	case "", "UDP":
		c.Net = "udp"
	case "TCP":
		c.Net = "tcp"
	default:
		return RFC2136Config{}, errs.Permanentf("%s.protocol: %q is not supported (want TCP or UDP)", p, spec.Protocol)
	}
	keyName := strings.TrimSpace(spec.TSIGKeyName)
	hasRef := spec.TSIGSecret.Name != ""
	switch {
	case keyName == "" && !hasRef:
		return c, nil
	case keyName == "":
		return RFC2136Config{}, errs.Permanentf("%s.tsigKeyName: required when tsigSecretSecretRef is set", p)
	case !hasRef:
		return RFC2136Config{}, errs.Permanentf("%s.tsigSecretSecretRef: required when tsigKeyName is set", p)
	}
	if _, ok := dns.IsDomainName(keyName); !ok {
		return RFC2136Config{}, errs.Permanentf("%s.tsigKeyName: %q is not a valid key name", p, spec.TSIGKeyName)
	}
	c.KeyName = dns.CanonicalName(keyName)
	alg, ok := TSIGAlgorithm(spec.TSIGAlgorithm)
	if !ok {
		return RFC2136Config{}, errs.Permanentf("%s.tsigAlgorithm: %q is not supported (want HMACMD5, HMACSHA1, HMACSHA256, HMACSHA384 or HMACSHA512)", p, spec.TSIGAlgorithm)
	}
	c.Algorithm = alg
	raw, err := req.SecretValue(ctx, spec.TSIGSecret, p+".tsigSecretSecretRef")
	if err != nil {
		return RFC2136Config{}, err
	}
	secret := strings.TrimSpace(string(raw))
	if b, err := base64.StdEncoding.DecodeString(secret); err != nil || len(b) == 0 {
		return RFC2136Config{}, errs.Permanentf("%s.tsigSecretSecretRef: secret %s/%s key %q is not a base64 TSIG secret",
			p, req.SecretNamespace, spec.TSIGSecret.Name, spec.TSIGSecret.Key)
	}
	c.Secret = secret
	return c, nil
}

// normalizeNameserver checks a nameserver field and adds port 53 when it
// has none. IPv6 addresses with a port must be bracketed.
func normalizeNameserver(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("required")
	}
	host, port := s, "53"
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
		if port == "" {
			port = "53" // "host:" as cert-manager reads it
		}
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Count(s, ":") > 1 && net.ParseIP(s) != nil {
		host = s // bare IPv6 address
	} else if strings.Contains(s, ":") {
		return "", fmt.Errorf("%q is not host[:port] (IPv6 addresses with a port need brackets: [2001:db8::1]:53)", s)
	}
	if host == "" {
		return "", fmt.Errorf("%q has no host", s)
	}
	if net.ParseIP(host) == nil {
		if _, ok := dns.IsDomainName(host); !ok || strings.ContainsAny(host, " /@") {
			return "", fmt.Errorf("%q: %q is neither an IP address nor a host name", s, host)
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not in 1-65535", s, port)
	}
	return net.JoinHostPort(host, port), nil
}
