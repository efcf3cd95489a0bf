package api

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// AnnotationAdoptByCertificate, set on a Secret by whoever may write
// secrets (an operator applying a Secret manifest), names the one
// Certificate of the secret's namespace that may take the secret over
// although it holds data no Certificate wrote (an existing key pair
// migrated into certfn). Without it a Certificate never writes a secret
// with data unless the secret's cert-manager.io/certificate-name
// annotation names it. A Certificate that adopts a secret this way never
// reuses its private key: its first issuance writes a key of its own.
// The annotation does not help for a secret an issuer refers to (see
// SecretUse): those are never a Certificate's.
const AnnotationAdoptByCertificate = "certfn.io/adopt-by-certificate"

// SecretUse is a reference to a secret by an object other than a
// Certificate's spec.secretName: an issuer's CA key pair, ACME account key
// or credentials, or a keystore's password.
type SecretUse struct {
	// Kind and Name are the referring object (Issuer, ClusterIssuer,
	// Certificate).
	Kind, Name string
	// Field is the JSON path of the reference, e.g. spec.ca.secretName.
	Field string
	// Secret is the secret's name (in the namespace of the issuer's
	// secrets, IssuerScope.SecretNamespace).
	Secret string
}

// CA reports whether the use is a CA issuer's key pair, the one secret
// an issuer uses that a Certificate may have written (a CA bootstrapped
// from a self-signed Certificate).
func (u SecretUse) CA() bool { return u.Field == "spec.ca.secretName" }

// String names the use, e.g. `Issuer "ca" (spec.ca.secretName)`.
func (u SecretUse) String() string { return fmt.Sprintf("%s %q (%s)", u.Kind, u.Name, u.Field) }

var secretKeySelectorType = reflect.TypeOf(SecretKeySelector{})

// IssuerSecretUses lists every secret iss refers to: spec.ca.secretName
// and every SecretKeySelector of its spec (the ACME account key, the EAB
// key, each DNS-01 provider's credentials), with its field path. Empty
// names are left out.
func IssuerSecretUses(iss GenericIssuer) []SecretUse {
	kind, name := KindIssuer, iss.GetObjectMeta().Name
	if _, cluster := iss.(*ClusterIssuer); cluster {
		kind = KindClusterIssuer
	}
	var out []SecretUse
	spec := iss.GetSpec()
	if spec.CA != nil && spec.CA.SecretName != "" {
		out = append(out, SecretUse{Kind: kind, Name: name, Field: "spec.ca.secretName", Secret: spec.CA.SecretName})
	}
	selectors(reflect.ValueOf(spec).Elem(), "spec", func(path, secret string) {
		out = append(out, SecretUse{Kind: kind, Name: name, Field: path, Secret: secret})
	})
	return out
}

// CertificateSecretUses lists the keystore password secrets crt refers
// to (spec.keystores.*.passwordSecretRef).
func CertificateSecretUses(crt *Certificate) []SecretUse {
	var out []SecretUse
	if ks := crt.Spec.Keystores; ks != nil {
		if ks.JKS != nil && ks.JKS.PasswordSecretRef.Name != "" {
			out = append(out, SecretUse{Kind: KindCertificate, Name: crt.Name, Field: "spec.keystores.jks.passwordSecretRef", Secret: ks.JKS.PasswordSecretRef.Name})
		}
		if ks.PKCS12 != nil && ks.PKCS12.PasswordSecretRef.Name != "" {
			out = append(out, SecretUse{Kind: KindCertificate, Name: crt.Name, Field: "spec.keystores.pkcs12.passwordSecretRef", Secret: ks.PKCS12.PasswordSecretRef.Name})
		}
	}
	return out
}

// selectors calls found for every non-empty SecretKeySelector under v,
// with its JSON path.
func selectors(v reflect.Value, path string, found func(path, secret string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			selectors(v.Elem(), path, found)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			selectors(v.Index(i), fmt.Sprintf("%s[%d]", path, i), found)
		}
	case reflect.Struct:
		if v.Type() == secretKeySelectorType {
			if n := v.Interface().(SecretKeySelector).Name; n != "" {
				found(path, n)
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := path
			if tag != "" && tag != "-" {
				p = path + "." + tag
			}
			selectors(v.Field(i), p, found)
		}
	}
}

// SecretFileBounds are the most a Certificate's
// spec.secretTemplate.annotations may ask of its secret's files
// (AnnotationSecretFile*): the deployment's operator sets them (local
// mode: `certfn serve --secret-file-max-mode`, `--secret-file-allow-owners`,
// `--secret-file-allow-groups`). A value outside them is refused, never
// clamped.
type SecretFileBounds struct {
	// MaxMode is the most permissive mode: a requested mode may have no
	// bit MaxMode lacks (0: 0640).
	MaxMode uint32
	// Owners and Groups are the user and group names or numbers a
	// template may name (none: the annotation is refused).
	Owners, Groups []string
}

// DefaultMaxSecretFileMode is SecretFileBounds' MaxMode when unset:
// readable by a group, never by every user of the host.
const DefaultMaxSecretFileMode = 0o640

// Max is the effective MaxMode.
func (b SecretFileBounds) Max() uint32 {
	if b.MaxMode == 0 {
		return DefaultMaxSecretFileMode
	}
	return b.MaxMode
}

// Check returns an error naming the annotation (under path) and the bound
// when annotations ask for more than b allows; a malformed value is an
// error too.
func (b SecretFileBounds) Check(path string, annotations map[string]string) error {
	if v, ok := annotations[AnnotationSecretFileMode]; ok {
		m, err := ParseSecretFileMode(v)
		if err != nil {
			return fmt.Errorf("%s[%s]: %w", path, AnnotationSecretFileMode, err)
		}
		if m&^b.Max() != 0 {
			return fmt.Errorf("%s[%s]: %q is more permissive than this deployment allows (at most %04o; the operator sets the bound with --secret-file-max-mode)",
				path, AnnotationSecretFileMode, v, b.Max())
		}
	}
	for _, a := range []struct {
		name, flag string
		allowed    []string
	}{{AnnotationSecretFileOwner, "--secret-file-allow-owners", b.Owners}, {AnnotationSecretFileGroup, "--secret-file-allow-groups", b.Groups}} {
		v, ok := annotations[a.name]
		if !ok {
			continue
		}
		if err := CheckSecretFileOwner(v); err != nil {
			return fmt.Errorf("%s[%s]: %w", path, a.name, err)
		}
		if !slices.Contains(a.allowed, v) {
			allowed := "none"
			if len(a.allowed) > 0 {
				allowed = strings.Join(a.allowed, ", ")
			}
			return fmt.Errorf("%s[%s]: %q is not one this deployment allows (allowed: %s; the operator sets them with %s)",
				path, a.name, v, allowed, a.flag)
		}
	}
	return nil
}
