package awse2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
)

// Prices assumed for the cost figures: public on-demand prices (us-east-1)
// as docs/deploy/aws.md states them. Lambda's billed duration is not measurable
// here: it is estimated as the handlers' time on the emulators plus
// awsRoundTrip per request to DynamoDB, SQS and Secrets Manager, at the
// Terraform module's default memory (256 MB).
const (
	lambdaPerRequest = 0.20 / 1e6    // $ per request
	lambdaPerGBs     = 0.0000133334  // $ per GB-second, arm64
	lambdaMemoryGB   = 256.0 / 1024  // infra/terraform/aws lambda_memory_mb default
	awsRoundTrip     = 0.010         // seconds per AWS request, assumed (in-region)
	dynamoPerWRU     = 1.25 / 1e6    // $ per write request unit, on-demand
	dynamoPerRRU     = 0.25 / 1e6    // $ per read request unit, on-demand
	sqsPerRequest    = 0.40 / 1e6    // $ per request (standard queue)
	kmsPerRequest    = 0.03 / 10_000 // $ per KMS request (the module's customer-managed key)
)

// secretPrices are one secret store's prices (public, us-east-1, checked
// 2026-11; docs/deploy/aws.md states them with the date).
type secretPrices struct {
	name string
	// perSecretMonth is the storage price of one secret for a month.
	perSecretMonth float64
	// perCall is the price of one API call.
	perCall float64
	// kmsPerCall is how many KMS requests one call makes on average
	// (reads decrypt, writes encrypt with the deployment's key).
	kmsPerCall float64
}

var (
	// Secrets Manager: $0.40 per secret and month, $0.05 per 10,000 API
	// calls; every value read or write is a KMS request with a
	// customer-managed key.
	secretsManagerPrices = secretPrices{name: "Secrets Manager", perSecretMonth: 0.40, perCall: 0.05 / 10_000, kmsPerCall: 1}
	// Parameter Store, standard tier at standard throughput: no storage
	// or API price; each SecureString read or write is a KMS request.
	// (Advanced parameters, for payloads over 4 KB: $0.05 per parameter
	// and month; higher throughput: $0.05 per 10,000 calls.)
	parameterStorePrices = secretPrices{name: "Parameter Store (standard tier)", perSecretMonth: 0, perCall: 0, kmsPerCall: 1}
)

// figures is one piece of work's counts, per unit of work.
type figures struct {
	invocations, dynamoReads, dynamoWrites, sqsRequests, smCalls float64
	prices                                                       secretPrices
	readUnits, writeUnits                                        float64
	handlerMs                                                    float64
}

// lambdaSeconds estimates the billed duration of the work (see above).
func (f figures) lambdaSeconds() float64 {
	return f.handlerMs/1000 + awsRoundTrip*(f.dynamoReads+f.dynamoWrites+f.sqsRequests+f.smCalls)
}

// perUnit divides u by units. Invocations are counted as the messages the
// worker and signer handled (one invocation each: work spread over time
// is not batched) plus extraInvocations (api calls); scheduler runs are a
// fixed cost, counted apart (idle run); SQS requests likewise (see
// unbatchedSQS). The due-index queries of the
// sweep that found the work are included.
func perUnit(u awstest.Usage, extraInvocations int, units int, prices secretPrices) figures {
	n := float64(units)
	f := figures{
		prices:       prices,
		invocations:  float64(u.HandledMessages()+extraInvocations) / n,
		dynamoReads:  float64(u.DynamoDB.Reads) / n,
		dynamoWrites: float64(u.DynamoDB.Writes) / n,
		readUnits:    u.DynamoDB.ReadUnits / n,
		writeUnits:   u.DynamoDB.WriteUnits / n,
		sqsRequests:  float64(unbatchedSQS(u)) / n,
		smCalls:      float64(u.TotalSecrets()) / n,
		handlerMs:    float64(u.HandlerTime.Milliseconds()) / n,
	}
	// Capacity units as the emulator reports them; at least one per request.
	f.readUnits = max(f.readUnits, f.dynamoReads)
	f.writeUnits = max(f.writeUnits, f.dynamoWrites)
	return f
}

// unbatchedSQS counts the SQS requests of u as if every message had been
// received and deleted alone (one ReceiveMessage and one delete each, as
// for invocations), plus every other request as counted.
func unbatchedSQS(u awstest.Usage) int {
	n := 2 * u.HandledMessages()
	for op, v := range u.SQSRequests {
		switch {
		case op == "ReceiveMessage", op == "DeleteMessageBatch", strings.HasSuffix(op, awstest.IdlePoll):
		default:
			n += v
		}
	}
	return n
}

// cost in dollars of one unit of work at the assumed prices.
func (f figures) cost() float64 {
	return f.invocations*lambdaPerRequest + lambdaMemoryGB*f.lambdaSeconds()*lambdaPerGBs +
		f.writeUnits*dynamoPerWRU + f.readUnits*dynamoPerRRU + f.sqsRequests*sqsPerRequest +
		f.smCalls*(f.prices.perCall+f.prices.kmsPerCall*kmsPerRequest)
}

func (f figures) String() string {
	return fmt.Sprintf("%.1f invocations, DynamoDB %.1f reads (%.1f RRU) / %.1f writes (%.1f WRU), %.1f SQS requests, %.1f %s calls, %.0f ms in handlers (emulators), ~%.2f s billed (estimate) → $%.7f",
		f.invocations, f.dynamoReads, f.readUnits, f.dynamoWrites, f.writeUnits, f.sqsRequests, f.smCalls, f.prices.name, f.handlerMs, f.lambdaSeconds(), f.cost())
}

// The requests each piece of work costs on AWS, counted on the emulators:
// an issuance from a CA issuer (api call to Ready), a renewal, a daily
// resync of a Ready certificate, and an idle scheduler run; and what
// 1,000 issuances and 1,000 certificates kept for a month cost at the
// prices above. Targets (for an ACME issuance; a CA issuance must
// stay well within them): ≤ 15 invocations and ≤ 40 DynamoDB writes.
//
// It runs once per secret store the Terraform module offers: Secrets
// Manager (the HAND-WRITTEN TEST DOUBLE, or the environment's endpoint)
// and Parameter Store (secret_store = "ssm", on moto); goal for
// 1,000 certificates kept a month is under $10.
func TestCostPerIssuance(t *testing.T) {
	t.Run("secretsmanager", func(t *testing.T) { testCostPerIssuance(t, nil, secretsManagerPrices) })
	t.Run("ssm", func(t *testing.T) {
		ep := emulators.Moto(t)
		perMonth := testCostPerIssuance(t, func(e *awstest.Env) { e.UseSSM(ep) }, parameterStorePrices)
		if perMonth >= 10 {
			t.Errorf("1,000 certificates kept a month on Parameter Store cost $%.2f, want under $10", perMonth)
		}
	})
}

// testCostPerIssuance measures and logs the figures on the store setup
// picks and returns the cost of 1,000 certificates kept a month.
func testCostPerIssuance(t *testing.T, setup func(*awstest.Env), prices secretPrices) float64 {
	const n = 5
	d := deployEnv(t, setup, nil)
	d.installCA("ops-ca")
	d.apply(leafYAML("warm-up", "ops-ca"))
	d.run()
	d.requireReady("default", "warm-up")

	// Issuance: one certificate at a time, api call to Ready.
	d.ResetUsage()
	for i := range n {
		d.apply(leafYAML(fmt.Sprintf("app-%d", i), "ops-ca"))
		d.run()
	}
	issueUsage := d.Usage()
	for i := range n {
		d.requireReady("default", fmt.Sprintf("app-%d", i))
	}
	issue := perUnit(issueUsage, n /* the api calls */, n, prices)
	t.Logf("issuance (CA), per certificate: %s\n    detail for %d: %s", issue, n, issueUsage)
	if issue.invocations > 15 || issue.dynamoWrites > 40 {
		t.Errorf("per issuance: %.1f invocations (target ≤ 15), %.1f DynamoDB writes (target ≤ 40)", issue.invocations, issue.dynamoWrites)
	}

	// Renewal: every certificate is due at its renewal time; one sweep.
	renewAt := d.cert("default", "app-0").Status.RenewalTime.Time
	d.Clock.Set(renewAt.Add(time.Minute))
	d.ResetUsage()
	d.sweep()
	renewUsage := d.Usage()
	renewed := 0
	for _, name := range []string{"warm-up", "app-0", "app-1", "app-2", "app-3", "app-4"} {
		if revision(d.requireReady("default", name)) == 2 {
			renewed++
		}
	}
	if renewed != n+1 {
		t.Fatalf("%d certificates renewed, want %d", renewed, n+1)
	}
	renew := perUnit(renewUsage, 0, renewed, prices)
	t.Logf("renewal, per certificate: %s\n    detail for %d: %s", renew, renewed, renewUsage)

	// Resync: a Ready certificate is looked at again every ResyncInterval (24 h).
	d.Clock.Advance(24*time.Hour + time.Minute)
	d.ResetUsage()
	res := d.sweep()
	resyncUsage := d.Usage()
	if res.Due < n+1 {
		t.Fatalf("resync sweep found %d due, want at least %d", res.Due, n+1)
	}
	resync := perUnit(resyncUsage, 0, n+1, prices)
	t.Logf("daily resync, per certificate: %s\n    detail for %d: %s", resync, n+1, resyncUsage)
	for _, name := range []string{"warm-up", "app-0"} {
		if revision(d.requireReady("default", name)) != 2 {
			t.Fatalf("%s reissued by a resync", name)
		}
	}

	// An idle scheduler run (every minute, whatever the number of certificates).
	d.Clock.Advance(time.Minute)
	d.ResetUsage()
	if res := d.sweep(); res.Due != 0 {
		t.Fatalf("idle sweep found %d due", res.Due)
	}
	idleUsage := d.Usage()
	idle := perUnit(idleUsage, idleUsage.Invocations[app.Scheduler.Name], 1, prices)
	t.Logf("idle scheduler run: %s", idle)

	// Costs.
	perMonthRenewals := 30.0 / 60 // 90-day certificates renewed at 2/3 of their life
	perCertMonth := prices.perSecretMonth + 30*resync.cost() + perMonthRenewals*renew.cost()
	fixedMonth := 30 * 24 * 60 * idle.cost()
	t.Logf("prices assumed: Lambda $0.20/1M requests + $0.0000133334/GB-s (arm64, 256 MB; duration = handler time + %.0f ms per AWS request), DynamoDB on-demand $1.25/1M WRU and $0.25/1M RRU, SQS $0.40/1M requests, KMS $0.03/10,000 requests; %s $%.2f/secret/month + $%.2f/10,000 calls",
		awsRoundTrip*1000, prices.name, prices.perSecretMonth, prices.perCall*10_000)
	t.Logf("cost per 1,000 issuances (CA): $%.4f", 1000*issue.cost())
	t.Logf("cost per 1,000 certificates kept for a month: $%.2f (%s storage $%.2f, daily resyncs $%.4f, renewals $%.4f) + the scheduler's fixed $%.4f per deployment and month",
		1000*perCertMonth, prices.name, 1000*prices.perSecretMonth, 1000*30*resync.cost(), 1000*perMonthRenewals*renew.cost(), fixedMonth)
	return 1000 * perCertMonth
}
