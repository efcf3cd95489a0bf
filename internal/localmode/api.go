package localmode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/kubeapi"
)

// APIOptions configure `certfn serve --api-listen`: the HTTP API of
// docs/reference/api.md and the Kubernetes API (adapters/kubeapi) over TLS, callers authenticated by client certificates
// (httpapi.X509Caller: CN = user, O = groups), authorized by the bindings.
type APIOptions struct {
	Listen string
	// CertFile and KeyFile are the server's certificate and key (PEM).
	CertFile, KeyFile string
	// ClientCAFile holds the CA certificates client certificates must chain to.
	ClientCAFile string
}

// ListenAPI serves the HTTP API on o.Listen, and the status page on
// /status, and returns the bound address and a function that stops it.
// Every client must present a certificate that chains to o.ClientCAFile.
func (r *Runtime) ListenAPI(o APIOptions) (string, func(), error) {
	if o.CertFile == "" || o.KeyFile == "" || o.ClientCAFile == "" {
		return "", nil, errors.New("--api-listen needs --api-tls-cert, --api-tls-key and --api-client-ca (clients authenticate with certificates)")
	}
	files := &tlsFiles{label: "api", certFile: o.CertFile, keyFile: o.KeyFile, caFile: o.ClientCAFile, warn: r.Log.Warn}
	if _, err := files.config(time.Now()); err != nil {
		return "", nil, err
	}
	h, err := httpapi.New(httpapi.Config{Service: r.App.Service, Authenticate: httpapi.X509Caller, Logger: r.Log})
	if err != nil {
		return "", nil, err
	}
	// The Kubernetes API (kubectl) beside certfn's /v1 routes.
	version, _, _ := r.buildInfo()
	kube, err := kubeapi.New(kubeapi.Config{Service: r.App.Service, Authenticate: httpapi.X509Caller, Logger: r.Log, Version: version})
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("/status", r.statusHandler(x509StatusCaller)) // the status page (status.go)
	for _, p := range kubeapi.Paths() {
		mux.Handle(p, kube)
	}
	l, err := listen("api-listen", o.Listen)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return files.config(time.Now())
		}},
		// Refused handshakes (no or a foreign client certificate) are
		// logged at debug level, not printed on stderr.
		ErrorLog: slog.NewLogLogger(r.Log.Handler(), slog.LevelDebug)}
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.Log.Warn("api", "err", err)
		}
	}()
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// tlsFiles is the API's TLS configuration read from files, read again
// when a file's modification time changes (checked at most every
// reloadEvery): a server certificate that certfn itself renews (the
// secret's files are replaced atomically) is picked up without a restart,
// and so is a new client CA bundle.
type tlsFiles struct {
	// label names the listener in log lines ("api", "metrics").
	label                     string
	certFile, keyFile, caFile string
	// warn, when set, is told why changed files were not taken (the last
	// good configuration stays in use).
	warn func(msg string, args ...any)

	mu      sync.Mutex
	cfg     *tls.Config
	mods    [3]time.Time
	checked time.Time
}

const reloadEvery = 10 * time.Second

func (f *tlsFiles) warnf(msg string, args ...any) {
	if f.warn != nil {
		label := f.label
		if label == "" {
			label = "api"
		}
		f.warn(label+" "+msg, args...)
	}
}

func (f *tlsFiles) config(now time.Time) (*tls.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cfg != nil && now.Sub(f.checked) < reloadEvery {
		return f.cfg, nil
	}
	f.checked = now
	var mods [3]time.Time
	for i, name := range []string{f.certFile, f.keyFile, f.caFile} {
		st, err := os.Stat(name)
		if err != nil {
			if f.cfg != nil {
				f.warnf("TLS: keeping the loaded configuration", "err", err)
				return f.cfg, nil // keep serving with what was loaded
			}
			return nil, fmt.Errorf("--api-tls-cert/--api-tls-key/--api-client-ca: %w", err)
		}
		mods[i] = st.ModTime()
	}
	if f.cfg != nil && mods == f.mods {
		return f.cfg, nil
	}
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		if f.cfg != nil {
			f.warnf("TLS: the changed certificate or key was not taken; keeping the loaded one", "err", err)
			return f.cfg, nil // a half-replaced pair: the next check loads it
		}
		return nil, fmt.Errorf("--api-tls-cert/--api-tls-key: %w", err)
	}
	caPEM, err := os.ReadFile(f.caFile)
	if err != nil {
		if f.cfg != nil {
			f.warnf("TLS: the client CA file could not be read; the loaded CAs stay trusted", "err", err)
			return f.cfg, nil
		}
		return nil, fmt.Errorf("--api-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		if f.cfg != nil {
			f.warnf("TLS: the changed client CA file holds no PEM certificate; the loaded CAs stay trusted", "file", f.caFile)
			return f.cfg, nil
		}
		return nil, fmt.Errorf("--api-client-ca %s: no PEM certificate in it", f.caFile)
	}
	f.cfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	f.mods = mods
	return f.cfg, nil
}

// CertificatePEM returns the tls.crt of the secret namespace/name (what
// `status` shows of a secret; never the key).
func (r *Runtime) CertificatePEM(ctx context.Context, namespace, name string) ([]byte, error) {
	return r.App.Service.CertificatePEM(ctx, namespace, name)
}
