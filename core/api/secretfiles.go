package api

import (
	"fmt"
	"regexp"
	"strconv"
)

// Annotations that set the owner, group and mode of a secret's files in
// local mode's file secret store, so that a non-root web server can read
// its key. Set them in a Certificate's spec.secretTemplate.annotations
// (they are copied to the secret) or on a Secret manifest; `certfn serve
// --secret-file-*` sets defaults for the secrets of Certificates. Cloud
// secret stores ignore them.
const (
	// AnnotationSecretFileMode is the files' mode in octal, e.g. "0640"; no
	// write or execute bit for group or others.
	AnnotationSecretFileMode = "certfn.io/secret-file-mode"
	// AnnotationSecretFileOwner is the files' owner: a user name or a
	// numeric uid.
	AnnotationSecretFileOwner = "certfn.io/secret-file-owner"
	// AnnotationSecretFileGroup is the files' group: a group name or a
	// numeric gid.
	AnnotationSecretFileGroup = "certfn.io/secret-file-group"
)

// ParseSecretFileMode parses a file mode such as "0640" or "640": octal,
// at most 0777, readable by the owner, with no write or execute bit for
// group or others (a key other users could change, or run, is refused).
func ParseSecretFileMode(s string) (uint32, error) {
	if len(s) < 3 || len(s) > 4 {
		return 0, fmt.Errorf("%q: want an octal mode such as 0640", s)
	}
	m, err := strconv.ParseUint(s, 8, 32)
	switch {
	case err != nil || m > 0o777:
		return 0, fmt.Errorf("%q: want an octal mode such as 0640", s)
	case m&0o400 == 0:
		return 0, fmt.Errorf("%q: the owner must be able to read the files", s)
	case m&0o033 != 0:
		return 0, fmt.Errorf("%q: no write or execute permission for group or others (at most 0644)", s)
	}
	return uint32(m), nil
}

// userOrGroup is a POSIX user or group name, or a number.
var userOrGroup = regexp.MustCompile(`^([a-z_][a-z0-9_.-]{0,31}\$?|[0-9]{1,10})$`)

// CheckSecretFileOwner checks the syntax of an owner or group value (its
// existence is checked where the files are written).
func CheckSecretFileOwner(s string) error {
	if !userOrGroup.MatchString(s) {
		return fmt.Errorf("%q: want a user or group name, or a number", s)
	}
	return nil
}
