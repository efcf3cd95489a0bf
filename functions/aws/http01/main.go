// Command http01 is certfn's http01 Lambda function (provided.al2023, built by
// `make lambda` as dist/lambda/http01.zip). It answers ACME HTTP-01 challenges
// (GET /.well-known/acme-challenge/{token}) behind a public Function URL or
// as an ALB target, from the Challenges in the state store.
// Configuration comes from environment variables (docs/deploy/aws.md, "Lambda
// functions"); internal/awsmode assembles the function and holds the
// handler. With CERTFN_INIT_ONLY=1 it exits right after initialisation
// (cold-start measurement).
package main

import (
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
)

func main() {
	awsmode.Main(app.HTTP01.Name, func(rt *awsmode.Runtime) any { return rt.HandleHTTP })
}
