package awsmode

import "testing"

// The status route names a Certificate's secret where the deployment's
// secret store keeps it (app.Ports.SecretReference).
func TestSecretReference(t *testing.T) {
	for _, tc := range []struct {
		store, prefix, want string
	}{
		{SecretStoreSecretsManager, "certfn", "certfn/team-a/web-tls"},
		{SecretStoreSecretsManager, "", "certfn/team-a/web-tls"},
		{SecretStoreSecretsManager, "prod/certfn", "prod/certfn/team-a/web-tls"},
		{SecretStoreSSM, "certfn", "/certfn/tls/team-a/web-tls"},
		{SecretStoreSSM, "", "/certfn/tls/team-a/web-tls"},
	} {
		s := Settings{SecretStore: tc.store, SecretPrefix: tc.prefix}
		if got := s.secretReference("team-a", "web-tls"); got != tc.want {
			t.Errorf("%s, prefix %q: %q, want %q", tc.store, tc.prefix, got, tc.want)
		}
	}
}
