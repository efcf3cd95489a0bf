// Package memory holds in-memory implementations of the ports in
// core/ports: Store (ports.Store), Secrets (ports.SecretStore), Queue
// (ports.Queue) and Notifier (ports.Notifier). They keep the same
// contracts as every adapter — their tests run the suites of
// core/ports/porttest — so core's own tests can run the kernel on them
// instead of on an adapter.
//
// Everything is held in the process's memory and lost with it; nothing
// here reads the wall clock (Queue measures delays and leases on an
// injected ports.Clock, Store.Due is given its now). Every type is safe
// for concurrent use, and copies what it is given and what it returns, so
// a caller mutating a record, a secret or their byte slices never changes
// what is stored.
//
// Invalid input (an empty key part, a '/' inside one, a List without a
// kind, a non-positive Due limit, a negative Delete version) is a
// permanent error (errs.Permanent), as in the adapters. A canceled or
// expired context makes every method fail with the context's error before
// it reads or writes anything.
package memory
