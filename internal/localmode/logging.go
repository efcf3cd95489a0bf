package localmode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
)

// LogConfig is how serve logs (--log-level, --log-format, --quiet).
type LogConfig struct {
	// Level is debug, info, warn or error (--log-level; "": info).
	Level string
	// Format is text (logfmt, the default) or json, one object per line
	// with time, level and msg as slog writes them (--log-format).
	Format string
	// Quiet, with --until-idle, writes nothing when the run succeeds:
	// the log is held and written only when it fails (a Certificate is
	// not Ready at its end, or the run errs), whole, so that cron mails
	// the full record of a failing run and nothing otherwise (--quiet).
	Quiet bool
}

// parse returns the level and checks the format, naming the flag.
func (l LogConfig) parse() (slog.Level, error) {
	var level slog.Level
	if l.Level != "" {
		if err := level.UnmarshalText([]byte(l.Level)); err != nil {
			return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.Level)
		}
	}
	switch strings.ToLower(l.Format) {
	case "", "text", "json":
	default:
		return 0, fmt.Errorf("--log-format %q: want text or json", l.Format)
	}
	return level, nil
}

// handler is the slog handler writing to w at level in l's format.
func (l LogConfig) handler(w io.Writer, level slog.Level) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(l.Format, "json") {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// heldWriter holds what is written until Flush (written to w) or
// Discard; safe for concurrent use.
type heldWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

func (h *heldWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.Write(p)
}

// Flush writes what was held to the destination.
func (h *heldWriter) Flush() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(h.buf.Bytes())
	h.buf.Reset()
	return err
}

// Discard forgets what was held.
func (h *heldWriter) Discard() {
	h.mu.Lock()
	h.buf.Reset()
	h.mu.Unlock()
}

// netListen is net.Listen (a test makes it refuse).
var netListen = net.Listen

// listen is net.Listen for the flag that names addr, or the socket
// systemd passed when addr is SocketPrefix + its name; a port below 1024
// refused for lack of privilege says how to allow it.
func listen(flag, addr string) (net.Listener, error) {
	if name, ok := strings.CutPrefix(addr, SocketPrefix); ok {
		return activatedListener(flag, name)
	}
	l, err := netListen("tcp", addr)
	if err == nil {
		return l, nil
	}
	if errors.Is(err, syscall.EACCES) {
		return nil, fmt.Errorf("--%s %s: %w: binding a port below 1024 needs root or the CAP_NET_BIND_SERVICE capability "+
			"(the shipped systemd unit grants it: AmbientCapabilities=CAP_NET_BIND_SERVICE; by hand: sudo setcap cap_net_bind_service=+ep $(command -v certfn)), "+
			"or listen on a high port and forward port 80 to it", flag, addr, err)
	}
	return nil, fmt.Errorf("--%s %s: %w", flag, addr, err)
}
