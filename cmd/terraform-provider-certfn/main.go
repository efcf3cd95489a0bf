// Command terraform-provider-certfn is certfn's Terraform provider
// (internal/tfprovider), served to the terraform CLI over the plugin
// protocol. Install it with `make provider` (docs/deploy/terraform.md).
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/certfn/certfn/internal/tfprovider"
)

// version is set by the build (-ldflags -X main.version=...).
var version = "dev"

func main() {
	debug := flag.Bool("debug", false, "run with support for debuggers such as delve (prints TF_REATTACH_PROVIDERS)")
	flag.Parse()
	err := providerserver.Serve(context.Background(), tfprovider.New(version, tfprovider.Options{}),
		providerserver.ServeOpts{Address: tfprovider.Address, Debug: *debug})
	if err != nil {
		log.Fatal(err)
	}
}
