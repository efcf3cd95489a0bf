package localmode

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/activation"
)

// SocketPrefix marks a listen address as a socket passed by systemd's
// socket activation (sd_listen_fds(3)): "fd://http01" is the socket whose
// FileDescriptorName= is http01 in the .socket unit. systemd keeps such a
// socket open while serve restarts, so a CA's validation request that
// arrives then waits in the backlog for the next serve instead of being
// refused.
const SocketPrefix = "fd://"

// activated holds the sockets systemd passed to this process, by name,
// read once (the environment variables are then cleared, so that deploy
// hooks do not inherit them).
var activated = sync.OnceValues(func() (map[string][]net.Listener, error) {
	return activation.ListenersWithNames()
})

// activatedListener returns the socket systemd passed under name. It is
// an error when none was passed under that name, or several were (one
// flag serves one socket).
func activatedListener(flag, name string) (net.Listener, error) {
	if name == "" {
		return nil, fmt.Errorf("--%s %s: want %s<name>, the FileDescriptorName= of a socket in the .socket unit", flag, SocketPrefix, SocketPrefix)
	}
	all, err := activated()
	if err != nil {
		return nil, fmt.Errorf("--%s %s%s: reading the sockets passed by systemd: %w", flag, SocketPrefix, name, err)
	}
	ls := all[name]
	switch {
	case len(ls) == 1 && ls[0] != nil:
		return ls[0], nil
	case len(ls) > 1:
		return nil, fmt.Errorf("--%s %s%s: systemd passed %d sockets named %s, want one (give each ListenStream= its own .socket unit or FileDescriptorName=)", flag, SocketPrefix, name, len(ls), name)
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	passed := "none (not started by a .socket unit, or LISTEN_PID is not this process)"
	if len(names) > 0 {
		passed = strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("--%s %s%s: systemd passed no listening TCP socket named %s (passed: %s); set FileDescriptorName=%s in the .socket unit",
		flag, SocketPrefix, name, name, passed, name)
}
