package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// serve --until-idle --quiet writes nothing when the run succeeds (cron
// mails any output), and the whole log, then the error naming each
// Certificate's blocker as `certfn status` names it, when it fails.
// --log-format json writes one JSON object per line; --log-level warn
// drops the info lines.
func TestServeQuietAndLogFormats(t *testing.T) {
	dir := setupEnv(t)
	ok(t, dir, "apply", "-f", writeFile(t, t.TempDir(), "m.yaml", selfSignedIssuer+"---\n"+appCert))

	// Policies only, and none: the request waits; the run fails.
	r := cli(t, dir, "", "serve", "--until-idle", "--quiet", "--approver", "policy")
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("quiet failing run: %d\nstdout %q\nstderr %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"CertificateRequestPolicies only",                   // the start line, held and written
		"msg=\"serve --until-idle: 1 certificates: 0 ready", // the summary
		"error: 1 certificates not ready after serve --until-idle: default/app: request app-1 is waiting for approval: no policy applies", // the blocker
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("quiet failing run lacks %q:\n%s", want, r.stderr)
		}
	}

	// JSON lines at warn: the summary (a warning) and nothing at info.
	r = cli(t, dir, "", "serve", "--until-idle", "--approver", "policy", "--log-format", "json", "--log-level", "warn")
	if r.code != 1 {
		t.Fatalf("json run: %d %s", r.code, r.stderr)
	}
	var logged int
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // the start line and the error are not log records
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if rec.Level == "INFO" || rec.Level == "DEBUG" {
			t.Errorf("--log-level warn logged %s: %q", rec.Level, line)
		}
		logged++
	}
	if logged == 0 || !strings.Contains(r.stderr, `"msg":"serve --until-idle: 1 certificates: 0 ready`) {
		t.Fatalf("json run logged no summary:\n%s", r.stderr)
	}

	// Approved and issued: the quiet run writes nothing at all.
	ok(t, dir, "approve", "app-1")
	r = cli(t, dir, "", "serve", "--until-idle", "--quiet", "--approver", "policy")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("quiet successful run: %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if s := ok(t, dir, "status", "certificate", "app"); !strings.HasPrefix(s, "Ready: ") {
		t.Fatalf("not issued by the quiet run:\n%s", s)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--quiet"}, "--quiet: only with --until-idle"},
		{[]string{"--until-idle", "--log-format", "yaml"}, `--log-format "yaml": want text or json`},
		{[]string{"--until-idle", "--log-level", "loud"}, `--log-level "loud": want debug, info, warn or error`},
	} {
		failsWith(t, cli(t, dir, "", append([]string{"serve"}, tc.args...)...), tc.want)
	}
}
