package certmanager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
)

// TestThroughTheStep drives certificates.ACMImportStep with this
// importer on the double: a pending operation is a transient error that
// keeps its suggested delay and writes nothing; the next reconcile records
// the resource name in status.acmCertificateARN; a settled Certificate
// costs no call; a renewal is re-imported into the same name.
func TestThroughTheStep(t *testing.T) {
	ctx := context.Background()
	b := newDoubleBackend(t)
	im := b.importer(t, func(o *Options) { o.PendingRetry = 5 * time.Second })
	ca := certtest.NewCA(t)
	crt := certtest.Cert(func(c *api.Certificate) { c.Annotations = map[string]string{api.AnnotationACMImport: "true"} })
	issued := ca.IssueSecret(t, crt, nil, certtest.Leaf{})
	st := certtest.State(crt, &issued.Secret)
	certificates.ApplyReadiness(st)
	step := func() (certificates.Outcome, *certtest.Writer, error) {
		w := &certtest.Writer{}
		env, _, _ := certtest.Env(certtest.NewMemSecrets(), w)
		env.Importer = im
		out, err := certificates.ACMImportStep(ctx, env, st)
		return out, w, err
	}

	b.double.SetOperationPolls(2)
	out, w, err := step()
	if d, ok := errs.SuggestedDelay(err); !errors.Is(err, ErrPending) || errs.IsPermanent(err) || !ok || d != 5*time.Second || out.Wrote || len(w.Calls) != 0 {
		t.Fatalf("first step = %+v, %v (%d writes); want a transient ErrPending retried after 5s, no write", out, err, len(w.Calls))
	}
	b.double.CompleteAll()
	b.double.SetOperationPolls(1)
	if out, _, err = step(); err != nil || !out.Wrote {
		t.Fatalf("second step = %+v, %v; want the import recorded", out, err)
	}
	s := st.Cert.Status
	name := im.Name(st.Key())
	if s.ACMCertificateARN != name || s.ACMCertificateSerial != certificates.FormatACMSerial(issued.Leaf.SerialNumber) ||
		!api.IsTrue(s.Conditions, api.CertificateConditionACMImported) {
		t.Fatalf("status = %q %q %+v; want %s, the serial, ACMImported True", s.ACMCertificateARN, s.ACMCertificateSerial, s.Conditions, name)
	}

	gets := b.double.Calls("GetCertificate")
	if out, _, err = step(); err != nil || out.Wrote || b.double.Calls("GetCertificate") != gets {
		t.Fatalf("settled step = %+v, %v; want nothing done, no call", out, err)
	}

	renewed := ca.IssueSecret(t, st.Cert, nil, certtest.Leaf{})
	st.SetSecret(&renewed.Secret)
	certificates.ApplyReadiness(st)
	if out, _, err = step(); err != nil || !out.Wrote || st.Cert.Status.ACMCertificateARN != name {
		t.Fatalf("renewal step = %+v, %v, ARN %s; want a re-import into %s", out, err, st.Cert.Status.ACMCertificateARN, name)
	}
	if c, _ := b.double.Get(name); c.Updates != 1 || c.Leaf.SerialNumber.Cmp(renewed.Leaf.SerialNumber) != 0 || len(b.double.Names()) != 1 {
		t.Fatalf("the double holds %v (updates %d); want one certificate holding the renewal", b.double.Names(), c.Updates)
	}
}
