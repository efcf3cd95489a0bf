// Package porttest holds the contract suites of the ports in core/ports.
// Every adapter (adapters/local, adapters/aws, adapters/gcp) runs them from
// its own tests, so that all backends keep the same semantics:
//
//	func TestStoreContract(t *testing.T) {
//		porttest.StoreSuite(t, func(t *testing.T) ports.Store { return newStore(t) })
//	}
//
// Each suite asks its factory for a fresh, empty instance per subtest, so a
// backend shared between subtests (a cloud table, a queue) must hand out an
// isolated one (a new table name, a new queue) or clean it up.
//
// Times the suites store are whole milliseconds: a backend must keep at
// least millisecond precision for NextRunAt.
package porttest
