package porttest_test

import (
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/ports/porttest"
)

// The suite's provider type is the Solver's, both ways round.
var (
	_ dns01.Provider       = porttest.DNSProvider(nil)
	_ porttest.DNSProvider = dns01.Provider(nil)
)
