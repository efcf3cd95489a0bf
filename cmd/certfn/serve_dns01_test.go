package main

import (
	"strings"
	"testing"
)

// The flags reach serve: bad values fail before anything runs, good ones
// let `serve --until-idle` run, and the help says they are for Pebble.
func TestServeDNS01Flags(t *testing.T) {
	dir := setupEnv(t)
	tests := []struct {
		name string
		args []string
		want string // error substring; empty: exit 0
	}{
		{name: "bad URL", args: []string{"--dns01-challtestsrv", "ftp://127.0.0.1:8055", "--dns01-nameservers", "127.0.0.1:8053"},
			want: `--dns01-challtestsrv: "ftp://127.0.0.1:8055" is not the http(s) URL`},
		{name: "URL without nameservers", args: []string{"--dns01-challtestsrv", "http://127.0.0.1:8055"},
			want: "needs --dns01-nameservers"},
		{name: "bad nameserver", args: []string{"--dns01-nameservers", "127.0.0.1:8053,127.0.0.1:x"},
			want: `--dns01-nameservers[1]: "127.0.0.1:x" has no valid port`},
		{name: "valid", args: []string{"--dns01-challtestsrv", "http://127.0.0.1:8055", "--dns01-nameservers", "127.0.0.1:8053"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, dir, "", append([]string{"serve", "--until-idle"}, tc.args...)...)
			if tc.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
				}
				return
			}
			failsWith(t, r, tc.want)
		})
	}
	help := ok(t, dir, "serve", "--help")
	for _, want := range []string{"--dns01-challtestsrv", "FOR TESTING AGAINST PEBBLE ONLY", "--dns01-nameservers"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help lacks %q:\n%s", want, help)
		}
	}
}
