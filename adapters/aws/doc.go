// Package aws groups certfn's adapters for Amazon Web Services
// (docs/ARCHITECTURE.md). The implementations live in sub-packages, each running the
// contract suite of its port (core/ports/porttest):
//
//   - dynamo: ports.Store on one DynamoDB table (conditional writes on a
//     version attribute, a sharded sparse due-time index, KEYS_ONLY list
//     indexes, a TTL attribute).
//   - sqsq: ports.Queue on an SQS standard queue (reconcile keys as message
//     bodies, DelaySeconds up to 900 s, receive/ack/retry for the handler).
//   - secrets: ports.SecretStore on AWS Secrets Manager
//     (<prefix>/<namespace>/<name>, a JSON payload, a KMS key, tags;
//     renewals put new versions so AWSPREVIOUS keeps the previous key pair).
//   - awscfg: the SDK configuration they share (bounded retries with backoff).
//
// Core never imports these packages; functions/ and cmd/ build them. See
// docs/deploy/aws.md for the table, queue and secret layouts.
package aws
