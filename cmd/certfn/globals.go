package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/localmode"
)

// globals are the flags and streams every command shares.
type globals struct {
	dataDir   string
	clusterNS string
	as        string
	asGroups  []string
	server    string
	region    string
	// TLS client-certificate authentication for --server (serve --api-listen).
	clientCert, clientKey, serverCA string
	stdin                           io.Reader
	stdout                          io.Writer
	stderr                          io.Writer
	// httpClient, when set, is the remote client's HTTP client (tests).
	httpClient *http.Client

	rt     *localmode.Runtime
	cl     client
	closer func()
}

// runtime opens the local data directory for a one-shot command: the
// engine's queue is the inbox, so a running `certfn serve` picks the work up.
// CERTFN_ACME_SERVER_ALLOW applies to the ACME requests a one-shot
// command makes itself (`certfn revoke`) as to serve's.
func (g *globals) runtime() (*localmode.Runtime, error) {
	if g.rt != nil {
		return g.rt, nil
	}
	rt, err := localmode.Open(localmode.Options{DataDir: g.dataDir, ClusterResourceNamespace: g.clusterNS, QueueToInbox: true,
		ACME: localmode.ACMEOptions{ServerAllow: envList("CERTFN_ACME_SERVER_ALLOW")}})
	if err != nil {
		return nil, err
	}
	g.rt, g.closer = rt, func() { _ = rt.Close() }
	return rt, nil
}

// caller is the identity of this CLI call. The local user — whoever can
// open the data directory — is "local:<os user>" in the groups
// system:authenticated, certfn:local and system:masters (allowed everything, like a
// cluster admin). --as/--as-group act as another identity, which gets only
// what the bindings grant it (see docs/policy.md).
func (g *globals) caller() app.Caller {
	if g.as != "" {
		return app.Caller{Username: g.as, Groups: append([]string{"system:authenticated"}, g.asGroups...)}
	}
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return app.Caller{Username: "local:" + name, Groups: []string{"system:authenticated", "certfn:local", app.SuperuserGroup}}
}

// resolveKey turns CLI arguments into a key, defaulting the namespace.
func resolveKey(kindName, name, namespace string) (api.Key, api.KindInfo, error) {
	info, ok := api.KindForName(kindName)
	if !ok {
		return api.Key{}, info, fmt.Errorf("unknown resource type %q (try certificates, certificaterequests, issuers, clusterissuers)", kindName)
	}
	k := api.Key{Kind: info.Kind, Name: name}
	if info.Namespaced {
		k.Namespace = namespace
	}
	return k, info, nil
}
