package pki

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"slices"

	"github.com/certfn/certfn/core/api"
)

// keyUsageNames maps cert-manager's key usage names to x509 key usage bits.
var keyUsageNames = map[api.KeyUsage]x509.KeyUsage{
	"signing":            x509.KeyUsageDigitalSignature,
	"digital signature":  x509.KeyUsageDigitalSignature,
	"content commitment": x509.KeyUsageContentCommitment,
	"key encipherment":   x509.KeyUsageKeyEncipherment,
	"key agreement":      x509.KeyUsageKeyAgreement,
	"data encipherment":  x509.KeyUsageDataEncipherment,
	"cert sign":          x509.KeyUsageCertSign,
	"crl sign":           x509.KeyUsageCRLSign,
	"encipher only":      x509.KeyUsageEncipherOnly,
	"decipher only":      x509.KeyUsageDecipherOnly,
}

// extKeyUsageNames maps cert-manager's extended key usage names.
var extKeyUsageNames = map[api.KeyUsage]x509.ExtKeyUsage{
	"any":              x509.ExtKeyUsageAny,
	"server auth":      x509.ExtKeyUsageServerAuth,
	"client auth":      x509.ExtKeyUsageClientAuth,
	"code signing":     x509.ExtKeyUsageCodeSigning,
	"email protection": x509.ExtKeyUsageEmailProtection,
	"s/mime":           x509.ExtKeyUsageEmailProtection,
	"ipsec end system": x509.ExtKeyUsageIPSECEndSystem,
	"ipsec tunnel":     x509.ExtKeyUsageIPSECTunnel,
	"ipsec user":       x509.ExtKeyUsageIPSECUser,
	"timestamping":     x509.ExtKeyUsageTimeStamping,
	"ocsp signing":     x509.ExtKeyUsageOCSPSigning,
	"microsoft sgc":    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	"netscape sgc":     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// extKeyUsageOIDs are the RFC 5280 / vendor OIDs of each x509.ExtKeyUsage.
var extKeyUsageOIDs = map[x509.ExtKeyUsage]asn1.ObjectIdentifier{
	x509.ExtKeyUsageAny:                            {2, 5, 29, 37, 0},
	x509.ExtKeyUsageServerAuth:                     {1, 3, 6, 1, 5, 5, 7, 3, 1},
	x509.ExtKeyUsageClientAuth:                     {1, 3, 6, 1, 5, 5, 7, 3, 2},
	x509.ExtKeyUsageCodeSigning:                    {1, 3, 6, 1, 5, 5, 7, 3, 3},
	x509.ExtKeyUsageEmailProtection:                {1, 3, 6, 1, 5, 5, 7, 3, 4},
	x509.ExtKeyUsageIPSECEndSystem:                 {1, 3, 6, 1, 5, 5, 7, 3, 5},
	x509.ExtKeyUsageIPSECTunnel:                    {1, 3, 6, 1, 5, 5, 7, 3, 6},
	x509.ExtKeyUsageIPSECUser:                      {1, 3, 6, 1, 5, 5, 7, 3, 7},
	x509.ExtKeyUsageTimeStamping:                   {1, 3, 6, 1, 5, 5, 7, 3, 8},
	x509.ExtKeyUsageOCSPSigning:                    {1, 3, 6, 1, 5, 5, 7, 3, 9},
	x509.ExtKeyUsageMicrosoftServerGatedCrypto:     {1, 3, 6, 1, 4, 1, 311, 10, 3, 3},
	x509.ExtKeyUsageNetscapeServerGatedCrypto:      {2, 16, 840, 1, 113730, 4, 1},
	x509.ExtKeyUsageMicrosoftCommercialCodeSigning: {1, 3, 6, 1, 4, 1, 311, 2, 1, 22},
	x509.ExtKeyUsageMicrosoftKernelCodeSigning:     {1, 3, 6, 1, 4, 1, 311, 61, 1, 1},
}

// KeyUsages turns cert-manager usage names into x509 key usage bits and
// extended key usages, as cert-manager's BuildKeyUsages: an empty list means
// api.DefaultKeyUsages, isCA adds "cert sign", duplicates are folded. Unknown
// names are an error naming spec.usages[i].
func KeyUsages(usages []api.KeyUsage, isCA bool) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	if isCA {
		ku |= x509.KeyUsageCertSign
	}
	if len(usages) == 0 {
		usages = api.DefaultKeyUsages()
	}
	for i, u := range usages {
		if k, ok := keyUsageNames[u]; ok {
			ku |= k
			continue
		}
		if e, ok := extKeyUsageNames[u]; ok {
			if !slices.Contains(eku, e) {
				eku = append(eku, e)
			}
			continue
		}
		return 0, nil, fmt.Errorf("spec.usages[%d]: %q is not a known key usage", i, u)
	}
	return ku, eku, nil
}

// sameExtKeyUsages compares two extended key usage lists as sets.
func sameExtKeyUsages(a, b []x509.ExtKeyUsage) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// SameUsages reports whether two usage lists produce the same certificate
// usages (so "signing" equals "digital signature", and an empty list equals
// api.DefaultKeyUsages). Lists with unknown names compare equal only when
// identical as sets of names.
func SameUsages(a, b []api.KeyUsage) bool {
	kua, ekua, erra := KeyUsages(a, false)
	kub, ekub, errb := KeyUsages(b, false)
	if erra != nil || errb != nil {
		return sameStrings(usageStrings(a), usageStrings(b))
	}
	return kua == kub && sameExtKeyUsages(ekua, ekub)
}

func usageStrings(u []api.KeyUsage) []string {
	out := make([]string, len(u))
	for i := range u {
		out[i] = string(u[i])
	}
	return out
}

// reverseBits reverses the bit order of one byte (ASN.1 BIT STRING bit 0 is
// the most significant bit of the first byte).
func reverseBits(b byte) byte {
	var r byte
	for i := 0; i < 8; i++ {
		r = r<<1 | b&1
		b >>= 1
	}
	return r
}

// marshalKeyUsage encodes ku as the keyUsage extension value (RFC 5280 4.2.1.3).
func marshalKeyUsage(ku x509.KeyUsage) ([]byte, error) {
	b := []byte{reverseBits(byte(ku)), reverseBits(byte(ku >> 8))}
	if b[1] == 0 {
		b = b[:1]
	}
	bitLen := len(b) * 8
	for bitLen > 0 && b[(bitLen-1)/8]&(0x80>>uint((bitLen-1)%8)) == 0 {
		bitLen--
	}
	return asn1.Marshal(asn1.BitString{Bytes: b, BitLength: bitLen})
}

// unmarshalKeyUsage decodes a keyUsage extension value.
func unmarshalKeyUsage(v []byte) (x509.KeyUsage, error) {
	var bs asn1.BitString
	rest, err := asn1.Unmarshal(v, &bs)
	if err != nil || len(rest) != 0 {
		return 0, fmt.Errorf("keyUsage extension is not a valid BIT STRING")
	}
	var ku x509.KeyUsage
	for i := 0; i < 9; i++ {
		if bs.At(i) != 0 {
			ku |= 1 << uint(i)
		}
	}
	return ku, nil
}

// marshalExtKeyUsage encodes the extKeyUsage extension value.
func marshalExtKeyUsage(eku []x509.ExtKeyUsage) ([]byte, error) {
	oids := make([]asn1.ObjectIdentifier, 0, len(eku))
	for _, e := range eku {
		oid, ok := extKeyUsageOIDs[e]
		if !ok {
			return nil, fmt.Errorf("extended key usage %d has no known OID", e)
		}
		oids = append(oids, oid)
	}
	return asn1.Marshal(oids)
}

// unmarshalExtKeyUsage decodes an extKeyUsage extension value into known
// usages and the OIDs it does not know.
func unmarshalExtKeyUsage(v []byte) ([]x509.ExtKeyUsage, []asn1.ObjectIdentifier, error) {
	var oids []asn1.ObjectIdentifier
	rest, err := asn1.Unmarshal(v, &oids)
	if err != nil || len(rest) != 0 {
		return nil, nil, fmt.Errorf("extKeyUsage extension is not a valid SEQUENCE OF OBJECT IDENTIFIER")
	}
	var known []x509.ExtKeyUsage
	var unknown []asn1.ObjectIdentifier
next:
	for _, oid := range oids {
		for e, o := range extKeyUsageOIDs {
			if o.Equal(oid) {
				known = append(known, e)
				continue next
			}
		}
		unknown = append(unknown, oid)
	}
	return known, unknown, nil
}

// KeyUsageNames names key usage bits and extended key usages with
// cert-manager's usage names: the bits in RFC 5280 order, then the
// extended usages in the order given ("digital signature", not its alias
// "signing"; "email protection", not "s/mime"). Extended usages without a
// name are left out.
func KeyUsageNames(ku x509.KeyUsage, eku []x509.ExtKeyUsage) []api.KeyUsage {
	var out []api.KeyUsage
	for _, u := range api.KnownKeyUsages {
		if bit, ok := keyUsageNames[u]; ok && u != api.UsageSigning && ku&bit != 0 {
			out = append(out, u)
		}
	}
	for _, e := range eku {
		for _, u := range api.KnownKeyUsages {
			if x, ok := extKeyUsageNames[u]; ok && x == e && u != api.UsageSMIME {
				out = append(out, u)
				break
			}
		}
	}
	return out
}
