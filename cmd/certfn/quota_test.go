package main

import (
	"strings"
	"testing"
)

// The objects quota applies to the one-shot CLI's apply (it runs the
// application service itself), from the flag or the environment; invalid
// values are refused naming the flag or the variable.
func TestQuotaFlags(t *testing.T) {
	two := selfSignedIssuer + "---\n" + strings.ReplaceAll(selfSignedIssuer, "name: selfsigned", "name: other")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // "" when the apply succeeds
	}{
		{name: "off by default", args: []string{"apply", "-f", "-"}},
		{name: "limit reached exactly", args: []string{"--quota-objects", "2", "apply", "-f", "-"}},
		{name: "flag", args: []string{"--quota-objects", "1", "apply", "-f", "-"},
			want: "forbidden: exceeded quota: namespace default holds 0 objects and this apply would create 2 more, over its quota of 1"},
		{name: "environment", env: map[string]string{"CERTFN_QUOTA_OBJECTS": "1"}, args: []string{"apply", "-f", "-"},
			want: "exceeded quota: namespace default"},
		{name: "the flag overrides the environment", env: map[string]string{"CERTFN_QUOTA_OBJECTS": "1"}, args: []string{"--quota-objects", "0", "apply", "-f", "-"}},
		{name: "negative flag", args: []string{"--quota-objects", "-1", "apply", "-f", "-"},
			want: "--quota-objects: -1 is negative: want an integer of 0 (unlimited) or more"},
		{name: "negative issuance flag", args: []string{"--quota-issuances-per-hour", "-3", "apply", "-f", "-"},
			want: "--quota-issuances-per-hour: -3 is negative"},
		{name: "invalid environment", env: map[string]string{"CERTFN_QUOTA_ISSUANCES_PER_HOUR": "ten"}, args: []string{"apply", "-f", "-"},
			want: `CERTFN_QUOTA_ISSUANCES_PER_HOUR: "ten" is not an integer of 0 (unlimited) or more`},
		{name: "a flag given overrides an invalid environment", env: map[string]string{"CERTFN_QUOTA_OBJECTS": "many"},
			args: []string{"--quota-objects", "5", "apply", "-f", "-"}},
		{name: "invalid environment for serve", env: map[string]string{"CERTFN_QUOTA_OBJECTS": "-2"}, args: []string{"serve", "--until-idle"},
			want: `CERTFN_QUOTA_OBJECTS: "-2" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := setupEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := cli(t, dir, two, tc.args...)
			if tc.want != "" {
				failsWith(t, r, tc.want)
				for k := range tc.env {
					t.Setenv(k, "")
				}
				// Refused before the store was opened, nothing was created
				// (get says so); refused by the quota, the store is empty.
				if g := cli(t, dir, "", "get", "issuers"); g.stdout != "No issuers found.\n" && !strings.Contains(g.stderr, "holds no certfn data") {
					t.Fatalf("stored after a refused apply: exit %d stdout %q stderr %q", g.code, g.stdout, g.stderr)
				}
				return
			}
			if r.code != 0 || !strings.Contains(r.stdout, "issuer.cert-manager.io/other (default) created") {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
