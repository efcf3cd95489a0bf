package apiclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// The client never takes another object for the one asked for: an answer
// naming another object (a server that ignored the name, a redirect to a
// list) is an error, as is a delete answered as done when a dry run was
// asked for; the client sends what it was asked, never drops it.
func TestAnswersMustBeTheObjectAskedFor(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet:
			_, _ = io.WriteString(w, `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"other","namespace":"default"}}`)
		default:
			_, _ = io.WriteString(w, `{"kind":"Certificate","namespace":"default","name":"web","deleted":true}`)
		}
	}))
	defer srv.Close()
	c, err := New(context.Background(), Options{Server: srv.URL, Auth: AuthNone})
	if err != nil {
		t.Fatal(err)
	}
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	if _, err := c.Get(context.Background(), key); err == nil || !strings.Contains(err.Error(), "answered Certificate/default/other") {
		t.Fatalf("Get answered with another object: %v", err)
	}
	if _, err := c.Get(context.Background(), api.Key{Kind: api.KindCertificate, Namespace: "default"}); err == nil {
		t.Fatal("Get without a name was sent")
	}
	if err := c.Delete(context.Background(), key, app.DeleteOptions{DryRun: true}); err == nil {
		t.Fatal("a dry-run delete answered as deleted was taken as a dry run")
	}
	uid := "u-1"
	if err := c.Delete(context.Background(), key, app.DeleteOptions{Preconditions: app.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	// Only the request matters here (the fake answers no List).
	_, _ = c.List(context.Background(), api.KindCertificate, "default", app.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.name!=x"})
	want := []string{
		"GET /v1/namespaces/default/certificates/web ",
		"DELETE /v1/namespaces/default/certificates/web?dryRun=All ",
		`DELETE /v1/namespaces/default/certificates/web {"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u-1"}}`,
		"GET /v1/namespaces/default/certificates?fieldSelector=metadata.name%21%3Dx&labelSelector=app%3Dweb ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
