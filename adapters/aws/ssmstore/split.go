package ssmstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// A secret whose payload does not fit a standard parameter (4,096 bytes)
// but has a tls.key — every RSA key pair with its chain, cert-manager's
// default RSA 2048 included — is kept in two standard parameters instead
// of one advanced one ($0.05 a month each): the private key alone in the
// companion <parameter>_tls.key ('_' never occurs in a namespace or a
// secret name, so no secret's parameter can be a companion), and the rest
// in the parameter itself, whose payload names the companion's version in
// its member KeyPartMember: {"tls.key": <version>}. Parameter Store's
// versions are immutable, so a reader that follows the reference always
// gets the key of that certificate, never one from a write in progress:
// the companion is written first, the parameter last. A crash between the
// two leaves the old pair readable; Rollback restores the previous
// parameter version, which names the previous key version. The companion
// is in the secret's class (the same IAM path) and is deleted with it.
const (
	// KeyPartMember is the member of a split payload that names the
	// companion's version (data keys never start with "..").
	KeyPartMember = "..parameters"
	// keyPartSuffix is appended to the parameter name for the companion.
	keyPartSuffix = "_tls.key"
	// splitKey is the data key kept in the companion.
	splitKey = "tls.key"
)

// encoded is a secret ready to write: main is the parameter's payload
// without the version reference (added by withKeyVersion), key the
// companion's payload ("" when the secret is not split).
type encoded struct {
	main, key string
}

// encode lays sec out as one payload, or as two when it is larger than a
// standard parameter and has a tls.key (see the comment above). Sizes
// past the advanced tier's 8,192 bytes are a permanent error naming them.
func encode(sec ports.Secret) (encoded, error) {
	full, err := secretpayload.Encode(sec, 4*MaxAdvancedBytes, "Parameter Store (advanced tier)")
	if err != nil {
		return encoded{}, err
	}
	if len(full) <= MaxStandardBytes || len(sec.Data[splitKey]) == 0 {
		if _, err := TierFor(len(full)); err != nil {
			return encoded{}, err
		}
		return encoded{main: string(full)}, nil
	}
	rest := sec
	rest.Data = maps.Clone(sec.Data)
	delete(rest.Data, splitKey)
	// The reference adds at most this many bytes to the main payload.
	main, err := secretpayload.Encode(rest, MaxAdvancedBytes-len(`,"..parameters":{"tls.key":99999}`), "Parameter Store (advanced tier)")
	if err != nil {
		return encoded{}, err
	}
	key, err := secretpayload.Encode(ports.Secret{Data: map[string][]byte{splitKey: sec.Data[splitKey]}}, MaxAdvancedBytes, "Parameter Store (advanced tier)")
	if err != nil {
		return encoded{}, err
	}
	return encoded{main: string(main), key: string(key)}, nil
}

// withKeyVersion adds the companion's version to a main payload.
func withKeyVersion(main string, version int64) (string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(main), &doc); err != nil {
		return "", fmt.Errorf("payload: %w", err)
	}
	doc[KeyPartMember] = json.RawMessage(`{"` + splitKey + `":` + strconv.FormatInt(version, 10) + `}`)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("payload: %w", err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// decodeMain decodes a parameter's payload and the companion version it
// names (0 when it is not split). Errors never quote the value.
func decodeMain(value string) (ports.Secret, int64, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &doc); err != nil {
		_, err := secretpayload.Decode([]byte(value)) // its error, which quotes nothing
		return ports.Secret{}, 0, err
	}
	raw, split := doc[KeyPartMember]
	if !split {
		sec, err := secretpayload.Decode([]byte(value))
		return sec, 0, err
	}
	var ref map[string]int64
	if err := json.Unmarshal(raw, &ref); err != nil || ref[splitKey] < 1 || len(ref) != 1 {
		return ports.Secret{}, 0, errs.Permanentf("payload: member %s is malformed", KeyPartMember)
	}
	delete(doc, KeyPartMember)
	rest, err := json.Marshal(doc)
	if err != nil {
		return ports.Secret{}, 0, fmt.Errorf("payload: %w", err)
	}
	sec, err := secretpayload.Decode(rest)
	return sec, ref[splitKey], err
}

// same reports whether a and b hold the same data, labels and
// annotations (nil and empty maps alike).
func same(a, b ports.Secret) bool {
	return maps.EqualFunc(a.Data, b.Data, bytes.Equal) && maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}
