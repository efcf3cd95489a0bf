package apiclient

import (
	"net/url"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

func TestSelectAuth(t *testing.T) {
	for _, tc := range []struct {
		url  string
		o    Options
		want string
	}{
		{"https://abc.lambda-url.eu-west-1.on.aws", Options{}, AuthAWSSigV4},
		{"https://certfn-api-abc123-ew.a.run.app", Options{}, AuthGoogleIDToken},
		{"https://certfn-api-123456789.europe-west1.run.app/", Options{}, AuthGoogleIDToken},
		{"https://api.example.com", Options{}, AuthAWSSigV4}, // as before --auth
		{"https://api.example.com", Options{Audience: "https://x.a.run.app"}, AuthGoogleIDToken},
		{"https://api.example.com", Options{Token: "t"}, AuthGoogleIDToken},
		{"https://api.example.com", Options{ServerCA: "ca.pem"}, AuthClientCert},
		{"https://127.0.0.1:8443", Options{ClientCert: "c", ClientKey: "k", ServerCA: "ca.pem"}, AuthClientCert},
		{"https://x.a.run.app", Options{ClientCert: "c"}, AuthClientCert},
		{"https://x.a.run.app", Options{ServerCA: "ca.pem"}, AuthGoogleIDToken},
		{"https://x.a.run.app.evil.example", Options{}, AuthAWSSigV4},
		{"https://run.app", Options{}, AuthAWSSigV4},
		{"https://abc.lambda-url.eu-west-1.on.aws", Options{Auth: " NONE "}, AuthNone},
		{"https://x.a.run.app", Options{Auth: AuthAWSSigV4}, AuthAWSSigV4},
	} {
		u, _ := url.Parse(tc.url)
		if got, err := SelectAuth(u, tc.o); err != nil || got != tc.want {
			t.Errorf("SelectAuth(%s, %+v) = %q, %v; want %q", tc.url, tc.o, got, err, tc.want)
		}
	}
}

func TestFunctionURLRegion(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-central-1.on.aws", "eu-central-1"},
		{"x.lambda-url.us-east-1.on.aws", "us-east-1"},
		{"api.example.com", ""},
		{"x.lambda-url.us-east-1.on.aws.evil.example", ""},
		{"127.0.0.1", ""},
	} {
		if got := FunctionURLRegion(tc.host); got != tc.want {
			t.Errorf("FunctionURLRegion(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

func TestObjectPath(t *testing.T) {
	for _, tc := range []struct {
		key  api.Key
		want string
	}{
		{api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}, "/v1/namespaces/default/certificates/web"},
		{api.Key{Kind: api.KindClusterIssuer, Name: "ca"}, "/v1/clusterissuers/ca"},
		{api.Key{Kind: api.KindClusterIssuer, Namespace: "ignored", Name: "ca"}, "/v1/clusterissuers/ca"},
		{api.Key{Kind: api.KindCertificateRequest, Namespace: "a b", Name: "x"}, "/v1/namespaces/a%20b/certificaterequests/x"},
	} {
		if got, err := ObjectPath(tc.key); err != nil || got != tc.want {
			t.Errorf("ObjectPath(%v) = %q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
	if _, err := ObjectPath(api.Key{Kind: "Widget", Name: "x"}); err == nil || !strings.Contains(err.Error(), `unknown kind "Widget"`) {
		t.Errorf("ObjectPath(Widget): %v", err)
	}
}
