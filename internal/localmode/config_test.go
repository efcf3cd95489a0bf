package localmode

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/app"
)

// validConfig is a Config that Validate accepts (`certfn serve`'s
// defaults on a data directory that need not exist yet); cases change
// one field.
func validConfig(t *testing.T) Config {
	return Config{
		Data:          Data{Dir: filepath.Join(t.TempDir(), "data"), ClusterResourceNamespace: "cert-manager"},
		Workers:       4,
		SweepInterval: 10 * time.Second,
		Approver:      "cert-manager",
		SecretFiles:   SecretFileConfig{MaxMode: "0640"},
		DeployHook:    DeployHookOptions{Timeout: 5 * time.Minute},
	}
}

func ptr[T any](v T) *T { return &v }

// Each invalid field is refused by an error naming its flag and the rule;
// every valid variant is accepted.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // substrings of the error; none: valid
	}{
		{name: "defaults", edit: func(*Config) {}},
		{name: "every field set", edit: func(c *Config) {
			c.Approver, c.AutoApprove = "policy", ptr("issuers.cert-manager.io/*")
			c.Data.Quotas = app.Quotas{ObjectsPerNamespace: 10, IssuancesPerHourPerNamespace: 5}
			c.Data.ACMEServerAllow = []string{"https://acme-v02.api.letsencrypt.org/directory"}
			c.Data.ACMEAllowPrivateNetworks = []string{"10.0.0.0/8", "ca.internal.example"}
			c.SecretFiles = SecretFileConfig{Mode: "0640", Owner: "root", Group: "www-data", MaxMode: "0644", AllowOwners: []string{" 1000 "}, AllowGroups: []string{"ssl-cert"}}
			c.ACME = ACMEConfig{PollFirst: "100ms", PollMax: "3s", HTTP01SelfCheckAddr: "127.0.0.1:5002"}
			c.DNS01 = DNS01TestConfig{ChalltestsrvURL: "http://127.0.0.1:8055", Nameservers: []string{"127.0.0.1:8053"}}
			c.ControllerUser, c.ControllerGroups = "system:serviceaccount:cert-manager:certfn", []string{"certfn"}
		}},
		{name: "empty approver is cert-manager", edit: func(c *Config) { c.Approver = "" }},
		{name: "approver", edit: func(c *Config) { c.Approver = "everyone" },
			want: []string{"--approver", `"everyone" is not an approver`}},
		{name: "objects quota", edit: func(c *Config) { c.Data.Quotas.ObjectsPerNamespace = -1 },
			want: []string{"--quota-objects", "-1 is negative"}},
		{name: "issuances quota", edit: func(c *Config) { c.Data.Quotas.IssuancesPerHourPerNamespace = -3 },
			want: []string{"--quota-issuances-per-hour", "-3 is negative"}},
		{name: "file mode", edit: func(c *Config) { c.SecretFiles.Mode = "0666" },
			want: []string{"--secret-file-mode", "no write or execute permission for group or others"}},
		{name: "file owner", edit: func(c *Config) { c.SecretFiles.Owner = "no body" },
			want: []string{"--secret-file-owner", "want a user or group name, or a number"}},
		{name: "file group", edit: func(c *Config) { c.SecretFiles.Group = "Wheel!" },
			want: []string{"--secret-file-group", "want a user or group name, or a number"}},
		{name: "file max mode missing", edit: func(c *Config) { c.SecretFiles.MaxMode = "" },
			want: []string{"--secret-file-max-mode", "want an octal mode such as 0640"}},
		{name: "file max mode unreadable", edit: func(c *Config) { c.SecretFiles.MaxMode = "0040" },
			want: []string{"--secret-file-max-mode", "the owner must be able to read the files"}},
		{name: "allowed owners", edit: func(c *Config) { c.SecretFiles.AllowOwners = []string{"root", "a/b"} },
			want: []string{"--secret-file-allow-owners[1]", "want a user or group name"}},
		{name: "allowed groups", edit: func(c *Config) { c.SecretFiles.AllowGroups = []string{""} },
			want: []string{"--secret-file-allow-groups[0]", "want a user or group name"}},
		{name: "first poll", edit: func(c *Config) { c.ACME.PollFirst = "soon" },
			want: []string{"--acme-poll-first", `"soon" is not a duration`}},
		{name: "longest poll", edit: func(c *Config) { c.ACME.PollMax = "2h" },
			want: []string{"--acme-poll-max", "is outside"}},
		{name: "longest poll below the first", edit: func(c *Config) { c.ACME.PollFirst, c.ACME.PollMax = "1s", "500ms" },
			want: []string{"--acme-poll-max", "is below --acme-poll-first"}},
		{name: "challtestsrv URL", edit: func(c *Config) {
			c.DNS01 = DNS01TestConfig{ChalltestsrvURL: "ftp://127.0.0.1:8055", Nameservers: []string{"127.0.0.1:8053"}}
		}, want: []string{"--dns01-challtestsrv", "is not the http(s) URL of a challtestsrv management API"}},
		{name: "challtestsrv without nameservers", edit: func(c *Config) { c.DNS01.ChalltestsrvURL = "http://127.0.0.1:8055" },
			want: []string{"--dns01-challtestsrv", "needs --dns01-nameservers"}},
		{name: "nameserver", edit: func(c *Config) { c.DNS01.Nameservers = []string{"127.0.0.1:53", "127.0.0.1:0"} },
			want: []string{"--dns01-nameservers[1]", "has no valid port"}},
		{name: "data directory", edit: func(c *Config) { c.Data.Dir = "" },
			want: []string{"--data", "a data directory is required"}},
		{name: "cluster resource namespace", edit: func(c *Config) { c.Data.ClusterResourceNamespace = "Cert-Manager" },
			want: []string{"--cluster-resource-namespace", "DNS-1123 label"}},
		{name: "ACME server allow list", edit: func(c *Config) { c.Data.ACMEServerAllow = []string{"*", "https://ca.example/directory"} },
			want: []string{"--acme-server-allow[0]", "cannot be combined with other entries"}},
		{name: "ACME server not a URL", edit: func(c *Config) { c.Data.ACMEServerAllow = []string{"ca.example"} },
			want: []string{"--acme-server-allow[0]", "want the http(s) URL of an ACME directory"}},
		{name: "private networks", edit: func(c *Config) { c.Data.ACMEAllowPrivateNetworks = []string{"10.0.0.0/8", "10.0.0.0/99"} },
			want: []string{"--acme-allow-private-networks[1]", "is not a CIDR prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.edit(&c)
			checkValidate(t, c.Validate(), tc.want)
		})
	}
}

// checkValidate checks Validate's err: nil when want is empty, else an
// error containing every substring of want (the flag and the rule).
func checkValidate(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate accepted the value, want an error containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// Validate creates nothing: the data directory is only opened by Serve.
func TestConfigValidateCreatesNothing(t *testing.T) {
	c := validConfig(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := CheckDataDir(c.Data.Dir); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("after Validate, CheckDataDir = %v, want the directory missing", err)
	}
}

// An invalid Config is refused by Serve before anything is opened.
func TestServeRefusesInvalidConfigFirst(t *testing.T) {
	c := validConfig(t)
	c.SecretFiles.Mode = "7"
	err := Serve(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "--secret-file-mode") {
		t.Fatalf("Serve = %v, want the --secret-file-mode error", err)
	}
	if err := CheckDataDir(c.Data.Dir); err == nil {
		t.Fatal("Serve created the data directory of an invalid Config")
	}
}

// A one-shot command's ClientConfig names the same fields in its errors.
func TestClientConfigValidate(t *testing.T) {
	valid := func(t *testing.T) ClientConfig {
		return ClientConfig{Data: Data{Dir: t.TempDir(), ClusterResourceNamespace: "cert-manager"}, Caller: Caller("", nil)}
	}
	for _, tc := range []struct {
		name string
		edit func(*ClientConfig)
		want []string
	}{
		{name: "valid", edit: func(*ClientConfig) {}},
		{name: "objects quota", edit: func(c *ClientConfig) { c.Data.Quotas.ObjectsPerNamespace = -2 },
			want: []string{"--quota-objects", "-2 is negative"}},
		{name: "issuances quota", edit: func(c *ClientConfig) { c.Data.Quotas.IssuancesPerHourPerNamespace = -1 },
			want: []string{"--quota-issuances-per-hour", "-1 is negative"}},
		{name: "data directory", edit: func(c *ClientConfig) { c.Data.Dir = "" },
			want: []string{"--data", "a data directory is required"}},
		{name: "cluster resource namespace", edit: func(c *ClientConfig) { c.Data.ClusterResourceNamespace = "a/b" },
			want: []string{"--cluster-resource-namespace", "DNS-1123 label"}},
		{name: "ACME server allow list", edit: func(c *ClientConfig) { c.Data.ACMEServerAllow = []string{"ftp://ca.example"} },
			want: []string{"--acme-server-allow[0]"}},
		{name: "private networks", edit: func(c *ClientConfig) { c.Data.ACMEAllowPrivateNetworks = []string{"not a host"} },
			want: []string{"--acme-allow-private-networks[0]", "is not a CIDR prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid(t)
			tc.edit(&c)
			err := c.Validate()
			checkValidate(t, err, tc.want)
			if err == nil {
				return
			}
			if _, oerr := OpenClient(c); oerr == nil || oerr.Error() != err.Error() {
				t.Errorf("OpenClient = %v, want Validate's error %v", oerr, err)
			}
		})
	}
}

// The local user is a superuser; --as is only what it says.
func TestCaller(t *testing.T) {
	local := Caller("", nil)
	if !strings.HasPrefix(local.Username, "local:") || !slices.Contains(local.Groups, app.SuperuserGroup) {
		t.Errorf("local caller = %+v, want local:<user> in %s", local, app.SuperuserGroup)
	}
	as := Caller("alice", []string{"team-a"})
	if as.Username != "alice" || slices.Contains(as.Groups, app.SuperuserGroup) || !slices.Contains(as.Groups, "team-a") || !slices.Contains(as.Groups, "system:authenticated") {
		t.Errorf("--as caller = %+v, want alice in system:authenticated and team-a only", as)
	}
}
