// Command pebble starts Let's Encrypt's test ACME server (Pebble) with an
// in-process DNS server (challtestsrv) that answers 127.0.0.1 for every
// name, for the demo and manual testing. It is a development tool: it is
// not part of the certfn binary.
//
//	go run ./tests/cmd/pebble -listen 127.0.0.1:14000 -http01-port 5002 -tls-cert-out pebble-tls.pem
//
// The ACME directory is https://<listen>/dir, served with a self-signed
// TLS certificate written to -tls-cert-out (use it as the issuer's
// caBundle). Pebble's VA validates HTTP-01 challenges on 127.0.0.1:<http01-port>
// (run `certfn serve --http01-listen 127.0.0.1:<http01-port>`). Pebble's
// root certificates are written to -roots-out for verifying issued
// certificates. It stops on SIGINT/SIGTERM.
//
// With -dns-management 127.0.0.1:8055, the DNS server's TXT records can be
// set from another process through the management HTTP API of Pebble's
// pebble-challtestsrv command (POST /set-txt {"host","value"}, POST
// /clear-txt {"host"}), so DNS-01 challenges can be answered by
// `certfn serve --dns01-challtestsrv http://127.0.0.1:8055
// --dns01-nameservers <dns>` (the demo's wildcard certificate). The API
// has no authentication: it listens on loopback addresses only.
package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:14000", "address of the ACME server (HTTPS)")
	http01Port := flag.Int("http01-port", 5002, "port Pebble's VA connects to for HTTP-01 validations")
	dnsAddr := flag.String("dns", "127.0.0.1:8053", "address of the in-process DNS server (answers 127.0.0.1 for every name)")
	mgmtAddr := flag.String("dns-management", "", "serve the DNS server's management HTTP API (POST /set-txt, /clear-txt, as pebble-challtestsrv) on this loopback address, e.g. 127.0.0.1:8055 (empty: off)")
	tlsOut := flag.String("tls-cert-out", "", "write the ACME server's TLS certificate (PEM) here")
	rootsOut := flag.String("roots-out", "", "write Pebble's root certificates (PEM) here")
	sleep := flag.Bool("va-sleep", false, "keep the VA's random sleeps before validating")
	verbose := flag.Bool("v", false, "log Pebble's activity to stderr")
	flag.Parse()
	if err := run(*listen, *http01Port, *dnsAddr, *mgmtAddr, *tlsOut, *rootsOut, *sleep, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "pebble:", err)
		os.Exit(1)
	}
}

func run(listen string, http01Port int, dnsAddr, mgmtAddr, tlsOut, rootsOut string, sleep, verbose bool) error {
	// Pebble reads these in va.New and wfe.New.
	if !sleep {
		os.Setenv("PEBBLE_VA_NOSLEEP", "1")
	}
	if os.Getenv("PEBBLE_WFE_NONCEREJECT") == "" {
		os.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	}
	if os.Getenv("PEBBLE_AUTHZREUSE") == "" {
		os.Setenv("PEBBLE_AUTHZREUSE", "0")
	}
	out := io.Discard
	if verbose {
		out = os.Stderr
	}
	logger := log.New(out, "pebble ", log.LstdFlags)
	dns, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{dnsAddr}, Log: log.New(out, "dns ", 0)})
	if err != nil {
		return err
	}
	dns.SetDefaultDNSIPv4("127.0.0.1")
	dns.SetDefaultDNSIPv6("")
	go dns.Run()
	defer dns.Shutdown()
	if mgmtAddr != "" {
		// Bound before the roots are written: a caller waiting for
		// -roots-out finds the management API ready.
		ml, err := listenLoopback(mgmtAddr)
		if err != nil {
			return fmt.Errorf("-dns-management: %w", err)
		}
		ms := &http.Server{Handler: managementHandler(dns, logger), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := ms.Serve(ml); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Printf("management API: %v", err)
			}
		}()
		defer ms.Close()
	}

	store := db.NewMemoryStore()
	cai := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	vai := va.New(logger, http01Port, 0, false, dnsAddr, store)
	w := wfe.New(logger, store, vai, cai, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := httptest.NewUnstartedServer(w.Handler())
	srv.Listener = l
	srv.StartTLS()
	defer srv.Close()
	if tlsOut != "" {
		b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := os.WriteFile(tlsOut, b, 0o644); err != nil {
			return err
		}
	}
	if rootsOut != "" {
		var b []byte
		for i := 0; i < cai.GetNumberOfRootCerts(); i++ {
			b = append(b, cai.GetRootCert(i).PEM()...)
		}
		if err := os.WriteFile(rootsOut, b, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("pebble: ACME directory %s%s; HTTP-01 validations on 127.0.0.1:%s; DNS on %s\n", srv.URL, wfe.DirectoryPath, strconv.Itoa(http01Port), dnsAddr)
	if mgmtAddr != "" {
		fmt.Printf("pebble: DNS management API on http://%s (POST /set-txt, /clear-txt)\n", mgmtAddr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// listenLoopback listens on addr, whose host must be a loopback IP or
// "localhost": the management API lets anyone who reaches it change the
// DNS answers Pebble's VA sees.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%q: the host must be a loopback address (127.0.0.1, ::1 or localhost)", addr)
	}
	return net.Listen("tcp", addr)
}

// txtRequest is the JSON body of /set-txt and /clear-txt, as
// pebble-challtestsrv reads it (field names match case-insensitively).
type txtRequest struct {
	Host  string `json:"host"`
	Value string `json:"value"`
}

// managementHandler serves the TXT part of pebble-challtestsrv's
// management API on srv: POST /set-txt {"host","value"} adds a value to a
// name (both required), POST /clear-txt {"host"} removes all of a name's
// values. A missing field or a body that is not JSON is 400, another
// method 405; success is 200 with an empty body.
func managementHandler(srv *challtestsrv.ChallSrv, logger *log.Logger) http.Handler {
	decode := func(w http.ResponseWriter, r *http.Request, needValue bool) (txtRequest, bool) {
		var req txtRequest
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed: use POST", http.StatusMethodNotAllowed)
			return req, false
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
			http.Error(w, "body: not a JSON object: "+err.Error(), http.StatusBadRequest)
			return req, false
		}
		if req.Host == "" {
			http.Error(w, "host: required", http.StatusBadRequest)
			return req, false
		}
		if needValue && req.Value == "" {
			http.Error(w, "value: required", http.StatusBadRequest)
			return req, false
		}
		return req, true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/set-txt", func(w http.ResponseWriter, r *http.Request) {
		if req, ok := decode(w, r, true); ok {
			srv.AddDNSTXTRecord(req.Host, req.Value)
			logger.Printf("set TXT %s", req.Host)
		}
	})
	mux.HandleFunc("/clear-txt", func(w http.ResponseWriter, r *http.Request) {
		if req, ok := decode(w, r, false); ok {
			srv.DeleteDNSTXTRecord(req.Host)
			logger.Printf("cleared TXT %s", req.Host)
		}
	})
	return mux
}
