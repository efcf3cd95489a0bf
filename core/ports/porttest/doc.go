// Package porttest holds the contract suites of the ports in core/ports
// (StoreSuite, SecretSuite, QueueSuite, NotifierSuite) and of the DNS-01
// providers (DNSProviderSuite). Every implementation — core/memory, adapters/local,
// adapters/aws/*, adapters/dns/* — runs them from its own tests, so that
// all backends keep the same semantics:
//
//	func TestStoreContract(t *testing.T) {
//		porttest.StoreSuite(t, func(t *testing.T) ports.Store { return newStore(t) })
//	}
//
// README.md in this directory is the matrix of who runs which suite
// against what emulator or service (TestMatrix keeps it true).
//
// Each suite asks its factory for a fresh, empty instance per subtest, so a
// backend shared between subtests (a cloud table, a queue) must hand out an
// isolated one (a new table name, a new queue) or clean it up.
// DNSProviderSuite instead uses a fresh record name per case under one zone.
//
// Times the suites store are whole milliseconds: a backend must keep at
// least millisecond precision for NextRunAt.
//
// The package imports nothing outside core but libdns (the DNS-01
// provider interface), so adapters link no DNS library by running the
// store, secret or queue suite.
package porttest
