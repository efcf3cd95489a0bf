package gsmtest

import (
	"context"
	"net"
	"testing"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Client serves d over gRPC on a loopback port and returns Secret
// Manager's own client library connected to it (no credentials), so that
// a test also runs the library's request building, error wrapping and
// list paging. Both stop when t ends. The double's injected failures reach
// the client as they would from the service, and the library's retries
// (AccessSecretVersion retries Unavailable and ResourceExhausted after
// 2 s) apply.
func (d *Double) Client(t testing.TB) *secretmanager.Client {
	t.Helper()
	c, err := secretmanager.NewClient(context.Background(),
		option.WithEndpoint(d.Serve(t)),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Serve serves d over plaintext gRPC on a loopback port until t ends and
// returns its host:port: for a client in another process (reached
// through a TLS front of the test's own), or for Client. The options
// configure the server (an interceptor that checks the callers' tokens).
func (d *Double) Serve(t testing.TB, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	smpb.RegisterSecretManagerServiceServer(srv, grpcServer{d: d})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// grpcServer serves the RPCs the double implements; the others answer
// Unimplemented.
type grpcServer struct {
	smpb.UnimplementedSecretManagerServiceServer
	d *Double
}

func (g grpcServer) CreateSecret(ctx context.Context, r *smpb.CreateSecretRequest) (*smpb.Secret, error) {
	return g.d.CreateSecret(ctx, r)
}

func (g grpcServer) GetSecret(ctx context.Context, r *smpb.GetSecretRequest) (*smpb.Secret, error) {
	return g.d.GetSecret(ctx, r)
}

func (g grpcServer) UpdateSecret(ctx context.Context, r *smpb.UpdateSecretRequest) (*smpb.Secret, error) {
	return g.d.UpdateSecret(ctx, r)
}

func (g grpcServer) DeleteSecret(ctx context.Context, r *smpb.DeleteSecretRequest) (*emptypb.Empty, error) {
	if err := g.d.DeleteSecret(ctx, r); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (g grpcServer) AddSecretVersion(ctx context.Context, r *smpb.AddSecretVersionRequest) (*smpb.SecretVersion, error) {
	return g.d.AddSecretVersion(ctx, r)
}

func (g grpcServer) AccessSecretVersion(ctx context.Context, r *smpb.AccessSecretVersionRequest) (*smpb.AccessSecretVersionResponse, error) {
	return g.d.AccessSecretVersion(ctx, r)
}

func (g grpcServer) DestroySecretVersion(ctx context.Context, r *smpb.DestroySecretVersionRequest) (*smpb.SecretVersion, error) {
	return g.d.DestroySecretVersion(ctx, r)
}

func (g grpcServer) ListSecretVersions(ctx context.Context, r *smpb.ListSecretVersionsRequest) (*smpb.ListSecretVersionsResponse, error) {
	return g.d.ListSecretVersionsPage(ctx, r)
}
