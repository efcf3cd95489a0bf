package emulators

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The variable the client library reads wins: nothing is started.
func TestGcloudExternal(t *testing.T) {
	for _, e := range []Gcloud{FirestoreEmulator, PubSubEmulator} {
		t.Run(e.Name, func(t *testing.T) {
			t.Setenv(e.EnvVar, " 127.0.0.1:1 ")
			if got, ok := ExternalGcloud(e); got != "127.0.0.1:1" || !ok {
				t.Errorf("ExternalGcloud = %q, %v", got, ok)
			}
			if got := Shared(t, e); got != "127.0.0.1:1" {
				t.Errorf("Shared = %q, want the environment's endpoint", got)
			}
			t.Setenv(e.EnvVar, "  ")
			if _, ok := ExternalGcloud(e); ok {
				t.Error("a blank variable counts as set")
			}
		})
	}
}

// A missing emulator is an error that says what to install and which
// variable to set instead.
func TestGcloudMissing(t *testing.T) {
	for _, e := range []Gcloud{FirestoreEmulator, PubSubEmulator} {
		t.Run(e.Name, func(t *testing.T) {
			_, err := StartGcloudProcess(t.TempDir(), e)
			if !errors.Is(err, ErrGcloudMissing) {
				t.Fatalf("StartGcloudProcess on an empty SDK root: %v, want ErrGcloudMissing", err)
			}
			for _, want := range []string{e.Path, e.Component, e.EnvVar, "gcloud components install"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not mention %q", err, want)
				}
			}
		})
	}
}

// A launcher that exits at once is reported with its output, after a few
// ports were tried.
func TestGcloudExitsEarly(t *testing.T) {
	root := t.TempDir()
	e := FirestoreEmulator
	launcher := filepath.Join(root, filepath.FromSlash(e.Path))
	if err := os.MkdirAll(filepath.Dir(launcher), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, "starts")
	script := fmt.Sprintf("#!/bin/sh\necho started >> %s\necho 'Address already in use' >&2\nexit 1\n", marker)
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := StartGcloudProcess(root, e)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("err = %v, want the early exit with the emulator's output", err)
	}
	b, _ := os.ReadFile(marker)
	if n := strings.Count(string(b), "started"); n != gcloudStartAttempts {
		t.Errorf("started %d times, want %d", n, gcloudStartAttempts)
	}
}

// sdk returns the SDK root or fails t with the missing-install message.
func sdk(t *testing.T, e Gcloud) string {
	t.Helper()
	root, err := SDKRoot()
	if err != nil {
		t.Fatal(gcloudMissing(e, err))
	}
	return root
}

// probe is an HTTP request each emulator answers with 200 when it serves
// (both serve REST next to gRPC on their port).
func probe(e Gcloud, host string) string {
	if e.EnvVar == PubSubEmulator.EnvVar {
		return "http://" + host + "/v1/projects/demo-certfn/topics"
	}
	return "http://" + host + "/"
}

// alive lists the processes of group pgid that are not zombies (PID 1 of
// a container may never reap an orphan, so kill(-pgid, 0) is not enough).
func alive(pgid int) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, s[:i+1]))
	}
	return out
}

// waitGone waits until group pgid has no live process and host refuses
// connections.
func waitGone(t *testing.T, pgid int, host string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		procs := alive(pgid)
		c, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		if len(procs) == 0 && err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulator group %d still running (listening: %v): %v", pgid, err == nil, procs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Each emulator starts on a loopback port and answers; Stop ends its
// whole process group, the JVM included.
func TestGcloudStartStop(t *testing.T) {
	for _, e := range []Gcloud{FirestoreEmulator, PubSubEmulator} {
		t.Run(e.Name, func(t *testing.T) {
			p, err := StartGcloudProcess(sdk(t, e), e)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			h, port, err := net.SplitHostPort(p.Host)
			if err != nil || h != "127.0.0.1" || port == "" {
				t.Fatalf("host %q: want 127.0.0.1:PORT", p.Host)
			}
			resp, err := http.Get(probe(e, p.Host))
			if err != nil {
				t.Fatalf("emulator not answering: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("probe answered %s", resp.Status)
			}
			if len(alive(p.Pgid())) < 2 {
				t.Errorf("process group %d: %v, want the supervisor and the emulator", p.Pgid(), alive(p.Pgid()))
			}
			p.Stop()
			p.Stop() // idempotent
			waitGone(t, p.Pgid(), p.Host)
		})
	}
}

// Firestore and PubSub start one emulator per test binary, on first use.
func TestGcloudShared(t *testing.T) {
	for _, e := range []Gcloud{FirestoreEmulator, PubSubEmulator} {
		t.Run(e.Name, func(t *testing.T) {
			t.Setenv(e.EnvVar, "")
			sdk(t, e)
			get := Firestore
			if e.EnvVar == PubSubEmulator.EnvVar {
				get = PubSub
			}
			first := get(t)
			var second string
			t.Run("again", func(t *testing.T) { second = get(t) })
			if first != second {
				t.Errorf("second call: %q, first %q: want one shared emulator", second, first)
			}
			resp, err := http.Get(probe(e, first))
			if err != nil {
				t.Fatalf("shared emulator not answering: %v", err)
			}
			resp.Body.Close()
		})
	}
}

// helperEnv makes TestGcloudHelperProcess start the shared Firestore
// emulator, print its group and host, and wait to be killed.
const helperEnv = "CERTFN_EMULATORS_GCLOUD_HELPER"

func TestGcloudHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	p, err := StartGcloudProcess(sdk(t, FirestoreEmulator), FirestoreEmulator)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("EMULATOR %d %s\n", p.Pgid(), p.Host)
	time.Sleep(time.Minute) // killed before this ends
}

// When the test binary dies without cleaning up (SIGKILL), its emulator
// goes with it: the supervisor sees its stdin close and kills the group.
func TestGcloudDiesWithTestBinary(t *testing.T) {
	sdk(t, FirestoreEmulator)
	cmd := exec.Command(os.Args[0], "-test.run=^TestGcloudHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var pgid int
	var host string
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "EMULATOR %d %s", &pgid, &host); err == nil {
			break
		}
	}
	if pgid == 0 {
		t.Fatal("helper printed no emulator")
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pgid, host)
}
