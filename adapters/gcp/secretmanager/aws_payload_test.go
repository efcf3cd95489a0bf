package secretmanager_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/secrets/secretstest"
	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// The AWS adapter (over its own test double) and this one store the same
// bytes for the same secret, and each reads what the other wrote: secrets
// move between clouds with their payload unchanged.
func TestPayloadSameAsAWS(t *testing.T) {
	ctx := context.Background()
	awsDouble := secretstest.New(t)
	awsClient := sm.NewFromConfig(awscfg.ForEndpoint(awsDouble.URL(), awscfg.Retry{MaxAttempts: 1}))
	awsStore, err := secrets.New(awsClient, secrets.Options{Prefix: "certfn"})
	if err != nil {
		t.Fatal(err)
	}
	b := newDoubleBackend(t)
	s := b.store(t, secretmanager.Options{})
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	for _, sec := range []ports.Secret{
		awsLayoutSecret,
		{Namespace: "default", Name: "bin", Data: map[string][]byte{"keystore.jks": binary, "tls.crt": []byte("é ü <&> \"q\"\n")}},
		{Namespace: "default", Name: "empty", Data: map[string][]byte{}},
		{Namespace: "default", Name: "meta", Data: map[string][]byte{"tls.key": []byte("k")},
			Labels:      map[string]string{api.LabelNextPrivateKey: "true"},
			Annotations: map[string]string{api.AnnotationAltNames: "a.example.com,b.example.com"}},
	} {
		if err := awsStore.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		out, err := awsClient.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String("certfn/" + sec.Namespace + "/" + sec.Name)})
		if err != nil {
			t.Fatal(err)
		}
		awsPayload := aws.ToString(out.SecretString)
		gcpPayload := string(b.raw(t, mustID(t, s, secretmanager.ClassOf(secretmanager.RoleOf(sec)), sec.Namespace, sec.Name), "latest"))
		if awsPayload != gcpPayload {
			t.Errorf("%s: payloads differ\n AWS %s\n GCP %s", sec.Name, awsPayload, gcpPayload)
		}
		// Read what the other wrote.
		moved := sec
		moved.Name = sec.Name + "-from-aws"
		b.addRaw(t, mustID(t, s, secretmanager.ClassOf(secretmanager.RoleOf(sec)), sec.Namespace, moved.Name), []byte(awsPayload))
		got, err := s.Get(ctx, sec.Namespace, moved.Name)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, sec.Name, got, moved)
	}
}

func checkSame(t *testing.T, what string, got, want ports.Secret) {
	t.Helper()
	if got.Namespace != want.Namespace || got.Name != want.Name || len(got.Data) != len(want.Data) {
		t.Errorf("%s: got %s/%s with %d keys, want %s/%s with %d", what, got.Namespace, got.Name, len(got.Data), want.Namespace, want.Name, len(want.Data))
	}
	for k, v := range want.Data {
		if string(got.Data[k]) != string(v) {
			t.Errorf("%s: data[%s] differs", what, k)
		}
	}
	if len(got.Labels) != len(want.Labels) || len(got.Annotations) != len(want.Annotations) {
		t.Errorf("%s: metadata %v %v, want %v %v", what, got.Labels, got.Annotations, want.Labels, want.Annotations)
	}
}
