// Command scheduler is certfn's scheduler Lambda function (provided.al2023, built by
// `make lambda` as dist/lambda/scheduler.zip). EventBridge Scheduler invokes
// it every minute: it sends the keys whose nextRunAt has passed (the due
// index) to the worker queue.
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
	awsmode.Main(app.Scheduler.Name, func(rt *awsmode.Runtime) any { return rt.HandleSchedule })
}
