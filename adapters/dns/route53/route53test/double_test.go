package route53test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/certfn/certfn/adapters/aws/awscfg"
)

// The end-to-end hooks: OnTXT sees each TXT set written or deleted, its
// values decoded; with SyncAfter a change is read PENDING that many
// times, then INSYNC; Changes and StatusAnswers record it all.
func TestOnTXTAndSyncAfter(t *testing.T) {
	d := New(t)
	d.SyncAfter = 2
	var got []TXTUpdate
	d.OnTXT = func(u TXTUpdate) { got = append(got, u) }
	zone := d.AddZone("example.test", false)
	c := r53.NewFromConfig(awscfg.ForEndpoint(d.URL, awscfg.Retry{MaxAttempts: 1}))
	ctx := context.Background()
	change := func(action types.ChangeAction, values ...string) string {
		t.Helper()
		var rrs []types.ResourceRecord
		for _, v := range values {
			rrs = append(rrs, types.ResourceRecord{Value: aws.String(v)})
		}
		out, err := c.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone),
			ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: action, ResourceRecordSet: &types.ResourceRecordSet{
				Name: aws.String("_acme-challenge.www.example.test"), Type: types.RRTypeTxt, TTL: aws.Int64(60), ResourceRecords: rrs}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ChangeInfo.Id)
	}
	id := change(types.ChangeActionUpsert, `"a\"b"`, `"long" "er"`)
	var statuses []string
	for range 3 {
		out, err := c.GetChange(ctx, &r53.GetChangeInput{Id: aws.String(id)})
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, string(out.ChangeInfo.Status))
	}
	if want := []string{"PENDING", "PENDING", "INSYNC"}; !slices.Equal(statuses, want) {
		t.Fatalf("GetChange statuses %q, want %q", statuses, want)
	}
	change(types.ChangeActionDelete, `"a\"b"`, `"long" "er"`)
	want := []TXTUpdate{
		{ZoneID: zone, Name: "_acme-challenge.www.example.test.", Texts: []string{`a"b`, "longer"}},
		{ZoneID: zone, Name: "_acme-challenge.www.example.test."},
	}
	if len(got) != len(want) {
		t.Fatalf("OnTXT got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].ZoneID != want[i].ZoneID || got[i].Name != want[i].Name || !slices.Equal(got[i].Texts, want[i].Texts) {
			t.Fatalf("OnTXT[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	ch := d.Changes()
	if len(ch) != 2 || ch[0].Action != "UPSERT" || ch[1].Action != "DELETE" || ch[0].ZoneID != zone {
		t.Fatalf("Changes = %+v", ch)
	}
	short := ch[0].ID
	if a := d.StatusAnswers()[short]; !slices.Equal(a, statuses) {
		t.Fatalf("StatusAnswers[%s] = %q, want %q", short, a, statuses)
	}
	for _, s := range d.RecordSets(zone) {
		if s.Type == "TXT" {
			t.Fatalf("TXT set left: %+v", s)
		}
	}
}
