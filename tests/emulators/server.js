// certfn's launcher for the AWS emulators the adapter tests use.
//
//   node server.js dynamodb   dynalite (in memory, tables ready at once)
//   node server.js sqs        local-aws-sqs (SQS JSON and query protocols)
//
// It listens on a free port of 127.0.0.1, prints one line
// "CERTFN_EMULATOR_ENDPOINT=http://127.0.0.1:PORT" on stdout once it accepts
// connections, and exits when its standard input is closed, so that an
// emulator never outlives the test process that started it (see
// emulators.go). Install the packages with `make emulators`.
'use strict';

const service = process.argv[2];

function ready(server) {
  const { port } = server.address();
  process.stdout.write(`CERTFN_EMULATOR_ENDPOINT=http://127.0.0.1:${port}\n`);
}

function fail(err) {
  process.stderr.write(`emulator ${service}: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
}

// The parent holds our stdin: when it goes away (test finished, killed or
// crashed), so do we.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));

switch (service) {
  case 'dynamodb': {
    const dynalite = require('dynalite');
    const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => ready(server));
    break;
  }
  case 'sqs': {
    const { createSqsServer } = require('local-aws-sqs');
    // emulateQueueCreationLifecycle=false: a deleted queue's name may be
    // reused at once (AWS makes you wait 60 s).
    createSqsServer({ port: 0, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false })
      .then(ready, fail);
    break;
  }
  default:
    fail(`unknown service ${JSON.stringify(service)}: want dynamodb or sqs`);
}
