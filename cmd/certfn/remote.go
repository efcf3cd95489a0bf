package main

import (
	"context"

	"github.com/certfn/certfn/internal/apiclient"
)

// The remote client is internal/apiclient, shared with the Terraform
// provider; these names keep the CLI's code short.
type remoteOptions = apiclient.Options

const (
	authAWSSigV4      = apiclient.AuthAWSSigV4
	authGoogleIDToken = apiclient.AuthGoogleIDToken
	authClientCert    = apiclient.AuthClientCert
	authNone          = apiclient.AuthNone
)

func newRemoteClient(ctx context.Context, o remoteOptions) (*apiclient.Client, error) {
	return apiclient.New(ctx, o)
}

func isUnauthenticated(err error) bool { return apiclient.IsUnauthenticated(err) }
