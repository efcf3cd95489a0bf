package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newWait(t *target, std streams) *cobra.Command {
	var ns, forCond string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "wait (TYPE NAME | TYPE/NAME) --for=condition=Ready [--timeout 60s]",
		Short: "Wait until a resource has a condition (exit 1 on timeout, or at once on a permanent failure, with the blocker)",
		Long: `Wait until a resource has a condition, as kubectl wait does. For a Certificate each
line names what blocks it, down to the ACME Challenge and the ACME server's error; the
wait ends at once, with exit status 1, when the blocker is permanent (the request was
denied or failed, the issuer is misconfigured), and says when no certfn serve runs on
the data directory. The object waited for is the one named, never another: the answer
of the server must be that object.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cond, want, err := parseFor(forCond)
			if err != nil {
				return err
			}
			kind, name := "", ""
			switch {
			case len(args) == 1:
				var ok bool
				if kind, name, ok = strings.Cut(args[0], "/"); !ok || kind == "" || name == "" {
					return fmt.Errorf("%q: want TYPE NAME or TYPE/NAME", args[0])
				}
			case strings.Contains(args[0], "/"):
				return fmt.Errorf("want TYPE NAME or TYPE/NAME, not both")
			default:
				kind, name = args[0], args[1]
			}
			if name == "" {
				return fmt.Errorf("wait: the name is empty")
			}
			k, _, err := resolveKey(kind, name, ns)
			if err != nil {
				return err
			}
			cl, err := t.client(cmd.Context(), readsData)
			if err != nil {
				return err
			}
			tty := isTTY(std.out)
			interval := 200 * time.Millisecond
			if t.remote.enabled() {
				interval = 2 * time.Second // each poll is a signed API request
			}
			deadline := time.Now().Add(timeout)
			last := ""
			noServe := t.noServeNote()
			for {
				o, err := cl.Get(cmd.Context(), k)
				line := ""
				switch {
				case err == nil:
				case errors.Is(err, ports.ErrNotFound):
					// As kubectl wait: the object named must exist.
					return exitError{code: 1, err: fmt.Errorf("%s %q not found", resourceOf(k), k.Name)}
				case errors.Is(err, app.ErrForbidden), isUnauthenticated(err):
					return err // waiting cannot help
				default:
					line = "error: " + err.Error() // e.g. the network: try again
				}
				if err == nil && api.KeyOf(o) != k {
					return fmt.Errorf("asked for %s, got %s", k, api.KeyOf(o))
				}
				if err == nil {
					conds := conditionsOf(o)
					if c := api.FindCondition(conds, cond); c != nil {
						if string(c.Status) == want {
							if tty {
								fmt.Fprint(std.out, "\r\033[K")
							}
							fmt.Fprintf(std.out, "%s condition met: %s=%s\n", displayKey(k), cond, want)
							return nil
						}
						line = fmt.Sprintf("%s=%s (%s) %s", cond, c.Status, c.Reason, c.Message)
					} else {
						line = "no " + cond + " condition yet"
					}
					if _, ok := o.(*api.Certificate); ok && cond == api.CertificateConditionReady && want == "True" {
						// The whole chain names the blocker, down to the
						// ACME Challenge; a permanent one ends the wait.
						rep, err := cl.Status(cmd.Context(), k)
						if err == nil {
							line = rep.Summary
							if rep.Permanent {
								if tty {
									fmt.Fprint(std.out, "\r\033[K")
								}
								return exitError{code: 1, err: fmt.Errorf("%s will not become %s=%s without a change: %s", displayKey(k), cond, want, rep.Summary)}
							}
						}
					}
				}
				if noServe != "" {
					line += " (" + noServe + ")"
				}
				if tty {
					fmt.Fprintf(std.out, "\r\033[Kwaiting for %s: %s", displayKey(k), truncate(line, 120))
				} else if line != last {
					fmt.Fprintf(std.out, "waiting for %s: %s\n", displayKey(k), line)
				}
				last = line
				if time.Now().After(deadline) {
					if tty {
						fmt.Fprintln(std.out)
					}
					return exitError{code: 1, err: fmt.Errorf("timed out after %s waiting for %s %s=%s; last: %s", timeout, displayKey(k), cond, want, last)}
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(interval):
				}
			}
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().StringVar(&forCond, "for", "condition=Ready", "condition=TYPE[=STATUS] (STATUS defaults to True)")
	c.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long to wait")
	return c
}

func parseFor(s string) (cond, status string, err error) {
	parts := strings.Split(s, "=")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "condition" || parts[1] == "" {
		return "", "", fmt.Errorf("--for %q: want condition=TYPE or condition=TYPE=STATUS", s)
	}
	status = "True"
	if len(parts) == 3 {
		status = parts[2]
	}
	return parts[1], status, nil
}

func conditionsOf(o api.Object) []api.Condition {
	switch v := o.(type) {
	case *api.Certificate:
		return v.Status.Conditions
	case *api.CertificateRequest:
		return v.Status.Conditions
	case api.GenericIssuer:
		return v.GetStatus().Conditions
	case *api.CertificateSigningRequest:
		out := make([]api.Condition, 0, len(v.Status.Conditions))
		for _, c := range v.Status.Conditions {
			out = append(out, api.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
		return out
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func isTTY(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// resourceOf is k's kind as kubectl names it in errors: the plural and
// the API group ("certificates.cert-manager.io"; "namespaces" for the
// core group).
func resourceOf(k api.Key) string {
	info, _ := api.KindInfoFor(k.Kind)
	group, _, ok := strings.Cut(info.APIVersion, "/")
	if !ok || group == "" {
		return info.Plural
	}
	return info.Plural + "." + group
}
