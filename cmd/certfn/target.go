package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/apiclient"
	"github.com/certfn/certfn/internal/localmode"
)

// streams are a command's input and outputs.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// target is where the client commands act: the data directory of data
// or, with --server, the HTTP API of remote, as the identity of as. It
// opens one client per invocation; close releases it.
type target struct {
	data   dataFlags
	remote remoteFlags
	as     identityFlags

	cl    client
	local *localmode.Client // cl, when local
}

// bind defines the flags every command shares on fs.
func (t *target) bind(fs *pflag.FlagSet) {
	t.data.bind(fs)
	t.as.bind(fs)
	t.remote.bind(fs)
}

// dataUse says whether a local command may create a missing data directory.
type dataUse bool

const (
	// readsData refuses a directory without certfn data (a typo in --data
	// is reported, not answered from a new, empty store).
	readsData dataUse = false
	// createsData creates the data directory and state.db when missing:
	// apply and create secret, how a data directory is first filled.
	createsData dataUse = true
)

// localClient opens the local data directory for a one-shot command
// (creating it only with createsData): the engine's queue is the inbox,
// so a running `certfn serve` picks the work up. CERTFN_ACME_SERVER_ALLOW
// and CERTFN_ACME_ALLOW_PRIVATE_NETWORKS apply to the ACME requests a
// one-shot command makes itself (`certfn revoke`) as to serve's.
func (t *target) localClient(use dataUse) (*localmode.Client, error) {
	if t.local != nil {
		return t.local, nil
	}
	d, err := t.data.config()
	if err != nil {
		return nil, err
	}
	d.ACMEServerAllow, d.ACMEAllowPrivateNetworks = envList("CERTFN_ACME_SERVER_ALLOW"), envList("CERTFN_ACME_ALLOW_PRIVATE_NETWORKS")
	lc, err := localmode.OpenClient(localmode.ClientConfig{Data: d, Create: bool(use), Caller: t.as.caller()})
	if err != nil {
		return nil, err
	}
	t.local, t.cl = lc, lc
	return lc, nil
}

// close releases the client opened, if any.
func (t *target) close() {
	if t.local != nil {
		_ = t.local.Close()
	}
}

// noServeNote returns, for a local client, a line saying that no `certfn
// serve` runs on the data directory (so nothing progresses), or "" when
// one runs or the client is remote (the cloud's functions do the work).
func (t *target) noServeNote() string {
	if t.remote.enabled() {
		return ""
	}
	if _, running, err := localmode.ServeRunning(t.data.dir); err != nil || running {
		return ""
	}
	return fmt.Sprintf("no certfn serve is running on data directory %s: nothing progresses until one runs "+
		"(certfn serve, or certfn serve --until-idle once)", t.data.dir)
}

// identityFlags are --as and --as-group: who a local command acts as.
type identityFlags struct {
	as     string
	groups []string
}

func (f *identityFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.as, "as", "", "act as this identity (a user name, an IAM ARN, system:serviceaccount:NS:NAME); permissions then come from the bindings")
	fs.StringSliceVar(&f.groups, "as-group", nil, "with --as: groups of that identity (repeatable)")
}

// set reports whether --as or --as-group was given.
func (f *identityFlags) set() bool { return f.as != "" || len(f.groups) > 0 }

// caller is the identity of this CLI call (localmode.Caller): the local
// user, or --as with --as-group.
func (f *identityFlags) caller() app.Caller { return localmode.Caller(f.as, f.groups) }

// dataFlags are the local data directory's flags, shared by every local
// command: --data, --cluster-resource-namespace and the quotas.
type dataFlags struct {
	dir       string
	clusterNS string
	// quotas are --quota-objects and --quota-issuances-per-hour;
	// quotaEnvErr holds, by flag name, an invalid value of their
	// environment variables (ignored when the flag is given).
	quotas      app.Quotas
	quotaEnvErr map[string]error
	flags       *pflag.FlagSet
}

func (f *dataFlags) bind(fs *pflag.FlagSet) {
	f.flags = fs
	fs.StringVar(&f.dir, "data", envOr("CERTFN_DATA", defaultDataDir()), dataDirHelp)
	fs.StringVar(&f.clusterNS, "cluster-resource-namespace", envOr("CERTFN_CLUSTER_RESOURCE_NAMESPACE", api.DefaultClusterResourceNamespace),
		"namespace holding ClusterIssuer secrets (env CERTFN_CLUSTER_RESOURCE_NAMESPACE)")
	fs.IntVar(&f.quotas.ObjectsPerNamespace, flagQuotaObjects, f.envQuota(flagQuotaObjects, envQuotaObjects),
		"local mode: the most Certificates, CertificateRequests, Issuers, Roles and RoleBindings one namespace may hold; an apply that would create more is refused; "+
			"0: unlimited (env "+envQuotaObjects+"; with --server the deployment's quota applies)")
	fs.IntVar(&f.quotas.IssuancesPerHourPerNamespace, flagQuotaIssuances, f.envQuota(flagQuotaIssuances, envQuotaIssuances),
		"local mode: the most certificates signed per namespace in any rolling hour; further requests wait (Pending) until the oldest issuance is an hour old; "+
			"0: unlimited (env "+envQuotaIssuances+")")
}

// config returns the data directory the flags name, or an error naming
// the quota environment variable whose value is not an integer ≥ 0 (when
// its flag is not given). The values themselves are checked by localmode.
func (f *dataFlags) config() (localmode.Data, error) {
	for _, name := range []string{flagQuotaObjects, flagQuotaIssuances} {
		if err := f.quotaEnvErr[name]; err != nil && (f.flags == nil || !f.flags.Changed(name)) {
			return localmode.Data{}, err
		}
	}
	return localmode.Data{Dir: f.dir, ClusterResourceNamespace: f.clusterNS, Quotas: f.quotas}, nil
}

// Quota flags and their environment variables.
const (
	flagQuotaObjects   = "quota-objects"
	envQuotaObjects    = "CERTFN_QUOTA_OBJECTS"
	flagQuotaIssuances = "quota-issuances-per-hour"
	envQuotaIssuances  = "CERTFN_QUOTA_ISSUANCES_PER_HOUR"
)

// envQuota is the default of the quota flag flag: environment variable
// env parsed as an integer ≥ 0 (unset or empty: 0). An invalid value is
// recorded in f.quotaEnvErr, naming the variable.
func (f *dataFlags) envQuota(flag, env string) int {
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		if f.quotaEnvErr == nil {
			f.quotaEnvErr = map[string]error{}
		}
		f.quotaEnvErr[flag] = fmt.Errorf("%s: %q is not an integer of 0 (unlimited) or more", env, v)
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

// remoteFlags are the flags of remote mode: --server and how to
// authenticate to it.
type remoteFlags struct {
	server, region string
	// auth, audience and token choose and configure the remote client's
	// authentication (--auth, --audience, --token).
	auth, audience, token string
	// TLS client-certificate authentication for --server (serve --api-listen).
	clientCert, clientKey, serverCA string
	flags                           *pflag.FlagSet
}

func (f *remoteFlags) bind(fs *pflag.FlagSet) {
	f.flags = fs
	fs.StringVar(&f.server, "server", os.Getenv("CERTFN_SERVER"),
		"remote mode: certfn's HTTP API base URL, e.g. https://<url-id>.lambda-url.<region>.on.aws or https://<service>-<hash>-<region>.a.run.app (env CERTFN_SERVER)")
	fs.StringVar(&f.auth, "auth", os.Getenv("CERTFN_AUTH"),
		"with --server: how to authenticate: "+strings.Join(apiclient.AuthModes, ", ")+" (env CERTFN_AUTH); default: client-cert with --client-cert/--client-key, "+
			"google-id-token with --token/--audience or a *.run.app URL, aws-sigv4 for a *.lambda-url.<region>.on.aws URL, client-cert with --server-ca, else aws-sigv4")
	fs.StringVar(&f.audience, "audience", os.Getenv("CERTFN_AUDIENCE"),
		"with --auth google-id-token: the ID token's audience, as the api's CERTFN_API_AUDIENCE (env CERTFN_AUDIENCE; default https://<server host>)")
	fs.StringVar(&f.token, "token", "",
		"with --auth google-id-token: send this Google ID token instead of one from Application Default Credentials, e.g. "+
			"\"$(gcloud auth print-identity-token --impersonate-service-account=SA --audiences=URL --include-email)\" (env CERTFN_TOKEN, which other users cannot see in the process list)")
	fs.StringVar(&f.clientCert, "client-cert", os.Getenv("CERTFN_CLIENT_CERT"),
		"with --server: authenticate with this TLS client certificate (PEM), for 'certfn serve --api-listen' (env CERTFN_CLIENT_CERT)")
	fs.StringVar(&f.clientKey, "client-key", os.Getenv("CERTFN_CLIENT_KEY"), "with --client-cert: its private key (PEM) (env CERTFN_CLIENT_KEY)")
	fs.StringVar(&f.serverCA, "server-ca", os.Getenv("CERTFN_SERVER_CA"), "with --server: CA certificates (PEM) the server's certificate must chain to (env CERTFN_SERVER_CA)")
	fs.StringVar(&f.region, "region", "",
		"with --auth aws-sigv4: AWS region to sign for (default: the Function URL's region, else AWS_REGION or the profile's)")
}

// enabled reports whether this invocation is remote (--server or CERTFN_SERVER).
func (f *remoteFlags) enabled() bool { return f.server != "" }

// options are the remote client's options.
func (f *remoteFlags) options() remoteOptions {
	token := f.token
	if f.flags == nil || !f.flags.Changed("token") {
		// Read here, not as the flag's default, which --help would print.
		token = os.Getenv("CERTFN_TOKEN")
	}
	return remoteOptions{Server: f.server, Auth: f.auth, Region: f.region, Audience: f.audience, Token: token,
		ClientCert: f.clientCert, ClientKey: f.clientKey, ServerCA: f.serverCA, Name: f.optionName}
}

// remoteFlagEnv are the environment variables of the remote flags.
var remoteFlagEnv = map[string]string{"server": "CERTFN_SERVER", "auth": "CERTFN_AUTH", "audience": "CERTFN_AUDIENCE", "token": "CERTFN_TOKEN",
	"client-cert": "CERTFN_CLIENT_CERT", "client-key": "CERTFN_CLIENT_KEY", "server-ca": "CERTFN_SERVER_CA"}

// optionName is how errors call a remote option: "--<flag>", or its
// environment variable when the value came from there.
func (f *remoteFlags) optionName(flag string) string {
	if env := remoteFlagEnv[flag]; env != "" && os.Getenv(env) != "" && (f.flags == nil || !f.flags.Changed(flag)) {
		return env
	}
	return "--" + flag
}

// localOnly refuses a command that has no API counterpart in remote mode.
func (f *remoteFlags) localOnly(what, why string) error {
	if f.enabled() {
		return fmt.Errorf("%s is local-only (not available with --server): %s", what, why)
	}
	return nil
}
