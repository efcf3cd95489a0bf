package awsmode

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// Main is the whole main of a function: assemble role from the
// environment (exit 1 naming every problem), return right after
// initialisation when CERTFN_INIT_ONLY=1 (cold-start measurement), else
// hand the role's handler to the Lambda runtime. It is the only place a
// function exits.
func Main(role Role, handler func(*Runtime) any) {
	rt, err := FromEnv(context.Background(), role)
	if err != nil {
		fmt.Fprintf(os.Stderr, "certfn %s: %v\n", role, err)
		os.Exit(1)
	}
	if InitOnly(os.Getenv) {
		return
	}
	lambda.Start(handler(rt))
}
