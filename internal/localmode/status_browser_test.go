package localmode

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/chromedp"

	"github.com/certfn/certfn/core/app"
)

// chromiumPath returns Debian's Chromium (`make deps` installs it). When
// it is missing the test is skipped, except in CI (CI=true), where that
// is a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (make deps installs it); CI runs the status page in a real browser")
	}
	t.Skip("chromium is not installed: run `make deps` (CI fails here)")
	return ""
}

// The status page in headless Chromium: the page renders under its
// Content-Security-Policy (its style sheet applies: the hash in the policy
// is right; no script element), shows a row per Certificate, the renewal
// timeline in time order and a failure with its blocker line, read from
// the DOM; a screenshot is a PNG of the viewport's size.
func TestStatusPageInChromium(t *testing.T) {
	exe := chromiumPath(t)
	rt := statusRuntime(t)
	admin := statusAdmin
	srv := httptest.NewServer(rt.statusHandler(func(*http.Request) (*app.Caller, error) { return &admin, nil }))
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	const width, height = 1280, 900
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(width, height), chromedp.Navigate(srv.URL+"/status"),
		chromedp.WaitVisible(chromedp.ID("failures"))); err != nil {
		t.Fatal(err)
	}
	run := func(what string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var title, blocker, sweep string
	var rows, renewals, failures, scripts []*chromedp.Node
	var falseStyle []*css.ComputedStyleProperty
	var shot []byte
	var err error
	run("title", func() error { title, err = chromedp.Run(bctx, chromedp.Title()); return err })
	run("rows", func() error {
		rows, err = chromedp.Run(bctx, chromedp.Nodes(chromedp.CSSAll("#certificates tbody tr")))
		return err
	})
	run("renewals", func() error {
		renewals, err = chromedp.Run(bctx, chromedp.Nodes(chromedp.CSSAll("#renewals li")))
		return err
	})
	run("failures", func() error {
		failures, err = chromedp.Run(bctx, chromedp.Nodes(chromedp.CSSAll("#failures li")))
		return err
	})
	run("scripts", func() error {
		scripts, err = chromedp.Run(bctx, chromedp.Nodes(chromedp.CSSAll("script"), chromedp.AtLeast(0)))
		return err
	})
	run("blocker", func() error {
		blocker, err = chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#failures li[data-certificate="default/orphan"] .blocker`)))
		return err
	})
	run("sweep", func() error { sweep, err = chromedp.Run(bctx, chromedp.Text(chromedp.ID("sweep"))); return err })
	run("style", func() error {
		falseStyle, err = chromedp.Run(bctx, chromedp.ComputedStyle(chromedp.CSS(`#certificates tr[data-certificate="default/orphan"] td.False`)))
		return err
	})
	run("screenshot", func() error { shot, err = chromedp.Run(bctx, chromedp.CaptureScreenshot()); return err })
	// The style sheet applied: the policy's hash of it is right.
	color := ""
	for _, p := range falseStyle {
		if p.Name == "color" {
			color = p.Value
		}
	}
	if color != "rgb(176, 0, 32)" {
		t.Errorf("a False Ready cell's color is %q: the style sheet was refused", color)
	}
	if title != "certfn status" {
		t.Errorf("title %q", title)
	}
	attr := func(ns []*chromedp.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.AttributeValue("data-certificate"))
		}
		return out
	}
	if got, want := strings.Join(attr(rows), " "), "cert-manager/demo-ca default/orphan default/web team-a/api team-a/broken"; got != want {
		t.Errorf("certificate rows %q, want %q", got, want)
	}
	// Sorted by renewal time: api (30 days, renews at 20), web (90 days,
	// at 60), the CA (ten years).
	if got, want := strings.Join(attr(renewals), " "), "team-a/api default/web cert-manager/demo-ca"; got != want {
		t.Errorf("renewal timeline %q, want %q", got, want)
	}
	if got, want := strings.Join(attr(failures), " "), "default/orphan team-a/broken"; got != want {
		t.Errorf("failures %q, want %q", got, want)
	}
	if want := `Not ready: Issuer "missing" does not exist in namespace default`; blocker != want {
		t.Errorf("blocker line %q, want %q", blocker, want)
	}
	if !strings.Contains(sweep, "Last sweep: 20") || !strings.Contains(sweep, "Ready.") {
		t.Errorf("sweep line %q", sweep)
	}
	if len(scripts) != 0 {
		t.Errorf("%d script elements", len(scripts))
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != width || b.Dy() != height {
		t.Errorf("screenshot %dx%d, want the viewport's %dx%d", b.Dx(), b.Dy(), width, height)
	}
	// Not a blank page: some pixels differ from the top-left one.
	first, distinct := img.At(b.Min.X, b.Min.Y), 0
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			if img.At(x, y) != first {
				distinct++
			}
		}
	}
	if distinct < 100 {
		t.Errorf("the screenshot is blank (%d sampled pixels differ from the background)", distinct)
	}
	if dir := os.Getenv("CERTFN_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(dir+"/status.png", shot, 0o644)
	}
}
