// Command certfn is certfn's Cloud Run container on Google Cloud: one
// image for every service, the role chosen by CERTFN_FUNCTION (worker,
// signer, scheduler, api, http01). Configuration comes from environment
// variables (infra/terraform/gcp/README.md lists them); internal/gcpmode
// assembles the service and serves its routes on $PORT (default 8080).
// With CERTFN_INIT_ONLY=1 it exits right after initialisation (cold-start
// measurement).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/certfn/certfn/internal/gcpmode"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "certfn:", err)
		os.Exit(1)
	}
}

func run() error {
	role := string(strings.TrimSpace(os.Getenv(gcpmode.EnvFunction)))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rt, err := gcpmode.FromEnv(ctx, role)
	if err != nil {
		return err
	}
	if v, _ := strconv.ParseBool(os.Getenv("CERTFN_INIT_ONLY")); v {
		return nil
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	srv := &http.Server{Addr: ":" + port, Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		// Cloud Run sends SIGTERM and allows 10 s before SIGKILL.
		sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
