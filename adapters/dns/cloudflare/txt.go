package cloudflare

import (
	"strings"

	"github.com/certfn/certfn/adapters/dns/txtrr"
)

// EncodeTXT returns text as Cloudflare TXT content: quoted
// character-strings of at most 255 octets separated by spaces, '"' and
// '\' escaped by a backslash and other octets outside printable ASCII as
// \DDD (decimal), the form Cloudflare documents for TXT content.
func EncodeTXT(text string) string { return txtrr.Decimal.Encode(text) }

// DecodeTXT returns the text of Cloudflare TXT content. Quoted content
// (ours, or the dashboard's) is read as character-strings, concatenated,
// escapes resolved; unquoted content (written by older clients, which
// Cloudflare stores as given and splits only when serving it) is the text
// itself, spaces included.
func DecodeTXT(content string) string {
	if !strings.HasPrefix(strings.TrimSpace(content), `"`) {
		return content
	}
	return txtrr.Decimal.Decode(content)
}
