// Command worker is certfn's worker Lambda function (provided.al2023, built by
// `make lambda` as dist/lambda/worker.zip). It consumes the worker queue
// (SQS event source mapping with ReportBatchItemFailures) and runs one
// reconcile step per message; approved requests of CA and selfSigned
// issuers and CA issuers go to the signer queue, since the worker holds
// no CA key.
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
	awsmode.Main(app.Worker.Name, func(rt *awsmode.Runtime) any { return rt.HandleSQS })
}
