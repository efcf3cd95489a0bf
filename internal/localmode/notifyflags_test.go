package localmode

import (
	"strings"
	"testing"
)

// A notification flag given without --notify-webhook-url is refused,
// naming it, not ignored.
func TestNotifyFlagsNeedTheURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    func(*Config)
		want string
	}{
		{"secret file", func(c *Config) { c.Notify.SecretFile = "/nonexistent" }, "--notify-webhook-secret-file: set without --notify-webhook-url"},
		{"deployment", func(c *Config) { c.Notify.Deployment = "prod" }, "--notify-deployment: set without --notify-webhook-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Data: Data{Dir: t.TempDir()}, SecretFiles: SecretFileConfig{MaxMode: "0640"}}
			tc.n(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}
