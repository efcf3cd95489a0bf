package gsmtest_test

import (
	"context"
	"strings"
	"testing"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/gcp/secretmanager/gsmtest"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

var _ secretmanager.API = (*gsmtest.Double)(nil)

// The exported double passes the secret store contract suite through the
// adapter, called directly and through the client library.
func TestContractSuiteOnTheDouble(t *testing.T) {
	t.Run("direct", func(t *testing.T) {
		porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore {
			s, err := secretmanager.New(gsmtest.New(), secretmanager.Options{Project: "p"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
	t.Run("client", func(t *testing.T) {
		porttest.SecretSuite(t, func(t *testing.T) ports.SecretStore {
			s, err := secretmanager.New(secretmanager.ClientAPI(gsmtest.New().Client(t)), secretmanager.Options{Project: "p"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}

var auto = &smpb.Replication{Replication: &smpb.Replication_Automatic_{Automatic: &smpb.Replication_Automatic{}}}

func wantCode(t *testing.T, what string, err error, c codes.Code) {
	t.Helper()
	if status.Code(err) != c {
		t.Errorf("%s: %v, want code %s", what, err, c)
	}
	if _, ok := apierror.FromError(err); err != nil && !ok {
		t.Errorf("%s: %T is not wrapped as the client library wraps errors", what, err)
	}
}

// The documented behaviour of the RPCs the adapter uses.
func TestDoubleSemantics(t *testing.T) {
	ctx := context.Background()
	d := gsmtest.New()
	create := func(id string, s *smpb.Secret) error {
		_, err := d.CreateSecret(ctx, &smpb.CreateSecretRequest{Parent: "projects/my-proj", SecretId: id, Secret: s})
		return err
	}
	wantCode(t, "secret ID with a dot", create("a.b", &smpb.Secret{Replication: auto}), codes.InvalidArgument)
	wantCode(t, "secret ID of 256", create(strings.Repeat("a", 256), &smpb.Secret{Replication: auto}), codes.InvalidArgument)
	wantCode(t, "no replication", create("x", &smpb.Secret{}), codes.InvalidArgument)
	wantCode(t, "upper-case label key", create("x", &smpb.Secret{Replication: auto, Labels: map[string]string{"Team": "a"}}), codes.InvalidArgument)
	wantCode(t, "label value with a dot", create("x", &smpb.Secret{Replication: auto, Labels: map[string]string{"team": "a.b"}}), codes.InvalidArgument)
	wantCode(t, "label value of 64", create("x", &smpb.Secret{Replication: auto, Labels: map[string]string{"team": strings.Repeat("a", 64)}}), codes.InvalidArgument)
	wantCode(t, "annotation key with a slash", create("x", &smpb.Secret{Replication: auto, Annotations: map[string]string{"a/b": "c"}}), codes.InvalidArgument)
	wantCode(t, "annotations of 16 KiB", create("x", &smpb.Secret{Replication: auto, Annotations: map[string]string{"a": strings.Repeat("v", 16*1024)}}), codes.InvalidArgument)
	wantCode(t, "bad key name", create("x", &smpb.Secret{Replication: &smpb.Replication{Replication: &smpb.Replication_Automatic_{Automatic: &smpb.Replication_Automatic{
		CustomerManagedEncryption: &smpb.CustomerManagedEncryption{KmsKeyName: "k"}}}}}), codes.InvalidArgument)
	if err := create("x", &smpb.Secret{Replication: auto, Labels: map[string]string{"team": "a_b-1"}, Annotations: map[string]string{"certfn.io_x": "any / value"}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "duplicate", create("x", &smpb.Secret{Replication: auto}), codes.AlreadyExists)

	sec, err := d.GetSecret(ctx, &smpb.GetSecretRequest{Name: "projects/my-proj/secrets/x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sec.GetName(), "projects/1") || sec.GetEtag() == "" || sec.GetCreateTime() == nil {
		t.Errorf("secret %v: want the project number in its name, an etag and a create time", sec)
	}
	byNumber := sec.GetName()
	if _, err := d.GetSecret(ctx, &smpb.GetSecretRequest{Name: byNumber}); err != nil {
		t.Errorf("by project number: %v", err)
	}
	access := func(v string) ([]byte, error) {
		r, err := d.AccessSecretVersion(ctx, &smpb.AccessSecretVersionRequest{Name: byNumber + "/versions/" + v})
		return r.GetPayload().GetData(), err
	}
	_, err = access("latest")
	wantCode(t, "latest without versions", err, codes.NotFound)
	add := func(data string) (*smpb.SecretVersion, error) {
		return d.AddSecretVersion(ctx, &smpb.AddSecretVersionRequest{Parent: byNumber, Payload: &smpb.SecretPayload{Data: []byte(data)}})
	}
	for i, data := range []string{"one", "two", "three"} {
		v, err := add(data)
		if err != nil || !strings.HasSuffix(v.GetName(), "/versions/"+string(rune('1'+i))) || v.GetState() != smpb.SecretVersion_ENABLED {
			t.Fatalf("version %d: %v %v", i+1, v, err)
		}
	}
	_, err = add(strings.Repeat("x", 65537))
	wantCode(t, "payload over 64 KiB", err, codes.InvalidArgument)
	bad := int64(42)
	_, err = d.AddSecretVersion(ctx, &smpb.AddSecretVersionRequest{Parent: byNumber, Payload: &smpb.SecretPayload{Data: []byte("x"), DataCrc32C: &bad}})
	wantCode(t, "checksum mismatch", err, codes.InvalidArgument)
	if got, err := access("latest"); err != nil || string(got) != "three" {
		t.Errorf("latest = %q, %v", got, err)
	}
	if got, err := access("1"); err != nil || string(got) != "one" {
		t.Errorf("version 1 = %q, %v", got, err)
	}
	_, err = access("4")
	wantCode(t, "version 4", err, codes.NotFound)
	_, err = access("nope")
	wantCode(t, "unknown alias", err, codes.NotFound)

	update := func(s *smpb.Secret, paths ...string) (*smpb.Secret, error) {
		s.Name = byNumber
		return d.UpdateSecret(ctx, &smpb.UpdateSecretRequest{Secret: s, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}})
	}
	_, err = update(&smpb.Secret{VersionAliases: map[string]int64{"old": 9}}, "version_aliases")
	wantCode(t, "alias of a missing version", err, codes.InvalidArgument)
	_, err = update(&smpb.Secret{VersionAliases: map[string]int64{"latest": 1}}, "version_aliases")
	wantCode(t, "alias latest", err, codes.InvalidArgument)
	_, err = update(&smpb.Secret{VersionAliases: map[string]int64{"1st": 1}}, "version_aliases")
	wantCode(t, "alias starting with a digit", err, codes.InvalidArgument)
	_, err = update(&smpb.Secret{})
	wantCode(t, "no update mask", err, codes.InvalidArgument)
	_, err = update(&smpb.Secret{Replication: auto}, "replication")
	wantCode(t, "replication", err, codes.InvalidArgument)
	_, err = update(&smpb.Secret{Etag: sec.GetEtag(), Labels: map[string]string{"a": "b"}}, "labels")
	if err != nil {
		t.Fatal(err)
	}
	_, err = update(&smpb.Secret{Etag: sec.GetEtag(), Labels: map[string]string{"a": "c"}}, "labels")
	wantCode(t, "stale etag", err, codes.Aborted)
	if _, err := update(&smpb.Secret{VersionAliases: map[string]int64{"previous": 2}}, "version_aliases"); err != nil {
		t.Fatal(err)
	}
	if got, err := access("previous"); err != nil || string(got) != "two" {
		t.Errorf("previous = %q, %v", got, err)
	}

	// States: a disabled newest version still is "latest".
	if err := d.SetVersionState("x", 3, smpb.SecretVersion_DISABLED); err != nil {
		t.Fatal(err)
	}
	_, err = access("latest")
	wantCode(t, "latest disabled", err, codes.FailedPrecondition)
	vs := d.Versions("x")
	destroy := func(n int, etag string) error {
		_, err := d.DestroySecretVersion(ctx, &smpb.DestroySecretVersionRequest{Name: vs[n-1].GetName(), Etag: etag})
		return err
	}
	wantCode(t, "destroy with a stale etag", destroy(1, "\"stale\""), codes.Aborted)
	wantCode(t, "destroy an aliased version", destroy(2, ""), codes.FailedPrecondition)
	if err := destroy(1, vs[0].GetEtag()); err != nil {
		t.Fatal(err)
	}
	_, err = access("1")
	wantCode(t, "access a destroyed version", err, codes.FailedPrecondition)
	wantCode(t, "destroy twice", destroy(1, ""), codes.FailedPrecondition)
	if err := d.SetVersionState("x", 1, smpb.SecretVersion_ENABLED); err == nil {
		t.Error("a destroyed version was enabled again")
	}
	if d.ActiveVersions() != 2 {
		t.Errorf("ActiveVersions = %d, want 2", d.ActiveVersions())
	}

	list := func(filter, token string, size int32) (*smpb.ListSecretVersionsResponse, error) {
		return d.ListSecretVersionsPage(ctx, &smpb.ListSecretVersionsRequest{Parent: byNumber, Filter: filter, PageToken: token, PageSize: size})
	}
	page, err := list("state:ENABLED OR state:DISABLED", "", 1)
	if err != nil || len(page.GetVersions()) != 1 || !strings.HasSuffix(page.GetVersions()[0].GetName(), "/3") || page.GetNextPageToken() == "" {
		t.Fatalf("first page %v, %v: want version 3 and a next page", page, err)
	}
	page, err = list("state:ENABLED OR state:DISABLED", page.GetNextPageToken(), 1)
	if err != nil || len(page.GetVersions()) != 1 || !strings.HasSuffix(page.GetVersions()[0].GetName(), "/2") || page.GetNextPageToken() != "" {
		t.Errorf("second page %v, %v: want version 2 and no next page", page, err)
	}
	if page, err := list("", "", 0); err != nil || len(page.GetVersions()) != 3 {
		t.Errorf("unfiltered list: %v, %v", page, err)
	}
	_, err = list("name:x", "", 0)
	wantCode(t, "unknown filter", err, codes.InvalidArgument)

	wantCode(t, "delete with a stale etag", d.DeleteSecret(ctx, &smpb.DeleteSecretRequest{Name: byNumber, Etag: sec.GetEtag()}), codes.Aborted)
	if err := d.DeleteSecret(ctx, &smpb.DeleteSecretRequest{Name: "projects/my-proj/secrets/x"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "delete twice", d.DeleteSecret(ctx, &smpb.DeleteSecretRequest{Name: byNumber}), codes.NotFound)
	if d.Secret("x") != nil || d.ActiveVersions() != 0 {
		t.Error("the secret outlived its deletion")
	}
}

func TestFaultsCallsAndContext(t *testing.T) {
	d := gsmtest.New()
	ctx := context.Background()
	d.FailNext("GetSecret", codes.Unavailable, 2)
	d.FailNext("", codes.Internal, 1)
	req := &smpb.GetSecretRequest{Name: "projects/p/secrets/x"}
	_, err := d.GetSecret(ctx, req)
	wantCode(t, "first", err, codes.Unavailable)
	_, err = d.AccessSecretVersion(ctx, &smpb.AccessSecretVersionRequest{Name: "projects/p/secrets/x/versions/latest"})
	wantCode(t, "any op", err, codes.Internal)
	_, err = d.GetSecret(ctx, req)
	wantCode(t, "second", err, codes.Unavailable)
	_, err = d.GetSecret(ctx, req)
	wantCode(t, "after the faults", err, codes.NotFound)
	if d.Calls("GetSecret") != 3 || d.TotalCalls() != 4 || d.CallsByOp()["AccessSecretVersion"] != 1 {
		t.Errorf("calls %v", d.CallsByOp())
	}
	d.ResetCalls()
	if d.TotalCalls() != 0 {
		t.Error("ResetCalls")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = d.GetSecret(cctx, req)
	wantCode(t, "canceled", err, codes.Canceled)
}

// Through the client library the double's statuses arrive as the
// service's would.
func TestClientErrors(t *testing.T) {
	d := gsmtest.New()
	c := secretmanager.ClientAPI(d.Client(t))
	ctx := context.Background()
	_, err := c.GetSecret(ctx, &smpb.GetSecretRequest{Name: "projects/p/secrets/x"})
	wantCode(t, "missing", err, codes.NotFound)
	d.FailNext("AccessSecretVersion", codes.PermissionDenied, 1)
	_, err = c.AccessSecretVersion(ctx, &smpb.AccessSecretVersionRequest{Name: "projects/p/secrets/x/versions/latest"})
	wantCode(t, "denied", err, codes.PermissionDenied)
	if _, err := c.ListSecretVersionsPage(ctx, &smpb.ListSecretVersionsRequest{Parent: "projects/p/secrets/x"}); status.Code(err) != codes.NotFound {
		t.Errorf("list of a missing secret: %v", err)
	}
}
