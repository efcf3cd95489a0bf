package awsmode

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// Main is the whole main of a function: assemble the role called name
// (core/app.Functions) from the environment (exit 1 naming every problem), return right after
// initialisation when CERTFN_INIT_ONLY=1 (cold-start measurement), else
// hand the role's handler to the Lambda runtime. It is the only place a
// function exits.
func Main(name string, handler func(*Runtime) any) {
	rt, err := FromEnv(context.Background(), name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "certfn %s: %v\n", name, err)
		os.Exit(1)
	}
	if InitOnly(os.Getenv) {
		return
	}
	lambda.Start(handler(rt))
}
