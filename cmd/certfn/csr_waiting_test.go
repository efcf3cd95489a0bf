package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// `create csr --wait` says why the request waits, from its Event, each
// time that changes (waiting for approval with the approver's message,
// then, once approved, why the signer waits), and repeats the last on a
// timeout; describe csr shows the Event, get csr kubectl's Pending.
// Local mode, with `certfn serve --approver policy` and no policies, so
// nobody approves.
func TestCreateCSRWaitSaysWhy(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_APPROVER", "")
	work := t.TempDir()
	serveInBackground(t, dir, "--sweep-interval", "100ms", "--approver", "policy")
	key := writeKey(t, work)

	// Nobody approves: the reason is printed, and repeated on timeout.
	r := cli(t, dir, "", "create", "csr", "--name", "nobody", "--key", key, "--signer-name", "clusterissuers.cert-manager.io/nothere",
		"--common-name", "app.example.com", "--timeout", "2s")
	const why = `no policy applies to requester "local:root" for issuer ClusterIssuer "nothere"`
	if r.code != 1 || !strings.Contains(r.stderr, "certificatesigningrequest.certificates.k8s.io/nobody: waiting for approval: "+why) ||
		!strings.Contains(r.stderr, "; last: waiting for approval: "+why) {
		t.Fatalf("create csr nobody approves: %d\n%s", r.code, r.stderr)
	}
	if s := ok(t, dir, "describe", "csr", "nobody"); !strings.Contains(s, "Events:\n  Type    Reason           Age   From    Message\n") || !strings.Contains(s, "  Normal  WaitingApproval  ") || !strings.Contains(s, why) {
		t.Fatalf("describe csr:\n%s", s)
	}
	if s := ok(t, dir, "get", "csr", "nobody"); !strings.Contains(s, "Pending") {
		t.Fatalf("get csr:\n%s", s)
	}

	// Approved while it waits: the signer's reason follows (the wait is
	// ended once it is printed).
	var out, errb syncBuffer
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	waited := make(chan int, 1)
	go func() {
		waited <- run(wctx, []string{"--data", dir, "create", "csr", "--name", "later", "--key", key, "--signer-name",
			"clusterissuers.cert-manager.io/nothere", "--common-name", "app.example.com", "--timeout", "30s"}, strings.NewReader(""), &out, &errb)
	}()
	first := "later: waiting for approval: " + why
	then := `later: approved, waiting for the signer: ClusterIssuer "nothere" not found`
	approved := false
	for i := 0; !strings.Contains(errb.String(), then); i++ {
		if !approved && strings.Contains(errb.String(), first) {
			ok(t, dir, "certificate", "approve", "later")
			approved = true
		}
		if i == 200 {
			t.Fatalf("create csr approved while waiting:\n%s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-waited
	if lines := errb.String(); strings.Index(lines, first) > strings.Index(lines, then) {
		t.Fatalf("out of order:\n%s", lines)
	}
}

// get csr's CONDITION is kubectl's (extractCSRStatus in its printers):
// Denied over Approved over Pending, then ,Failed and ,Issued; a
// condition counts whatever its status.
func TestCSRConditionColumnIsKubectls(t *testing.T) {
	cond := func(types ...string) []api.CSRCondition {
		var out []api.CSRCondition
		for _, ty := range types {
			out = append(out, api.CSRCondition{Type: ty, Status: api.ConditionTrue})
		}
		return out
	}
	for _, tc := range []struct {
		conds  []api.CSRCondition
		issued bool
		want   string
	}{
		{nil, false, "Pending"},
		{cond("Approved"), false, "Approved"},
		{cond("Approved"), true, "Approved,Issued"},
		{cond("Denied"), false, "Denied"},
		{cond("Approved", "Failed"), false, "Approved,Failed"},
		{cond("Failed"), false, "Pending,Failed"},
		{cond("Failed", "Approved"), false, "Approved,Failed"},
		{[]api.CSRCondition{{Type: "Approved", Status: api.ConditionFalse}}, false, "Approved"},
		{cond("SomethingElse"), false, "Pending"},
	} {
		c := &api.CertificateSigningRequest{Status: api.CertificateSigningRequestStatus{Conditions: tc.conds}}
		if tc.issued {
			c.Status.Certificate = []byte("pem")
		}
		if got := csrCondition(c); got != tc.want {
			t.Errorf("%+v issued=%v: %q, want %q", tc.conds, tc.issued, got, tc.want)
		}
	}
}
