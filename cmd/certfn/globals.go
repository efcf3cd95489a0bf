package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

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
	// auth, audience and token choose and configure the remote client's
	// authentication (--auth, --audience, --token).
	auth, audience, token string
	// TLS client-certificate authentication for --server (serve --api-listen).
	clientCert, clientKey, serverCA string
	stdin                           io.Reader
	stdout                          io.Writer
	stderr                          io.Writer
	// httpClient, when set, is the remote client's HTTP client (tests).
	httpClient *http.Client

	// quotas are --quota-objects and --quota-issuances-per-hour;
	// quotaEnvErr holds, by flag name, an invalid value of their
	// environment variables (ignored when the flag is given); flags are
	// the root's persistent flags.
	quotas      app.Quotas
	quotaEnvErr map[string]error
	flags       *pflag.FlagSet

	// mayCreate is set by the commands that write (apply, create secret):
	// they create the data directory and state.db when missing; every
	// other local command refuses a directory without certfn data.
	mayCreate bool

	rt     *localmode.Runtime
	cl     client
	closer func()
}

// runtime opens the local data directory for a one-shot command (only
// creating it for a command that set g.mayCreate): the
// engine's queue is the inbox, so a running `certfn serve` picks the work up.
// CERTFN_ACME_SERVER_ALLOW applies to the ACME requests a one-shot
// command makes itself (`certfn revoke`) as to serve's.
func (g *globals) runtime() (*localmode.Runtime, error) {
	if g.rt != nil {
		return g.rt, nil
	}
	q, err := g.quotaSettings()
	if err != nil {
		return nil, err
	}
	rt, err := localmode.Open(localmode.Options{DataDir: g.dataDir, MustExist: !g.mayCreate, ClusterResourceNamespace: g.clusterNS, QueueToInbox: true,
		ACME: localmode.ACMEOptions{ServerAllow: envList("CERTFN_ACME_SERVER_ALLOW"), AllowPrivateNetworks: envList("CERTFN_ACME_ALLOW_PRIVATE_NETWORKS")}, Quotas: q})
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

// Quota flags and their environment variables.
const (
	flagQuotaObjects   = "quota-objects"
	envQuotaObjects    = "CERTFN_QUOTA_OBJECTS"
	flagQuotaIssuances = "quota-issuances-per-hour"
	envQuotaIssuances  = "CERTFN_QUOTA_ISSUANCES_PER_HOUR"
)

// quotaSettings returns the quotas of --quota-objects and
// --quota-issuances-per-hour (or their environment variables), or an
// error naming the flag or variable whose value is not an integer ≥ 0.
func (g *globals) quotaSettings() (app.Quotas, error) {
	for _, f := range []struct {
		name string
		v    int
	}{{flagQuotaObjects, g.quotas.ObjectsPerNamespace}, {flagQuotaIssuances, g.quotas.IssuancesPerHourPerNamespace}} {
		if err := g.quotaEnvErr[f.name]; err != nil && (g.flags == nil || !g.flags.Changed(f.name)) {
			return app.Quotas{}, err
		}
		if f.v < 0 {
			return app.Quotas{}, fmt.Errorf("--%s: %d is negative: want an integer of 0 (unlimited) or more", f.name, f.v)
		}
	}
	return g.quotas, nil
}

// envQuota is the default of the quota flag flag: environment variable
// env parsed as an integer ≥ 0 (unset or empty: 0). An invalid value is
// recorded in g.quotaEnvErr, naming the variable.
func (g *globals) envQuota(flag, env string) int {
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		if g.quotaEnvErr == nil {
			g.quotaEnvErr = map[string]error{}
		}
		g.quotaEnvErr[flag] = fmt.Errorf("%s: %q is not an integer of 0 (unlimited) or more", env, v)
		return 0
	}
	return n
}

// defaultDataDir is --data's default when CERTFN_DATA is unset or empty:
// /var/lib/certfn for root, else $XDG_DATA_HOME/certfn, else
// ~/.local/share/certfn — never the current directory, so that which
// store a command uses does not depend on where it is run.
func defaultDataDir() string {
	if geteuid() == 0 {
		return "/var/lib/certfn"
	}
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "certfn")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "share", "certfn")
	}
	return ""
}

// geteuid is os.Geteuid; tests replace it.
var geteuid = os.Geteuid

// dataDirHelp is --data's help text.
const dataDirHelp = "local data directory (env CERTFN_DATA; default /var/lib/certfn for root, else $XDG_DATA_HOME/certfn, else ~/.local/share/certfn). " +
	"Commands that only read (get, status, wait, inspect, ...) refuse a directory without certfn data; apply, create secret and serve create it"

// noServeNote returns, for a local client, a line saying that no `certfn
// serve` runs on the data directory (so nothing progresses), or "" when
// one runs or the client is remote (the cloud's functions do the work).
func (g *globals) noServeNote() string {
	if g.server != "" {
		return ""
	}
	if _, running, err := localmode.ServeRunning(g.dataDir); err != nil || running {
		return ""
	}
	return fmt.Sprintf("no certfn serve is running on data directory %s: nothing progresses until one runs "+
		"(certfn serve, or certfn serve --until-idle once)", g.dataDir)
}
