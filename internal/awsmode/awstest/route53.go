package awstest

import (
	"path/filepath"
	"strings"

	"github.com/certfn/certfn/internal/awsmode"
)

// UseRoute53 points the functions' Route 53 clients at endpoint (the
// HAND-WRITTEN TEST DOUBLE of adapters/dns/route53/route53test, or
// LocalStack) and limits the worker's route53 DNS-01 provider to zoneIDs
// (CERTFN_ROUTE53_ZONE_IDS; none: no limit). Call it before building the
// worker.
//
// The provider builds its clients as deployed, from the SDK's default
// configuration chain, so the endpoint goes where the SDK reads it, the
// process environment (AWS_ENDPOINT_URL_ROUTE_53), with static test
// credentials and no shared configuration files; t.Setenv restores them
// when the test ends (and forbids t.Parallel).
func (e *Env) UseRoute53(endpoint string, zoneIDs ...string) {
	e.T.Helper()
	none := filepath.Join(e.T.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_ROUTE_53":   endpoint,
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "us-east-1",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		e.T.Setenv(k, v)
	}
	e.Vars[awsmode.EnvRoute53ZoneIDs] = strings.Join(zoneIDs, ",")
}
