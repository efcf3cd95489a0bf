package validation

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// CertificateSigningRequest validates a CertificateSigningRequest as the
// Kubernetes API server does for certificates.k8s.io/v1
// (k8s.io/kubernetes pkg/apis/certificates/validation,
// validateCertificateSigningRequest), with docs/design/request-duration.md and docs/design/certificates-api.md:
//   - metadata: a cluster-scoped object (upstream accepts any name; certfn
//     keeps its DNS-1123 subdomain rule, as its keys need);
//   - spec.request must parse as a PEM CERTIFICATE REQUEST whose signature
//     verifies ("validateCSR"), with a key and extensions a CA signs
//     (signable);
//   - spec.usages must be provided, each from the known list, none twice;
//   - spec.signerName is required and a qualified name "domain/path"
//     (ValidateSignerName); kubernetes.io/legacy-unknown is refused
//     (docs/design/certificates-api.md: only permitted in v1beta1);
//   - spec.expirationSeconds, when set, is at least 600 (docs/design/request-duration.md);
//   - status.conditions and status.certificate as CSRStatus.
func CertificateSigningRequest(csr *api.CertificateSigningRequest) ErrorList {
	errs := Metadata(&csr.ObjectMeta, false)
	s := &csr.Spec
	if len(s.Request) == 0 {
		errs.add("spec.request", "required: a PEM-encoded CERTIFICATE REQUEST")
	} else if parsed, err := pki.ParseCSRPEM(s.Request); err != nil {
		errs.add("spec.request", err.Error())
	} else if msg := signable(parsed); msg != "" {
		errs.add("spec.request", msg)
	}
	if len(s.Usages) == 0 {
		errs.add("spec.usages", "required: usages must be provided")
	}
	seen := map[api.KeyUsage]bool{}
	for i, u := range s.Usages {
		if !knownUsage(u) {
			errs.addValue(idx("spec.usages", i), string(u), "unsupported value: want one of the known usages such as \"digital signature\", \"client auth\", \"server auth\"")
		} else if seen[u] {
			errs.addValue(idx("spec.usages", i), string(u), "duplicate value")
		}
		seen[u] = true
	}
	if s.SignerName == "kubernetes.io/legacy-unknown" {
		errs.addValue("spec.signerName", s.SignerName, "the legacy signerName is not allowed via this API version")
	} else {
		errs = append(errs, SignerName("spec.signerName", s.SignerName)...)
	}
	if s.ExpirationSeconds != nil && *s.ExpirationSeconds < api.MinExpirationSeconds {
		errs.addValue("spec.expirationSeconds", strconv.Itoa(int(*s.ExpirationSeconds)),
			fmt.Sprintf("may not specify a duration less than %d seconds (10 minutes)", api.MinExpirationSeconds))
	}
	if v, ok := csr.Annotations[api.AnnotationCSRIsCA]; ok && v != "true" && v != "false" {
		errs.addValue("metadata.annotations."+api.AnnotationCSRIsCA, v, `want "true" or "false"`)
	}
	return append(errs, CSRStatus(&csr.Status)...)
}

// SignerName checks a signer name as upstream's ValidateSignerName: a
// qualified name "domain/path" where the domain has at least two
// DNS-1123 labels separated by dots (at most 253 characters), the path
// consists of DNS-1123 labels separated by dots, and the whole is at most
// 571 characters.
func SignerName(path, name string) ErrorList {
	var errs ErrorList
	if name == "" {
		errs.add(path, "required: a qualified name such as \"example.com/signer-name\"")
		return errs
	}
	segs := strings.Split(name, "/")
	if len(segs) != 2 {
		errs.addValue(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")
		return errs
	}
	domain, p := segs[0], segs[1]
	if len(domain) > 253 {
		errs.addValue(path, domain, "domain part must be no more than 253 characters")
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msg := dns1123Label(l); msg != "" {
			errs.addValue(path, domain, fmt.Sprintf("validating label %q: %s", l, msg))
			break
		}
	}
	if len(labels) < 2 {
		errs.addValue(path, domain, "should be a domain with at least two segments separated by dots")
	}
	for _, l := range strings.Split(p, ".") {
		if msg := dns1123Label(l); msg != "" {
			errs.addValue(path, p, fmt.Sprintf("validating label %q: %s", l, msg))
			break
		}
	}
	if max := 571 - len(domain) - 1; len(p) > max {
		errs.addValue(path, p, fmt.Sprintf("path part must be no more than %d characters", max))
	}
	return errs
}

// CSRStatus checks a CSR's status as upstream's validateConditions and
// validateCertificate (docs/design/certificates-api.md):
//   - each condition has a type, at most one of each type, and a status
//     of True, False or Unknown; Approved, Denied and Failed only True;
//   - Approved and Denied are mutually exclusive;
//   - status.certificate, when set, is one or more PEM CERTIFICATE blocks
//     without headers, each a certificate (text around them allowed).
func CSRStatus(st *api.CertificateSigningRequestStatus) ErrorList {
	var errs ErrorList
	seen := map[string]bool{}
	for i, c := range st.Conditions {
		p := idx("status.conditions", i)
		if c.Type == "" {
			errs.add(p+".type", "required")
		} else if seen[c.Type] {
			errs.addValue(p+".type", c.Type, "duplicate value")
		}
		seen[c.Type] = true
		switch c.Status {
		case api.ConditionTrue, api.ConditionFalse, api.ConditionUnknown:
		default:
			errs.addValue(p+".status", string(c.Status), `unsupported value: want "True", "False" or "Unknown"`)
			continue
		}
		switch c.Type {
		case api.CSRConditionApproved, api.CSRConditionDenied, api.CSRConditionFailed:
			if c.Status != api.ConditionTrue {
				errs.addValue(p+".status", string(c.Status), c.Type+" condition may only be set to True")
			}
		}
	}
	if seen[api.CSRConditionApproved] && seen[api.CSRConditionDenied] {
		errs.add("status.conditions", "Approved and Denied conditions are mutually exclusive")
	}
	if len(st.Certificate) > 0 {
		if _, err := pki.ParseChainPEM(st.Certificate); err != nil {
			errs.add("status.certificate", err.Error())
		}
	}
	return errs
}

// CertificateSigningRequestUpdate checks an update of a CSR (upstream's
// ValidateCertificateSigningRequestUpdate and its status and approval
// variants): the spec is immutable (docs/design/certificates-api.md; upstream silently keeps the
// old spec on an update, certfn names each changed field instead), the
// Approved, Denied and Failed conditions may not be removed or changed
// once present, status.certificate may not change once set, and the new
// object passes CertificateSigningRequest. cert-manager's annotations
// (cert-manager.io/* and those of its subdomains, such as
// experimental.cert-manager.io/*, which say what the signer signs: isCA,
// the requested duration, the selfSigned key) may not be added, changed or removed after
// creation, as on a CertificateRequest: each is an error at
// metadata.annotations["<key>"].
func CertificateSigningRequestUpdate(old, new *api.CertificateSigningRequest) ErrorList {
	var errs ErrorList
	errs = append(errs, csrAnnotations(old.Annotations, new.Annotations)...)
	diff(&errs, "spec", reflect.ValueOf(old.Spec), reflect.ValueOf(new.Spec))
	for _, t := range []string{api.CSRConditionApproved, api.CSRConditionDenied, api.CSRConditionFailed} {
		o := old.Status.Condition(t)
		if o == nil {
			continue
		}
		if n := new.Status.Condition(t); n == nil || n.Status != o.Status || n.Reason != o.Reason || n.Message != o.Message {
			errs.add("status.conditions", fmt.Sprintf("updates may not remove or change a condition of type %q", t))
		}
	}
	if len(old.Status.Certificate) > 0 && string(old.Status.Certificate) != string(new.Status.Certificate) {
		errs.add("status.certificate", "updates may not modify existing certificate content")
	}
	return append(errs, CertificateSigningRequest(new)...)
}

// csrAnnotations reports each annotation of cert-manager's domains
// (cert-manager.io and its subdomains) that differs between a and b (in either direction), in key order.
func csrAnnotations(a, b map[string]string) ErrorList {
	var errs ErrorList
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		domain, _, _ := strings.Cut(k, "/")
		if domain != api.CertManagerGroup && !strings.HasSuffix(domain, "."+api.CertManagerGroup) {
			continue
		}
		va, ina := a[k]
		vb, inb := b[k]
		if ina != inb || va != vb {
			errs.add(fmt.Sprintf("metadata.annotations[%q]", k), "field is immutable: cert-manager's annotations of a CertificateSigningRequest cannot be added, changed or removed after creation (create a new request)")
		}
	}
	return errs
}
