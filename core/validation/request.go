package validation

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// CertificateRequest validates a new CertificateRequest: metadata, a PEM
// CSR whose signature verifies, the issuer reference, the requested
// lifetime (seed 003) and the usages.
func CertificateRequest(cr *api.CertificateRequest) ErrorList {
	errs := Metadata(&cr.ObjectMeta, true)
	s := &cr.Spec
	if _, err := pki.ParseCSRPEM(s.Request); err != nil {
		errs.add("spec.request", err.Error())
	}
	errs = append(errs, issuerRef("spec.issuerRef", s.IssuerRef)...)
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
	return errs
}

// CertificateRequestUpdate checks an update of a CertificateRequest: the
// whole spec is immutable after creation (seed 004), so every changed spec
// field is an error naming its path. Metadata and status may change.
func CertificateRequestUpdate(old, new *api.CertificateRequest) ErrorList {
	var errs ErrorList
	diff(&errs, "spec", reflect.ValueOf(old.Spec), reflect.ValueOf(new.Spec))
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
