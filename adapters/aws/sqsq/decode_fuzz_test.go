package sqsq

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// FuzzDecodeBody: an SQS message is outside input (anyone who may send to
// the queue). Whatever its body and format attribute, DecodeBody never
// panics; it accepts exactly what api.ParseKey accepts (the body trimmed)
// in format "1" or without the attribute, and every refusal is permanent
// (the message is dropped, never retried).
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{"Certificate/default/web", " ClusterIssuer/ca\n", "Widget/x", "", "Certificate/web", "a/b/c/d"} {
		f.Add(s, FormatVersion, true)
		f.Add(s, "2", true)
		f.Add(s, "", false)
	}
	f.Fuzz(func(t *testing.T, body, format string, withFormat bool) {
		attrs := map[string]string{}
		if withFormat {
			attrs[FormatAttribute] = format
		}
		k, err := DecodeBody(body, attrs)
		want, werr := api.ParseKey(strings.TrimSpace(body))
		okFormat := !withFormat || format == FormatVersion
		switch {
		case err != nil && !errs.IsPermanent(err):
			t.Fatalf("DecodeBody(%q, %q): %v is not permanent", body, format, err)
		case err == nil && (!okFormat || werr != nil || k != want):
			t.Fatalf("DecodeBody(%q, %q) = %+v, want a refusal or %+v (%v)", body, format, k, want, werr)
		case err != nil && okFormat && werr == nil:
			t.Fatalf("DecodeBody(%q, %q) refused a key ParseKey accepts: %v", body, format, err)
		}
	})
}
