// Command lambdazip writes the deployment zip of a Go Lambda function for
// the provided.al2023 runtime: one entry named "bootstrap", executable
// (mode 0755), with a fixed modification time so that the same binary
// always gives the same zip (Terraform's source_code_hash stays stable).
// `make lambda` uses it, so no zip tool needs to be installed.
//
//	go run ./tools/lambdazip -o dist/lambda/worker-arm64.zip path/to/bootstrap
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/certfn/certfn/tools/lambdazip/zipper"
)

func main() {
	out := flag.String("o", "", "zip file to write (required)")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lambdazip -o <out.zip> <bootstrap binary>")
		os.Exit(2)
	}
	if err := zipper.WriteFile(*out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "lambdazip:", err)
		os.Exit(1)
	}
}
