// Command signer is certfn's signer Lambda function (provided.al2023, built by
// `make lambda` as dist/lambda/signer.zip). It consumes the signer queue:
// approved CertificateRequests of CA and selfSigned issuers are signed and
// CA issuers checked. It never approves.
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
	awsmode.Main(app.Signer.Name, func(rt *awsmode.Runtime) any { return rt.HandleSQS })
}
