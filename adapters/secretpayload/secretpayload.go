// Package secretpayload is the JSON layout in which the cloud secret
// stores (adapters/aws/secrets, adapters/gcp/secretmanager) keep a secret:
// one object with every data key as a member, UTF-8 values as text and
// others base64, plus a metadata member for labels, annotations and the
// list of base64 keys. Both adapters write it byte for byte the same, so a
// secret written by either reads the same in the other.
package secretpayload

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// MetadataKey is the payload member holding labels, annotations and the
// list of base64-encoded keys. Data keys never start with "..", so it
// cannot collide with one (the local store's ..metadata.json rule).
const MetadataKey = "..metadata"

// metadata is the payload's MetadataKey member.
type metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Base64 lists the data keys whose value is not UTF-8 text and is
	// stored base64-encoded (keystores, DER).
	Base64 []string `json:"base64,omitempty"`
}

// dataKeyRE is Kubernetes' rule for a secret data key.
var dataKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// CheckDataKey validates a data key: Kubernetes' secret key rule, and no
// leading ".." (reserved for the payload's metadata).
func CheckDataKey(k string) error {
	if len(k) > 253 || !dataKeyRE.MatchString(k) || k == "." || strings.HasPrefix(k, "..") {
		return errs.Permanentf("data[%q]: not a valid key: want letters, digits, '-', '_' and '.', not \".\" and not starting with \"..\", at most 253 characters", k)
	}
	return nil
}

// Encode renders a secret as a payload: every data key as a member (UTF-8
// text as is, anything else base64 and listed in metadata), plus
// MetadataKey. Map keys are sorted, so equal secrets give equal payloads.
// A payload over maxBytes is a permanent error naming service, whose
// limit it is. Errors name keys and sizes, never values.
func Encode(sec ports.Secret, maxBytes int, service string) ([]byte, error) {
	doc := make(map[string]any, len(sec.Data)+1)
	var meta metadata
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		if err := CheckDataKey(k); err != nil {
			return nil, err
		}
		v := sec.Data[k]
		if utf8.Valid(v) {
			doc[k] = string(v)
			continue
		}
		doc[k] = base64.StdEncoding.EncodeToString(v)
		meta.Base64 = append(meta.Base64, k)
	}
	if len(sec.Labels) > 0 {
		meta.Labels = sec.Labels
	}
	if len(sec.Annotations) > 0 {
		meta.Annotations = sec.Annotations
	}
	doc[MetadataKey] = meta
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("payload: encode: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > maxBytes {
		sizes := make([]string, 0, len(sec.Data))
		for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
			sizes = append(sizes, fmt.Sprintf("%s=%d", k, len(sec.Data[k])))
		}
		return nil, errs.Permanentf("payload: %d bytes, over %s's limit of %d (data sizes: %s)", len(out), service, maxBytes, strings.Join(sizes, ", "))
	}
	return out, nil
}

// Decode parses a payload written by Encode (Namespace and Name are left
// empty). Its errors never quote the payload.
func Decode(data []byte) (ports.Secret, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return ports.Secret{}, fmt.Errorf("payload: not JSON (syntax error at byte %d of %d)", syn.Offset, len(data))
		}
		return ports.Secret{}, fmt.Errorf("payload: not a JSON object (%d bytes)", len(data))
	}
	var meta metadata
	if raw, ok := doc[MetadataKey]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return ports.Secret{}, fmt.Errorf("payload: member %s is malformed", MetadataKey)
		}
	}
	b64 := map[string]bool{}
	for _, k := range meta.Base64 {
		b64[k] = true
	}
	sec := ports.Secret{Data: make(map[string][]byte, len(doc)), Labels: meta.Labels, Annotations: meta.Annotations}
	for k, raw := range doc {
		if k == MetadataKey {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return ports.Secret{}, fmt.Errorf("payload: member %q is not a string", k)
		}
		if !b64[k] {
			sec.Data[k] = []byte(v)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return ports.Secret{}, fmt.Errorf("payload: member %q is listed as base64 but is not valid base64", k)
		}
		sec.Data[k] = b
	}
	return sec, nil
}
