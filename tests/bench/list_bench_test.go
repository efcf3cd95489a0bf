package bench

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, to fill the fixture

	"github.com/certfn/certfn/core/api"
)

// listCerts is how many Certificates the listing benchmark stores.
const listCerts = 50_000

// BenchmarkGetCertificatesAll measures `certfn get certificates -A` on a
// local data directory holding 50,000 Ready Certificates (in 50
// namespaces), run as the user runs it: the certfn binary (built once),
// reading its standard output. It reports the time to the first line of
// output, the time to the last, and the process's peak resident memory
// (getrusage maxrss), for the default --chunk-size (500, as kubectl) and
// for --chunk-size 0 (everything in one read, as before chunking).
func BenchmarkGetCertificatesAll(b *testing.B) {
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "certfn")
	build := exec.Command("go", "build", "-o", bin, "github.com/certfn/certfn/cmd/certfn")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatalf("go build: %v", err)
	}
	data := filepath.Join(tmp, "data")
	apply := exec.Command(bin, "--data", data, "apply", "-f", "-")
	apply.Stdin = strings.NewReader("apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: ca}\nspec: {selfSigned: {}}\n")
	if out, err := apply.CombinedOutput(); err != nil {
		b.Fatalf("certfn apply (creates the data directory): %v\n%s", err, out)
	}
	if err := fillCertificates(filepath.Join(data, "state.db"), listCerts); err != nil {
		b.Fatal(err)
	}
	for _, chunk := range []string{"500", "0"} {
		b.Run("chunk-size="+chunk, func(b *testing.B) {
			var first, total time.Duration
			var rss int64
			for b.Loop() {
				f, t, r, lines := runGet(b, bin, data, chunk)
				if lines != listCerts+1 {
					b.Fatalf("%d lines of output, want %d rows and a header", lines, listCerts)
				}
				first += f
				total += t
				rss = max(rss, r)
			}
			n := float64(b.N)
			b.ReportMetric(first.Seconds()/n, "s-first-output")
			b.ReportMetric(total.Seconds()/n, "s-total")
			b.ReportMetric(float64(rss)/(1<<20), "MB-peak-rss")
		})
	}
}

// runGet runs certfn get certificates -A and returns the time to its
// first line, the time to its exit, its peak RSS in bytes, and how many
// lines it printed.
func runGet(b *testing.B, bin, data, chunk string) (first, total time.Duration, rss int64, lines int) {
	cmd := exec.Command(bin, "--data", data, "get", "certificates", "-A", "--chunk-size", chunk)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(out, 1<<16)
	for {
		_, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if lines == 0 {
			first = time.Since(start)
		}
		lines++
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("certfn get: %v", err)
	}
	total = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return first, total, rss, lines
}

// fillCertificates inserts n Ready Certificates into the resources table
// of the state database at path, in one transaction (n applies would
// measure issuance, not listing).
func fillCertificates(path string, n int) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.Prepare(`INSERT INTO resources (kind, namespace, name, version, owner, next_run_at, data) VALUES (?, ?, ?, 1, '', ?, ?)`)
	if err != nil {
		return fmt.Errorf("fixture: %w (has the state schema changed?)", err)
	}
	created := api.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	notAfter := api.NewTime(time.Date(2027, 1, 30, 0, 0, 0, 0, time.UTC))
	renew := api.NewTime(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC))
	for i := range n {
		ns, name := fmt.Sprintf("team-%02d", i%50), fmt.Sprintf("web-%05d", i)
		c := api.Certificate{
			TypeMeta:   api.TypeMeta{APIVersion: "cert-manager.io/v1", Kind: api.KindCertificate},
			ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name, UID: fmt.Sprintf("uid-%d", i), ResourceVersion: "1", Generation: 1, CreationTimestamp: created},
			Spec: api.CertificateSpec{SecretName: name + "-tls", DNSNames: []string{name + "." + ns + ".example.com"},
				IssuerRef: api.IssuerReference{Name: "ca", Kind: api.KindClusterIssuer}},
			Status: api.CertificateStatus{NotAfter: notAfter, RenewalTime: renew, Conditions: []api.Condition{{
				Type: "Ready", Status: api.ConditionTrue, Reason: "Ready", Message: "Certificate is up to date and has not expired",
				ObservedGeneration: 1, LastTransitionTime: created}}},
		}
		data, err := json.Marshal(&c)
		if err != nil {
			return err
		}
		if _, err := ins.Exec(api.KindCertificate, ns, name, renew.Time.UnixNano(), data); err != nil {
			return fmt.Errorf("fixture: insert %s/%s: %w", ns, name, err)
		}
	}
	return tx.Commit()
}
