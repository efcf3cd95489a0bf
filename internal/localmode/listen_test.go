package localmode

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A listener refused for lack of privilege (a port below 1024 without
// root) says how to allow it: CAP_NET_BIND_SERVICE, as the unit grants;
// another failure is named by its flag only.
func TestListenExplainsPermissionDenied(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []string
		not  string
	}{
		{"permission denied", &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)},
			[]string{"--http01-listen :80: ", "permission denied", "CAP_NET_BIND_SERVICE", "AmbientCapabilities=CAP_NET_BIND_SERVICE", "setcap"}, ""},
		{"in use", &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)},
			[]string{"--http01-listen :80: ", "address already in use"}, "CAP_NET_BIND_SERVICE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := netListen
			netListen = func(string, string) (net.Listener, error) { return nil, tc.err }
			defer func() { netListen = old }()
			_, err := listen("http01-listen", ":80")
			if err == nil || !errors.Is(err, tc.err.(*net.OpError).Err.(*os.SyscallError).Err) {
				t.Fatalf("listen: %v, want it to wrap %v", err, tc.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("listen: %v, want %q", err, w)
				}
			}
			if tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("listen: %v names %q", err, tc.not)
			}
		})
	}
}
