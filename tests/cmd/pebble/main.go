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
package main

import (
	"context"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"syscall"

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
	tlsOut := flag.String("tls-cert-out", "", "write the ACME server's TLS certificate (PEM) here")
	rootsOut := flag.String("roots-out", "", "write Pebble's root certificates (PEM) here")
	sleep := flag.Bool("va-sleep", false, "keep the VA's random sleeps before validating")
	verbose := flag.Bool("v", false, "log Pebble's activity to stderr")
	flag.Parse()
	if err := run(*listen, *http01Port, *dnsAddr, *tlsOut, *rootsOut, *sleep, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "pebble:", err)
		os.Exit(1)
	}
}

func run(listen string, http01Port int, dnsAddr, tlsOut, rootsOut string, sleep, verbose bool) error {
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
