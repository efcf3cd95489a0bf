package awstest

import (
	"context"
	"maps"
	"sort"
	"strings"
	"sync"

	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/aws/secrets"
)

// CountingSQS is an SQS client that counts requests per operation (what
// SQS bills) and can fail ChangeMessageVisibility on demand. It
// implements sqsq.API.
type CountingSQS struct {
	Client *sqs.Client

	mu     sync.Mutex
	counts map[string]int
	// Visibility records each ChangeMessageVisibility's timeout (seconds).
	Visibility []int32
}

// NewCountingSQS wraps c.
func NewCountingSQS(c *sqs.Client) *CountingSQS {
	return &CountingSQS{Client: c, counts: map[string]int{}}
}

func (s *CountingSQS) inc(op string) {
	s.mu.Lock()
	s.counts[op]++
	s.mu.Unlock()
}

// relabel moves one count from op to as.
func (s *CountingSQS) relabel(op, as string) {
	s.mu.Lock()
	if s.counts[op] > 0 {
		s.counts[op]--
		s.counts[as]++
	}
	s.mu.Unlock()
}

// Counts returns a copy of the request counts.
func (s *CountingSQS) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// VisibilityChanges returns a copy of the recorded visibility timeouts.
func (s *CountingSQS) VisibilityChanges() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int32(nil), s.Visibility...)
}

// Reset zeroes the counts and the recorded visibility changes.
func (s *CountingSQS) Reset() {
	s.mu.Lock()
	s.counts, s.Visibility = map[string]int{}, nil
	s.mu.Unlock()
}

// SendMessage implements sqsq.API.
func (s *CountingSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.inc("SendMessage")
	return s.Client.SendMessage(ctx, in, o...)
}

// SendMessageBatch implements sqsq.API.
func (s *CountingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	s.inc("SendMessageBatch")
	return s.Client.SendMessageBatch(ctx, in, o...)
}

// ReceiveMessage implements sqsq.API.
func (s *CountingSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	s.inc("ReceiveMessage")
	return s.Client.ReceiveMessage(ctx, in, o...)
}

// DeleteMessage implements sqsq.API.
func (s *CountingSQS) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	s.inc("DeleteMessage")
	return s.Client.DeleteMessage(ctx, in, o...)
}

// DeleteMessageBatch deletes a batch (the event source mapping's delete).
func (s *CountingSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	s.inc("DeleteMessageBatch")
	return s.Client.DeleteMessageBatch(ctx, in, o...)
}

// ChangeMessageVisibility implements sqsq.API.
func (s *CountingSQS) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	s.inc("ChangeMessageVisibility")
	s.mu.Lock()
	s.Visibility = append(s.Visibility, in.VisibilityTimeout)
	s.mu.Unlock()
	return s.Client.ChangeMessageVisibility(ctx, in, o...)
}

// Counters is a ports.Metrics that keeps counter sums in memory, keyed
// name{label=value,...} (labels sorted), as local.Counters does.
type Counters struct {
	mu sync.Mutex
	m  map[string]float64
}

// NewCounters returns empty counters.
func NewCounters() *Counters { return &Counters{m: map[string]float64{}} }

func seriesKey(name string, labels []string) string {
	if len(labels) < 2 {
		return name
	}
	var parts []string
	for i := 0; i+1 < len(labels); i += 2 {
		parts = append(parts, labels[i]+"="+labels[i+1])
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Inc implements ports.Metrics.
func (c *Counters) Inc(name string, labels ...string) {
	c.mu.Lock()
	c.m[seriesKey(name, labels)]++
	c.mu.Unlock()
}

// Observe implements ports.Metrics (sums observations).
func (c *Counters) Observe(name string, v float64, labels ...string) {
	c.mu.Lock()
	c.m[seriesKey(name, labels)] += v
	c.mu.Unlock()
}

// Sum returns the sum of every series of name (any labels).
func (c *Counters) Sum(name string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s float64
	for k, v := range c.m {
		if k == name || strings.HasPrefix(k, name+"{") {
			s += v
		}
	}
	return s
}

// Get returns one series (name{labels}).
func (c *Counters) Get(series string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[series]
}

// SecretCounts counts the functions' secret store calls per operation,
// whichever Secrets Manager (the double, moto, LocalStack) or Parameter
// Store (moto, LocalStack) they use.
type SecretCounts struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *SecretCounts) inc(op string) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[op]++
	c.mu.Unlock()
}

// Counts returns a copy of the counts.
func (c *SecretCounts) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset zeroes the counts.
func (c *SecretCounts) Reset() {
	c.mu.Lock()
	c.counts = nil
	c.mu.Unlock()
}

// countingSecrets is a secrets.API that counts every call in counts.
type countingSecrets struct {
	api    secrets.API
	counts *SecretCounts
}

func (s countingSecrets) CreateSecret(ctx context.Context, in *sm.CreateSecretInput, o ...func(*sm.Options)) (*sm.CreateSecretOutput, error) {
	s.counts.inc("CreateSecret")
	return s.api.CreateSecret(ctx, in, o...)
}

func (s countingSecrets) GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, o ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
	s.counts.inc("GetSecretValue")
	return s.api.GetSecretValue(ctx, in, o...)
}

func (s countingSecrets) PutSecretValue(ctx context.Context, in *sm.PutSecretValueInput, o ...func(*sm.Options)) (*sm.PutSecretValueOutput, error) {
	s.counts.inc("PutSecretValue")
	return s.api.PutSecretValue(ctx, in, o...)
}

func (s countingSecrets) DeleteSecret(ctx context.Context, in *sm.DeleteSecretInput, o ...func(*sm.Options)) (*sm.DeleteSecretOutput, error) {
	s.counts.inc("DeleteSecret")
	return s.api.DeleteSecret(ctx, in, o...)
}

func (s countingSecrets) DescribeSecret(ctx context.Context, in *sm.DescribeSecretInput, o ...func(*sm.Options)) (*sm.DescribeSecretOutput, error) {
	s.counts.inc("DescribeSecret")
	return s.api.DescribeSecret(ctx, in, o...)
}

func (s countingSecrets) TagResource(ctx context.Context, in *sm.TagResourceInput, o ...func(*sm.Options)) (*sm.TagResourceOutput, error) {
	s.counts.inc("TagResource")
	return s.api.TagResource(ctx, in, o...)
}

func (s countingSecrets) UpdateSecretVersionStage(ctx context.Context, in *sm.UpdateSecretVersionStageInput, o ...func(*sm.Options)) (*sm.UpdateSecretVersionStageOutput, error) {
	s.counts.inc("UpdateSecretVersionStage")
	return s.api.UpdateSecretVersionStage(ctx, in, o...)
}

var _ secrets.API = countingSecrets{}
