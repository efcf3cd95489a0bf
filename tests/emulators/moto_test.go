package emulators

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// moto_server starts on a loopback port, answers its own API, is shared by
// the binary's tests, and its whole process group is gone after Stop.
func TestMotoStartStop(t *testing.T) {
	ep := Moto(t)
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Fatalf("Moto = %q: want http://127.0.0.1:PORT", ep)
	}
	if again := Moto(t); again != ep {
		t.Errorf("second Moto = %q, want the shared %q", again, ep)
	}
	resp, err := http.Get(ep + "/moto-api/data.json")
	if err != nil {
		t.Fatalf("moto not answering: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
		t.Errorf("GET /moto-api/data.json: %s %.80q", resp.Status, body)
	}

	// A second, private server, to check Stop (the shared one lives until
	// the binary exits).
	p, err := StartMoto()
	if err != nil {
		t.Fatal(err)
	}
	if p.Host == u.Host {
		t.Fatalf("private server on the shared one's port %s", p.Host)
	}
	if len(alive(p.Pgid())) < 2 {
		t.Errorf("process group %d: %v, want the supervisor and moto_server", p.Pgid(), alive(p.Pgid()))
	}
	p.Stop()
	p.Stop()                      // idempotent
	waitGone(t, p.Pgid(), p.Host) // SIGKILL is delivered asynchronously
}

// A missing moto_server says what to install, and in CI that the image is
// broken.
func TestMotoMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	_, err := StartMoto()
	if !errors.Is(err, ErrMotoMissing) || !strings.Contains(err.Error(), "moto[server]") {
		t.Errorf("StartMoto without moto_server: %v, want ErrMotoMissing naming moto[server]", err)
	}
	t.Setenv("CI", "true")
	if _, err := StartMoto(); err == nil || !strings.Contains(err.Error(), "in CI") {
		t.Errorf("StartMoto in CI without moto_server: %v, want the CI message", err)
	}
}
