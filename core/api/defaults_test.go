package api

import (
	"reflect"
	"testing"
	"time"
)

func TestCertificateDefaults(t *testing.T) {
	var empty CertificateSpec
	if got := empty.DurationOrDefault(); got != 90*24*time.Hour {
		t.Errorf("DurationOrDefault = %v", got)
	}
	if got := empty.RotationPolicyOrDefault(); got != RotationPolicyAlways {
		t.Errorf("RotationPolicyOrDefault = %v", got)
	}
	if got := empty.KeyAlgorithmOrDefault(); got != RSAKeyAlgorithm {
		t.Errorf("KeyAlgorithmOrDefault = %v", got)
	}
	if got := empty.KeySizeOrDefault(); got != 2048 {
		t.Errorf("KeySizeOrDefault = %v", got)
	}
	if got := empty.KeyEncodingOrDefault(); got != PKCS1 {
		t.Errorf("KeyEncodingOrDefault = %v", got)
	}
	if got := empty.RevisionHistoryLimitOrDefault(); got != 1 {
		t.Errorf("RevisionHistoryLimitOrDefault = %v", got)
	}
	if got := empty.UsagesOrDefault(); !reflect.DeepEqual(got, []KeyUsage{"digital signature", "key encipherment"}) {
		t.Errorf("UsagesOrDefault = %v", got)
	}
	if got := empty.IssuerKindOrDefault(); got != "Issuer" {
		t.Errorf("IssuerKindOrDefault = %v", got)
	}
	if empty.PrivateKey != nil || empty.Duration != nil || empty.Usages != nil {
		t.Error("accessors mutated the spec")
	}

	limit := int32(5)
	set := CertificateSpec{
		Duration:             NewDuration(time.Hour),
		PrivateKey:           &CertificatePrivateKey{RotationPolicy: RotationPolicyNever, Encoding: PKCS8, Algorithm: ECDSAKeyAlgorithm},
		RevisionHistoryLimit: &limit,
		Usages:               []KeyUsage{UsageServerAuth},
		IssuerRef:            IssuerReference{Name: "x", Kind: KindClusterIssuer},
	}
	if set.DurationOrDefault() != time.Hour || set.RotationPolicyOrDefault() != RotationPolicyNever ||
		set.KeyAlgorithmOrDefault() != ECDSAKeyAlgorithm || set.KeySizeOrDefault() != 256 ||
		set.KeyEncodingOrDefault() != PKCS8 || set.RevisionHistoryLimitOrDefault() != 5 ||
		set.IssuerKindOrDefault() != KindClusterIssuer {
		t.Errorf("explicit values not returned: %+v", set)
	}
	u := set.UsagesOrDefault()
	u[0] = "changed"
	if set.Usages[0] != UsageServerAuth {
		t.Error("UsagesOrDefault returned the spec's own slice")
	}
	set.PrivateKey.Size = 384
	if set.KeySizeOrDefault() != 384 {
		t.Errorf("KeySizeOrDefault = %d, want 384", set.KeySizeOrDefault())
	}
	ed := CertificateSpec{PrivateKey: &CertificatePrivateKey{Algorithm: Ed25519KeyAlgorithm, Size: 256}}
	if ed.KeySizeOrDefault() != 0 {
		t.Errorf("Ed25519 KeySizeOrDefault = %d, want 0", ed.KeySizeOrDefault())
	}
}

func TestRequestedDuration(t *testing.T) {
	secs := int32(600)
	cases := []struct {
		name string
		spec CertificateRequestSpec
		d    time.Duration
		ok   bool
	}{
		{"unset", CertificateRequestSpec{}, 0, false},
		{"duration", CertificateRequestSpec{Duration: NewDuration(2 * time.Hour)}, 2 * time.Hour, true},
		{"expirationSeconds", CertificateRequestSpec{ExpirationSeconds: &secs}, 10 * time.Minute, true},
		{"both: duration wins", CertificateRequestSpec{Duration: NewDuration(time.Hour), ExpirationSeconds: &secs}, time.Hour, true},
	}
	for _, tc := range cases {
		d, ok := tc.spec.RequestedDuration()
		if d != tc.d || ok != tc.ok {
			t.Errorf("%s: RequestedDuration = %v, %v; want %v, %v", tc.name, d, ok, tc.d, tc.ok)
		}
	}
	if MinimumDuration != 10*time.Minute {
		t.Errorf("MinimumDuration = %v", MinimumDuration)
	}
}
