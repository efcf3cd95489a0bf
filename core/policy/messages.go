package policy

import (
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// Helpers that render values in violation messages.

func keyAlg(a api.PrivateKeyAlgorithm) string {
	if a == "" {
		return "of an unsupported type"
	}
	return string(a)
}

func quoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("%q", v)
	}
	if len(q) == 1 {
		return q[0] + " is"
	}
	return strings.Join(q, ", ") + " are"
}

// article returns "a" or "an" for the names used in messages.
func article(what string) string {
	if what != "" && strings.ContainsRune("aeioAEIO", rune(what[0])) {
		return "an"
	}
	return "a"
}

func plural(what string) string {
	if strings.HasSuffix(what, "y") {
		return what[:len(what)-1] + "ies"
	}
	if strings.HasSuffix(what, "s") {
		return what + "es"
	}
	return what + "s"
}
