package gcpmode_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/certfn/certfn/adapters/gcp/pubsubnotify"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/tests/emulators"
)

// The worker built from its environment with CERTFN_NOTIFY_TOPIC
// publishes the issuance events on that topic of the official Pub/Sub
// emulator: one Issued message per Certificate of the CA chain, with the
// deployment named by the secret prefix, read back from a subscription.
func TestWorkerPublishesNotificationsOnPubSub(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", emulators.PubSub(t))
	ctx := context.Background()
	admin, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	id := time.Now().UnixNano()
	topic := fmt.Sprintf("projects/%s/topics/notifications-%d", project, id)
	sub := fmt.Sprintf("projects/%s/subscriptions/notifications-%d", project, id)
	if _, err := admin.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	d := newDeploymentWith(t, env{"CERTFN_NOTIFY_TOPIC": topic, "CERTFN_SECRET_PREFIX": "pki"})
	if w := d.do(d.api, "POST", "/v1/apply", "token-ops@example.com", caChain); w.Code != 200 {
		t.Fatalf("apply: %d %s", w.Code, w.Body)
	}
	for i := 0; i < 4; i++ {
		d.drain(false)
		if w := d.do(d.sched, "POST", "/sweep", "", ""); w.Code != 200 {
			t.Fatalf("sweep: %d %s", w.Code, w.Body)
		}
	}
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		//lint:ignore SA1019 returnImmediately is discouraged for production pulls; the test polls until its deadline
		res, err := admin.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: 10, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.ReceivedMessages {
			n, err := pubsubnotify.ParseMessage(m.GetMessage().GetData(), m.GetMessage().GetAttributes())
			if err != nil {
				t.Fatalf("ParseMessage: %v", err)
			}
			if dep := m.GetMessage().GetAttributes()["deployment"]; dep != "pki" || n.Type != ports.NotificationIssued || n.Revision != 1 {
				t.Errorf("message %s of deployment %q, want Issued revision 1 of pki", n, dep)
			}
			got = append(got, n.Certificate.String())
		}
		if len(res.ReceivedMessages) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	sort.Strings(got)
	if len(got) != 2 || got[0] != "Certificate/cert-manager/root" || got[1] != "Certificate/default/web" {
		t.Fatalf("notifications %v, want the Issued events of root and web", got)
	}
	if c := d.cert("web", "default"); c.Status.NotifiedRevision == nil || *c.Status.NotifiedRevision != 1 {
		t.Fatalf("web: notifiedRevision %v, want 1", c.Status.NotifiedRevision)
	}
}
