// Command api is certfn's `api` function on AWS Lambda (docs/design/roles.md): the
// HTTP API of adapters/httpapi behind a Lambda Function URL with AWS_IAM
// auth (BUFFERED invoke mode). The caller is the IAM principal the Function
// URL verified (requestContext.authorizer.iam.userArn); the bindings decide
// what it may do, and it is recorded as the requester of the
// CertificateRequests it creates. The function reads and writes resources
// in the DynamoDB table and enqueues reconcile keys on the worker queue; it
// never reads the secret store.
//
// Configuration comes from environment variables (docs/deploy/aws.md, "Lambda
// functions"), parsed by internal/awsmode (role api), which assembles the
// function and holds the handler: CERTFN_TABLE, CERTFN_QUEUE_URL and the
// other shared variables, plus CERTFN_API_MAX_BODY (request body limit in
// bytes, default 1048576) and CERTFN_API_ADMINS (comma-separated IAM
// user/role ARNs in system:masters, e.g. to apply the first bindings). With
// CERTFN_INIT_ONLY=1 it exits right after initialisation.
package main

import (
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
)

func main() {
	awsmode.Main(app.API.Name, func(rt *awsmode.Runtime) any { return rt.HandleFunctionURL })
}
