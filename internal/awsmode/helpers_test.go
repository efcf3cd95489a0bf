package awsmode_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

var caller = app.Caller{Username: "test:admin", Groups: []string{"system:authenticated", app.SuperuserGroup}}

// put stores obj as a record (what the engine would have written), with
// its controller as owner and no due time.
func put(t *testing.T, rt *awsmode.Runtime, obj api.Object) int64 {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rt.Store.Create(context.Background(), ports.Record{Key: api.KeyOf(obj), Owner: api.OwnerKey(obj), Data: data})
	if err != nil {
		t.Fatalf("create %s: %v", api.KeyOf(obj), err)
	}
	return rec.Version
}

// load reads key through rt's repository.
func load(t *testing.T, rt *awsmode.Runtime, key api.Key) (api.Object, int64) {
	t.Helper()
	rec, err := rt.Store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	obj, err := repo.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	return obj, rec.Version
}

// drain receives and deletes every visible message of url and returns the
// bodies, sorted.
func drain(t *testing.T, e *awstest.Env, url string) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := e.SQS.Client.ReceiveMessage(e.Ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			sort.Strings(bodies)
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := e.SQS.Client.DeleteMessage(e.Ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// send puts a raw message on url, with the format attribute when format
// is not empty.
func send(t *testing.T, e *awstest.Env, url, body, format string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	if format != "" {
		in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{"certfn-format": {DataType: aws.String("String"), StringValue: aws.String(format)}}
	}
	if _, err := e.SQS.Client.SendMessage(e.Ctx, in); err != nil {
		t.Fatal(err)
	}
}

func apply(t *testing.T, rt *awsmode.Runtime, manifest string) {
	t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := rt.App.Service.Apply(context.Background(), caller, []api.Object{o}); err != nil {
			t.Fatalf("apply %s: %v", api.KeyOf(o), err)
		}
	}
}

func clusterIssuer(name string, spec api.IssuerSpec, ready bool) *api.ClusterIssuer {
	iss := &api.ClusterIssuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindClusterIssuer},
		ObjectMeta: api.ObjectMeta{Name: name, Generation: 1}, Spec: spec}
	if ready {
		api.SetCondition(&iss.Status.Conditions, api.Condition{Type: api.IssuerConditionReady, Status: api.ConditionTrue, Reason: "test"}, awstest.T0)
	}
	return iss
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// failGets makes Get of one key fail with a transient error (throttling
// past the SDK's retries).
type failGets struct {
	ports.Store
	key api.Key
}

func (f failGets) Get(ctx context.Context, k api.Key) (ports.Record, error) {
	if k == f.key {
		return ports.Record{}, errors.New("dynamodb: GetItem: ProvisionedThroughputExceededException (injected)")
	}
	return f.Store.Get(ctx, k)
}
