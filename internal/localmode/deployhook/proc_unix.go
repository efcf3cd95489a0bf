//go:build unix

package deployhook

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel runs cmd in a process group of its own and makes the
// context's cancellation kill the whole group, not only the shell.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
