package kubeapi

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// envelope builds a Kubernetes protobuf body of a SelfSubjectAccessReview
// with the given resource attributes (field number → value).
func envelope(kind string, attrs map[protowire.Number]string) []byte {
	var ra []byte
	for num := protowire.Number(1); num <= 7; num++ {
		if v, ok := attrs[num]; ok {
			ra = protowire.AppendTag(ra, num, protowire.BytesType)
			ra = protowire.AppendString(ra, v)
		}
	}
	spec := protowire.AppendTag(nil, 1, protowire.BytesType)
	spec = protowire.AppendBytes(spec, ra)
	obj := protowire.AppendTag(nil, 2, protowire.BytesType)
	obj = protowire.AppendBytes(obj, spec)
	var tm []byte
	tm = protowire.AppendTag(tm, 1, protowire.BytesType)
	tm = protowire.AppendString(tm, reviewGroupVersion)
	tm = protowire.AppendTag(tm, 2, protowire.BytesType)
	tm = protowire.AppendString(tm, kind)
	out := append([]byte{}, k8sProtoMagic...)
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendBytes(out, tm)
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	out = protowire.AppendBytes(out, obj)
	return out
}

func TestDecodeReviewProto(t *testing.T) {
	rev, err := decodeReviewProto(envelope(reviewKind, map[protowire.Number]string{1: "team-a", 2: "get", 3: "cert-manager.io", 5: "certificates", 7: "web"}))
	if err != nil {
		t.Fatal(err)
	}
	a := rev.Spec.ResourceAttributes
	if rev.Kind != reviewKind || rev.APIVersion != reviewGroupVersion || a == nil ||
		a.Namespace != "team-a" || a.Verb != "get" || a.Group != "cert-manager.io" || a.Resource != "certificates" || a.Name != "web" {
		t.Fatalf("decoded %+v %+v", rev, a)
	}
	for name, body := range map[string][]byte{
		"no magic":  []byte("\x0a\x00"),
		"truncated": envelope(reviewKind, map[protowire.Number]string{2: "get"})[:12],
	} {
		if _, err := decodeReviewProto(body); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzDecodeReviewProto(f *testing.F) {
	f.Add(envelope(reviewKind, map[protowire.Number]string{2: "list", 5: "certificates"}))
	f.Add([]byte("k8s\x00\x0a\x05"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeReviewProto(b) // must not panic or hang
	})
}

// csrEnvelope builds a CertificateSigningRequest in Kubernetes protobuf
// with metadata.name, resourceVersion and one condition.
func csrEnvelope(name, rv, typ, status, reason string) []byte {
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	meta := field(field(nil, 1, []byte(name)), 6, []byte(rv))
	cond := field(field(field(nil, 1, []byte(typ)), 2, []byte(reason)), 6, []byte(status))
	obj := field(field(field(nil, 1, meta), 2, []byte{}), 3, field(nil, 1, cond))
	tm := field(field(nil, 1, []byte("certificates.k8s.io/v1")), 2, []byte("CertificateSigningRequest"))
	return field(field(append([]byte{}, k8sProtoMagic...), 1, tm), 2, obj)
}

func TestDecodeApprovalProto(t *testing.T) {
	b, err := decodeApprovalProto(csrEnvelope("web", "7", "Approved", "True", "KubectlApprove"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind != "CertificateSigningRequest" || b.APIVersion != "certificates.k8s.io/v1" || b.Metadata.Name != "web" || b.Metadata.ResourceVersion != "7" ||
		len(b.Status.Conditions) != 1 || b.Status.Conditions[0] != (approvalCondition{Type: "Approved", Status: "True", Reason: "KubectlApprove"}) {
		t.Fatalf("decoded %+v", b)
	}
	if _, err := decodeApprovalProto([]byte("{}")); err == nil {
		t.Error("JSON read as protobuf: no error")
	}
}

func FuzzDecodeApprovalProto(f *testing.F) {
	f.Add(csrEnvelope("web", "7", "Denied", "True", "r"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeApprovalProto(b) // must not panic or hang
	})
}
