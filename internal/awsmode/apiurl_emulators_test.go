package awsmode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/tests/emulators"
)

// The api function as main builds it — environment, SDK configuration, the
// DynamoDB store and the SQS queue — against dynalite and local-aws-sqs:
// an applied resource lands in the table and its key on the worker queue.
func TestAPIFunctionOnEmulators(t *testing.T) {
	ctx := context.Background()
	dbEP, sqsEP := emulators.Endpoint(t, emulators.DynamoDB), emulators.Endpoint(t, emulators.SQS)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": dbEP, "AWS_ENDPOINT_URL_SQS": sqsEP, "AWS_ACCESS_KEY_ID": "test",
		"AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "", "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_CONFIG_FILE": none,
		"AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	retry := awscfg.Retry{MaxAttempts: 3, MaxBackoff: 20 * time.Millisecond}
	db := dynamodb.NewFromConfig(awscfg.ForEndpoint(dbEP, retry))
	table := fmt.Sprintf("certfn-api-test-%d", time.Now().UnixNano()%1e9)
	if err := dynamo.CreateTable(ctx, db, table, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	q := sqs.NewFromConfig(awscfg.ForEndpoint(sqsEP, retry))
	qo, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: qo.QueueUrl}) })

	rt, err := awsmode.FromEnvWith(ctx, app.API.Name, awsmode.Options{Getenv: env{"CERTFN_FUNCTION": "api", "CERTFN_TABLE": table,
		"CERTFN_QUEUE_URL": aws.ToString(qo.QueueUrl), "CERTFN_API_ADMINS": adminRole}.get, Logger: apitest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	h := rt.HandleFunctionURL
	invoke := func(r req) (int, string) {
		t.Helper()
		out, err := h(ctx, mustEvent(t, r))
		if err != nil {
			t.Fatal(err)
		}
		return out.StatusCode, out.Body
	}
	if code, body := invoke(req{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: apitest.Issuer("default", "ss"), arn: adminRole}); code != 200 ||
		!strings.Contains(body, `"action":"created"`) {
		t.Fatalf("apply: %d %s", code, body)
	}
	code, body := invoke(req{method: "GET", path: "/v1/namespaces/default/issuers/ss", arn: adminRole})
	var iss api.Issuer
	if err := json.Unmarshal([]byte(body), &iss); code != 200 || err != nil || iss.Spec.SelfSigned == nil || iss.ResourceVersion == "" {
		t.Fatalf("get: %d %s %v", code, body, err)
	}
	if code, body := invoke(req{method: "GET", path: "/v1/issuers", arn: mallory}); code != 403 {
		t.Fatalf("unbound caller: %d %s", code, body)
	}
	msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qo.QueueUrl, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range msgs.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	if fmt.Sprint(bodies) != "[Issuer/default/ss]" {
		t.Fatalf("queued keys %v, want [Issuer/default/ss]", bodies)
	}
}

// mustEvent decodes the event JSON of r.
func mustEvent(t *testing.T, r req) events.LambdaFunctionURLRequest {
	t.Helper()
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(r.json(), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}
