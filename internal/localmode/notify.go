package localmode

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/webhook"
	"github.com/certfn/certfn/core/ports"
)

// NotifyConfig is `certfn serve`'s notifications as plain data: a webhook
// that receives the Certificates' events (issued, renewed, failed,
// approaching expiration) as Standard Webhooks (adapters/webhook). Off
// without WebhookURL.
type NotifyConfig struct {
	// WebhookURL receives the events (--notify-webhook-url; "": off).
	WebhookURL string
	// SecretFile holds the signing secrets, one "whsec_<base64>" a line
	// (--notify-webhook-secret-file; required with WebhookURL). It must
	// not be readable by other users.
	SecretFile string
	// Timeout bounds one delivery (--notify-webhook-timeout; 0: 15 s).
	Timeout time.Duration
	// Deployment names this certfn in every event (--notify-deployment;
	// "": the host name).
	Deployment string
	// ExpiryDays is how many days before its expiry a certificate that
	// was not renewed is announced, once a day (--notify-expiry-days; 0:
	// never).
	ExpiryDays int
}

// maxNotifyExpiryDays bounds ExpiryDays (as the cloud modules do).
const maxNotifyExpiryDays = 365

// notifier builds the webhook notifier of c (nil, nil when off) and the
// expiry window; a bad field is an error naming its flag.
func (c NotifyConfig) notifier() (ports.Notifier, time.Duration, string, error) {
	if c.ExpiryDays < 0 || c.ExpiryDays > maxNotifyExpiryDays {
		return nil, 0, "", fmt.Errorf("--notify-expiry-days: %d: want 0 (no expiry events) to %d", c.ExpiryDays, maxNotifyExpiryDays)
	}
	if c.WebhookURL == "" {
		if c.SecretFile != "" {
			return nil, 0, "", fmt.Errorf("--notify-webhook-secret-file: set without --notify-webhook-url")
		}
		if c.Deployment != "" {
			return nil, 0, "", fmt.Errorf("--notify-deployment: set without --notify-webhook-url (it names this deployment in webhook events)")
		}
		return nil, 0, "", nil
	}
	if _, err := webhook.CheckURL(c.WebhookURL); err != nil {
		return nil, 0, "", fmt.Errorf("--notify-webhook-url: %w", err)
	}
	if c.SecretFile == "" {
		return nil, 0, "", fmt.Errorf("--notify-webhook-secret-file: required with --notify-webhook-url: a file holding the signing secret (whsec_<base64>, e.g. `echo whsec_$(openssl rand -base64 32) > secret; chmod 600 secret`)")
	}
	secrets, err := readSecretFile(c.SecretFile)
	if err != nil {
		return nil, 0, "", fmt.Errorf("--notify-webhook-secret-file %s: %w", c.SecretFile, err)
	}
	if c.Timeout < 0 {
		return nil, 0, "", fmt.Errorf("--notify-webhook-timeout: %s is negative", c.Timeout)
	}
	dep := strings.TrimSpace(c.Deployment)
	if dep == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			dep = h
		} else {
			dep = "local"
		}
	}
	n, err := webhook.New(webhook.Options{URL: c.WebhookURL, Secrets: secrets, Deployment: dep, Timeout: c.Timeout})
	if err != nil {
		return nil, 0, "", fmt.Errorf("--notify-webhook-url: %w", err)
	}
	line := fmt.Sprintf("notifications: webhook to %s (deployment %s, %d signing secret(s)", n.Target(), dep, len(secrets))
	if c.ExpiryDays > 0 {
		line += fmt.Sprintf(", expiry events from %d days before)", c.ExpiryDays)
	} else {
		line += ", no expiry events)"
	}
	return n, time.Duration(c.ExpiryDays) * 24 * time.Hour, line, nil
}

// readSecretFile reads the signing secrets (webhook.ParseSecrets). A file
// other users may read is refused: they could sign forged events.
func readSecretFile(path string) ([][]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if mode := st.Mode().Perm(); runtime.GOOS != "windows" && mode&0o007 != 0 {
		return nil, fmt.Errorf("other users may read or write it (mode %#o): run chmod o-rwx %s", uint32(mode), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return webhook.ParseSecrets(string(b))
}
