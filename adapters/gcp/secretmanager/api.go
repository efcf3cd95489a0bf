package secretmanager

import (
	"context"

	gsm "cloud.google.com/go/secretmanager/apiv1"
	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
)

// API is the subset of Secret Manager's client that the Store calls. The
// methods are those of *gsm.Client, except that listing returns
// one page (a client's iterator cannot be built by a test double):
// ClientAPI adapts a client. gsmtest.Double implements it in memory.
type API interface {
	CreateSecret(ctx context.Context, req *smpb.CreateSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error)
	GetSecret(ctx context.Context, req *smpb.GetSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error)
	UpdateSecret(ctx context.Context, req *smpb.UpdateSecretRequest, opts ...gax.CallOption) (*smpb.Secret, error)
	DeleteSecret(ctx context.Context, req *smpb.DeleteSecretRequest, opts ...gax.CallOption) error
	AddSecretVersion(ctx context.Context, req *smpb.AddSecretVersionRequest, opts ...gax.CallOption) (*smpb.SecretVersion, error)
	AccessSecretVersion(ctx context.Context, req *smpb.AccessSecretVersionRequest, opts ...gax.CallOption) (*smpb.AccessSecretVersionResponse, error)
	DestroySecretVersion(ctx context.Context, req *smpb.DestroySecretVersionRequest, opts ...gax.CallOption) (*smpb.SecretVersion, error)
	// ListSecretVersionsPage returns one page of ListSecretVersions
	// (req.PageSize versions at most, from req.PageToken).
	ListSecretVersionsPage(ctx context.Context, req *smpb.ListSecretVersionsRequest, opts ...gax.CallOption) (*smpb.ListSecretVersionsResponse, error)
}

// ClientAPI adapts a Secret Manager client (gsm.NewClient, which
// finds Application Default Credentials) to API.
func ClientAPI(c *gsm.Client) API { return clientAPI{c} }

type clientAPI struct{ *gsm.Client }

func (c clientAPI) ListSecretVersionsPage(ctx context.Context, req *smpb.ListSecretVersionsRequest, opts ...gax.CallOption) (*smpb.ListSecretVersionsResponse, error) {
	size := int(req.GetPageSize())
	if size <= 0 {
		size = 100
	}
	var page []*smpb.SecretVersion
	next, err := iterator.NewPager(c.ListSecretVersions(ctx, req, opts...), size, req.GetPageToken()).NextPage(&page)
	if err != nil {
		return nil, err
	}
	return &smpb.ListSecretVersionsResponse{Versions: page, NextPageToken: next}, nil
}
