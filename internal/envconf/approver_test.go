package envconf

import (
	"fmt"
	"strings"
	"testing"
)

func TestAutoApprove(t *testing.T) {
	ptr := func(s string) *string { return &s }
	for _, tc := range []struct {
		name, mode, def string
		list            *string
		wantMode        string
		want            []string
		bad             string
	}{
		{"local default: cert-manager's approver", "", ApproverCertManager, nil, ApproverCertManager, []string{"*"}, ""},
		{"cloud default: policies only", "", ApproverPolicy, nil, ApproverPolicy, nil, ""},
		{"policy chosen", "policy", ApproverCertManager, nil, ApproverPolicy, nil, ""},
		{"cert-manager narrowed by a list", "cert-manager", ApproverPolicy, ptr("clusterissuers.cert-manager.io/ca"), ApproverCertManager, []string{"clusterissuers.cert-manager.io/ca"}, ""},
		{"policy with an explicit list", "policy", ApproverCertManager, ptr("a, b,"), ApproverPolicy, []string{"a", "b"}, ""},
		{"empty list given: none", "cert-manager", ApproverCertManager, ptr(""), ApproverCertManager, nil, ""},
		{"unknown mode", "built-in", ApproverCertManager, nil, ApproverCertManager, nil, `CERTFN_APPROVER: "built-in" is not an approver: want cert-manager`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bad string
			mode, got := AutoApprove(tc.mode, tc.list, tc.def, "CERTFN_APPROVER", func(name, format string, a ...any) {
				bad = name + ": " + fmt.Sprintf(format, a...)
			})
			if mode != tc.wantMode || fmt.Sprint(got) != fmt.Sprint(tc.want) || !strings.HasPrefix(bad, tc.bad) || (tc.bad == "") != (bad == "") {
				t.Fatalf("got %q %v bad %q; want %q %v bad %q", mode, got, bad, tc.wantMode, tc.want, tc.bad)
			}
		})
	}
}
