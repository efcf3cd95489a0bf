package validation

import (
	"strings"
	"testing"
)

// Label keys and values as Kubernetes' apimachinery validates them
// (IsQualifiedName, IsValidLabelValue), with its messages.
func TestLabelKeyAndValue(t *testing.T) {
	const nameRule = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	keys := []struct {
		key  string
		want []string // each reason, in order; nil: valid
	}{
		{"team", nil},
		{"app.kubernetes.io/name", nil},
		{"example.com/My_Name-1.2", nil},
		{strings.Repeat("a", 63), nil},
		{"$%234", []string{nameRule}}, // approver-policy's webhook test
		{"", []string{"name part must be non-empty", nameRule}},
		{strings.Repeat("a", 64), []string{"name part must be no more than 63 characters"}},
		{"-team", []string{nameRule}},
		{"/team", []string{"prefix part must be non-empty"}},
		{"Example.com/team", []string{"prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', " +
			"and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
			"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{"a/b/c", []string{"a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
			"(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') " +
			"with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}},
	}
	for _, tc := range keys {
		if got := LabelKey(tc.key); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("LabelKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	const valueRule = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
	values := []struct {
		value string
		want  []string
	}{
		{"", nil},
		{"dev", nil},
		{"8dsdk", nil},
		{"My_Value.1", nil},
		{"a b", []string{valueRule}},
		{"-dev", []string{valueRule}},
		{strings.Repeat("v", 64), []string{"must be no more than 63 characters"}},
	}
	for _, tc := range values {
		if got := LabelValue(tc.value); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
}
