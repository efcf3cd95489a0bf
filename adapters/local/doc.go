// Package local implements the ports for certfn's local mode (`certfn serve`
// and the CLI on one machine; docs/design/README.md and docs/ARCHITECTURE.md):
//
//   - Store: the state store on one SQLite file (pure-Go driver), shared by
//     several processes at once (WAL mode); conditional writes in a single
//     statement and a partial index on next_run_at for the due sweep.
//   - Inbox: a small table in the same file through which the CLI wakes a
//     running `certfn serve` within a poll interval.
//   - SecretStore: secrets as plain files <dir>/<namespace>/<name>/<key>
//     that nginx or haproxy can read directly, replaced atomically with the
//     Kubernetes atomic-writer layout (..data symlink swapped by rename(2)).
//   - MemQueue: the in-process queue, core/memory's Queue (delays on an
//     injected clock, de-duplication by key, leases) plus Wait, which
//     sleeps on a real timer until there is work.
//   - Counters: an in-memory metrics sink with a Prometheus text writer.
//
// Every adapter runs the contract suites of core/ports/porttest.
package local
