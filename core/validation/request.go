package validation

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// CertificateRequest validates a new CertificateRequest, as cert-manager's
// ValidateCertificateRequest plus certfn's seeds: metadata, the issuer
// reference, a PEM CSR whose signature verifies, with a key and
// extensions a CA signs (signable), and whose encoded basic
// constraints and key usages agree with spec.isCA and spec.usages (the
// defaults when empty; "cert sign" added for a CA), the requested
// lifetime (docs/design/request-duration.md), the usage names, and the Approved / Denied
// conditions (at most one of each, only True, not both).
func CertificateRequest(cr *api.CertificateRequest) ErrorList {
	errs := Metadata(&cr.ObjectMeta, true)
	s := &cr.Spec
	errs = append(errs, issuerRef("spec.issuerRef", s.IssuerRef)...)
	if len(s.Request) == 0 {
		errs.add("spec.request", "must be specified: a PEM-encoded CERTIFICATE REQUEST")
	} else if csr, err := pki.ParseCSRPEM(s.Request); err != nil {
		errs.add("spec.request", err.Error())
	} else if msg := signable(csr); msg != "" {
		errs.add("spec.request", msg)
	} else if msg := csrAgrees(csr, s); msg != "" {
		errs.add("spec.request", msg)
	}
	if s.Duration != nil && s.Duration.Duration < api.MinimumDuration {
		errs.addValue("spec.duration", s.Duration.Duration.String(), fmt.Sprintf("must be at least %s", api.MinimumDuration))
	}
	if s.ExpirationSeconds != nil {
		es := time.Duration(*s.ExpirationSeconds) * time.Second
		if es < api.MinimumDuration {
			errs.addValue("spec.expirationSeconds", strconv.Itoa(int(*s.ExpirationSeconds)), fmt.Sprintf("must be at least %d", int(api.MinimumDuration/time.Second)))
		}
		if s.Duration != nil && s.Duration.Duration != es {
			errs.addValue("spec.expirationSeconds", strconv.Itoa(int(*s.ExpirationSeconds)),
				fmt.Sprintf("must equal duration (%s) when both are set", s.Duration.Duration))
		}
	}
	errs = append(errs, usages("spec.usages", s.Usages)...)
	errs = append(errs, CertificateRequestConditions(cr.Status.Conditions, "status.conditions")...)
	return errs
}

// csrAgrees returns why the CSR's basic constraints or key usage
// extensions disagree with the spec, or "" (cert-manager's
// CertificateTemplateValidateAndOverrideBasicConstraints and
// ...KeyUsages): a basicConstraints extension must say isCA as the spec
// does; when the CSR carries a keyUsage or extKeyUsage extension, its key
// usage bits must equal those of spec.usages (api.DefaultKeyUsages when
// empty, plus "cert sign" for a CA) and its known extended key usages must
// be the spec's, in order. A CSR without these extensions agrees.
func csrAgrees(csr *x509.CertificateRequest, s *api.CertificateRequestSpec) string {
	ku, eku, err := pki.KeyUsages(s.Usages, s.IsCA)
	if err != nil {
		return "" // unknown usage names are reported at spec.usages
	}
	ext, err := pki.ParseCSRExtensions(csr)
	if err != nil {
		return "encoded CSR error: " + err.Error()
	}
	if ext.IsCA != nil && *ext.IsCA != s.IsCA {
		return fmt.Sprintf("encoded CSR error: IsCA %v does not match expected value %v (spec.isCA)", *ext.IsCA, s.IsCA)
	}
	if ext.KeyUsage == nil && !ext.HasExtKeyUsage {
		return ""
	}
	var got x509.KeyUsage
	if ext.KeyUsage != nil {
		got = *ext.KeyUsage
	}
	if got != ku {
		from := "spec.usages"
		if s.IsCA {
			from += ", and 'cert sign' for spec.isCA"
		}
		return fmt.Sprintf("encoded CSR error: the KeyUsages %s do not match the expected KeyUsages %s (%s)",
			formatUsages(pki.KeyUsageNames(got, nil)), formatUsages(pki.KeyUsageNames(ku, nil)), from)
	}
	gotEKU := dedupeEKU(ext.ExtKeyUsage)
	if !slices.Equal(gotEKU, eku) {
		return fmt.Sprintf("encoded CSR error: the ExtKeyUsages %s do not match the expected ExtKeyUsages %s (spec.usages)",
			formatUsages(pki.KeyUsageNames(0, gotEKU)), formatUsages(pki.KeyUsageNames(0, eku)))
	}
	return ""
}

func dedupeEKU(in []x509.ExtKeyUsage) []x509.ExtKeyUsage {
	var out []x509.ExtKeyUsage
	for _, e := range in {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// formatUsages renders usage names as cert-manager does: [ 'a', 'b' ].
func formatUsages(us []api.KeyUsage) string {
	if len(us) == 0 {
		return "[]"
	}
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = "'" + string(u) + "'"
	}
	return "[ " + strings.Join(parts, ", ") + " ]"
}

// CertificateRequestConditions checks a request's approval conditions at
// path (cert-manager's ValidateCertificateRequestApprovalCondition): at
// most one Approved and one Denied condition, each only True, and not
// both.
func CertificateRequestConditions(conds []api.Condition, path string) ErrorList {
	var errs ErrorList
	var approved, denied []api.Condition
	for _, c := range conds {
		switch c.Type {
		case api.CertificateRequestConditionApproved:
			approved = append(approved, c)
		case api.CertificateRequestConditionDenied:
			denied = append(denied, c)
		}
	}
	for _, ct := range []struct {
		t     string
		found []api.Condition
	}{{api.CertificateRequestConditionApproved, approved}, {api.CertificateRequestConditionDenied, denied}} {
		switch {
		case len(ct.found) == 0:
		case len(ct.found) > 1:
			errs.add(path, fmt.Sprintf("multiple %q conditions present", ct.t))
		case ct.found[0].Status != api.ConditionTrue:
			errs.addValue(path+"."+ct.t, string(ct.found[0].Status), fmt.Sprintf("%q condition may only be set to True", ct.t))
		}
	}
	if len(approved) > 0 && len(denied) > 0 {
		errs.add(path, "both 'Denied' and 'Approved' conditions cannot coexist")
	}
	return errs
}

// CertificateRequestConditionsUpdate checks a change of a request's
// conditions (cert-manager's ValidateUpdateCertificateRequestApprovalCondition):
// an Approved or Denied condition, once set, may not change or go away,
// and the new conditions pass CertificateRequestConditions. certfn's
// approve and deny (core/app) refuse a second decision the same way.
func CertificateRequestConditionsUpdate(old, new []api.Condition, path string) ErrorList {
	var errs ErrorList
	for _, t := range []string{api.CertificateRequestConditionApproved, api.CertificateRequestConditionDenied} {
		o := api.FindCondition(old, t)
		if o == nil {
			continue
		}
		if n := api.FindCondition(new, t); n == nil || !reflect.DeepEqual(*o, *n) {
			errs.add(path, fmt.Sprintf("'%s' condition may not be modified once set", t))
		}
	}
	return append(errs, CertificateRequestConditions(new, path)...)
}

// CertificateRequestUpdate checks an update of a CertificateRequest, as
// cert-manager's ValidateUpdateCertificateRequest (without the conditions,
// which an apply does not write: see CertificateRequestConditionsUpdate):
// cert-manager's own annotations (cert-manager.io*, acme.cert-manager.io*)
// may not be added, changed or removed after creation — each is an error
// at metadata.annotations.<key>, as cert-manager renders it; and the
// whole spec is immutable (docs/design/certificates-api.md) — where cert-manager reports "spec",
// certfn names each changed field under it. Labels, other annotations and
// status may change.
func CertificateRequestUpdate(old, new *api.CertificateRequest) ErrorList {
	var errs ErrorList
	errs = append(errs, requestAnnotations(old.Annotations, new.Annotations)...)
	diff(&errs, "spec", reflect.ValueOf(old.Spec), reflect.ValueOf(new.Spec))
	return errs
}

// requestAnnotations reports each cert-manager annotation that differs
// between a and b (in either direction), in key order.
func requestAnnotations(a, b map[string]string) ErrorList {
	var errs ErrorList
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !strings.HasPrefix(k, api.CertManagerGroup) && !strings.HasPrefix(k, api.ACMEGroup) {
			continue
		}
		va, ina := a[k]
		vb, inb := b[k]
		if ina != inb || va != vb {
			errs.add("metadata.annotations."+k, "cannot change cert-manager annotation after creation")
		}
	}
	return errs
}

// diff reports every path where a and b differ, descending through structs
// (by JSON name), slices of equal length and maps. Empty and nil slices and
// maps are equal, as they encode the same.
func diff(errs *ErrorList, path string, a, b reflect.Value) {
	const immutable = "field is immutable"
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				errs.add(path, immutable)
			}
			return
		}
		diff(errs, path, a.Elem(), b.Elem())
	case reflect.Struct:
		t := a.Type()
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				// Opaque values (time.Time, ...): compare whole.
				if !reflect.DeepEqual(a.Interface(), b.Interface()) {
					errs.add(path, immutable)
				}
				return
			}
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			fp := path
			if !(f.Anonymous && name == "") {
				if name == "" {
					name = f.Name
				}
				fp = path + "." + name
			}
			diff(errs, fp, a.Field(i), b.Field(i))
		}
	case reflect.Slice:
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				errs.add(path, immutable)
			}
			return
		}
		if a.Len() != b.Len() {
			errs.add(path, immutable)
			return
		}
		for i := 0; i < a.Len(); i++ {
			diff(errs, idx(path, i), a.Index(i), b.Index(i))
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			errs.add(path, immutable)
			return
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				errs.add(path, immutable)
				return
			}
		}
		keys := a.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface()) })
		for _, k := range keys {
			diff(errs, fmt.Sprintf("%s[%v]", path, k.Interface()), a.MapIndex(k), b.MapIndex(k))
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			errs.add(path, immutable)
		}
	}
}

// signable returns why no CA signs csr, or "": its public key is below
// the floor (pki.CheckPublicKey), or an extension or the subject breaks
// the rules of the one reader approval and signing use
// (pki.ParseCSRExtensions: a GeneralName whose constructed bit is wrong
// for its kind, a second subjectAltName, a critical extension certfn does
// not know, a subject not in DER form, ...).
func signable(csr *x509.CertificateRequest) string {
	if err := pki.CheckPublicKey(csr.PublicKey); err != nil {
		return err.Error()
	}
	if _, err := pki.ParseCSRExtensions(csr); err != nil {
		return err.Error()
	}
	return ""
}
