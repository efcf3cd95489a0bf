package certificates

// What the external tests (package certificates_test, which may import
// certtest: certtest imports this package) need of the unexported names.

// ACMUnsupportedKey is unsupportedKey, the ACM import's key check.
var ACMUnsupportedKey = unsupportedKey
