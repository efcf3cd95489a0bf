package localmode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/internal/explain"
)

// APIOptions configure `certfn serve --api-listen`: the HTTP API of
// docs/api.md over TLS, callers authenticated by client certificates
// (httpapi.X509Caller: CN = user, O = groups), authorized by the bindings.
type APIOptions struct {
	Listen string
	// CertFile and KeyFile are the server's certificate and key (PEM).
	CertFile, KeyFile string
	// ClientCAFile holds the CA certificates client certificates must chain to.
	ClientCAFile string
}

// ListenAPI serves the HTTP API on o.Listen and returns the bound address
// and a function that stops it. Every client must present a certificate
// that chains to o.ClientCAFile.
func (r *Runtime) ListenAPI(o APIOptions) (string, func(), error) {
	if o.CertFile == "" || o.KeyFile == "" || o.ClientCAFile == "" {
		return "", nil, errors.New("--api-listen needs --api-tls-cert, --api-tls-key and --api-client-ca (clients authenticate with certificates)")
	}
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return "", nil, fmt.Errorf("--api-tls-cert/--api-tls-key: %w", err)
	}
	caPEM, err := os.ReadFile(o.ClientCAFile)
	if err != nil {
		return "", nil, fmt.Errorf("--api-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return "", nil, fmt.Errorf("--api-client-ca %s: no PEM certificate in it", o.ClientCAFile)
	}
	svc := &httpapi.Service{Engine: r.Engine, Secrets: func(ctx context.Context, ns, name string) ([]byte, error) {
		s, err := r.Secrets.Get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return s.Data["tls.crt"], nil
	}}
	h, err := httpapi.New(httpapi.Config{Engine: r.Engine, Authenticate: httpapi.X509Caller, Logger: r.Log,
		Status: func(ctx context.Context, caller engine.Caller, key api.Key) (*explain.Report, error) {
			return svc.Status(ctx, caller, key)
		}})
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return "", nil, fmt.Errorf("--api-listen %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert},
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
