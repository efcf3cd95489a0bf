package azuredns

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
)

// txtSet is a TXT record set as read or to write.
type txtSet struct {
	ttl int64
	// records hold each TXT record's strings.
	records [][]string
	etag    string
}

// texts returns each record's strings joined.
func (s txtSet) texts() []string {
	out := make([]string, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, strings.Join(r, ""))
	}
	return out
}

// recordSets is what the provider does with Azure DNS or Azure Private
// DNS: list a resource group's zones, and get, put and delete TXT record
// sets with ETag preconditions. Errors are the SDK's (classified by
// Provider.classify).
type recordSets interface {
	// zones lists the names of the zones of rg.
	zones(ctx context.Context, rg string) ([]string, error)
	// get returns the TXT set name of zone, nil when there is none.
	get(ctx context.Context, rg, zone, name string) (*txtSet, error)
	// put writes set as the TXT set name of zone, if its ETag is still
	// etag ("" : only if there is no set).
	put(ctx context.Context, rg, zone, name string, set txtSet, etag string) error
	// delete deletes the TXT set name of zone if its ETag is still etag.
	delete(ctx context.Context, rg, zone, name, etag string) error
}

// newRecordSets returns the Azure DNS or Azure Private DNS clients of c's
// subscription.
func newRecordSets(c Config, cred azcore.TokenCredential, o azcore.ClientOptions) (recordSets, error) {
	// certfn must not register resource providers in the subscription (a
	// 409 MissingSubscriptionRegistration is reported instead).
	opts := &arm.ClientOptions{ClientOptions: o, DisableRPRegistration: true}
	if c.Private {
		rs, err := armprivatedns.NewRecordSetsClient(c.SubscriptionID, cred, opts)
		if err != nil {
			return nil, err
		}
		zs, err := armprivatedns.NewPrivateZonesClient(c.SubscriptionID, cred, opts)
		if err != nil {
			return nil, err
		}
		return &privateAPI{rs: rs, zs: zs}, nil
	}
	rs, err := armdns.NewRecordSetsClient(c.SubscriptionID, cred, opts)
	if err != nil {
		return nil, err
	}
	zs, err := armdns.NewZonesClient(c.SubscriptionID, cred, opts)
	if err != nil {
		return nil, err
	}
	return &publicAPI{rs: rs, zs: zs}, nil
}

// notFound reports whether err is Azure's 404 for a record set that does
// not exist (code NotFound; a missing zone, group or subscription has
// codes of its own).
func notFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && (re.ErrorCode == "NotFound" || re.ErrorCode == "")
}

func ptr[T any](v T) *T { return &v }

// strs copies SDK string pointers.
func strs(in []*string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// ptrs copies strings into SDK string pointers.
func ptrs(in []string) []*string {
	out := make([]*string, 0, len(in))
	for _, s := range in {
		out = append(out, ptr(s))
	}
	return out
}

// publicAPI is Azure DNS (armdns, api-version 2018-05-01).
type publicAPI struct {
	rs *armdns.RecordSetsClient
	zs *armdns.ZonesClient
}

func (a *publicAPI) zones(ctx context.Context, rg string) ([]string, error) {
	var out []string
	pager := a.zs.NewListByResourceGroupPager(rg, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, z := range page.Value {
			if z != nil && z.Name != nil {
				out = append(out, strings.ToLower(*z.Name))
			}
		}
	}
	return out, nil
}

func (a *publicAPI) get(ctx context.Context, rg, zone, name string) (*txtSet, error) {
	resp, err := a.rs.Get(ctx, rg, zone, name, armdns.RecordTypeTXT, nil)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &txtSet{}
	if resp.Etag != nil {
		s.etag = *resp.Etag
	}
	if p := resp.Properties; p != nil {
		if p.TTL != nil {
			s.ttl = *p.TTL
		}
		for _, r := range p.TxtRecords {
			if r != nil {
				s.records = append(s.records, strs(r.Value))
			}
		}
	}
	return s, nil
}

func (a *publicAPI) put(ctx context.Context, rg, zone, name string, set txtSet, etag string) error {
	props := &armdns.RecordSetProperties{TTL: ptr(set.ttl)}
	for _, r := range set.records {
		props.TxtRecords = append(props.TxtRecords, &armdns.TxtRecord{Value: ptrs(r)})
	}
	o := &armdns.RecordSetsClientCreateOrUpdateOptions{}
	if etag == "" {
		o.IfNoneMatch = ptr("*")
	} else {
		o.IfMatch = ptr(etag)
	}
	_, err := a.rs.CreateOrUpdate(ctx, rg, zone, name, armdns.RecordTypeTXT, armdns.RecordSet{Properties: props}, o)
	return err
}

func (a *publicAPI) delete(ctx context.Context, rg, zone, name, etag string) error {
	_, err := a.rs.Delete(ctx, rg, zone, name, armdns.RecordTypeTXT, &armdns.RecordSetsClientDeleteOptions{IfMatch: ptr(etag)})
	return err
}

// privateAPI is Azure Private DNS (armprivatedns, api-version 2024-06-01).
type privateAPI struct {
	rs *armprivatedns.RecordSetsClient
	zs *armprivatedns.PrivateZonesClient
}

func (a *privateAPI) zones(ctx context.Context, rg string) ([]string, error) {
	var out []string
	pager := a.zs.NewListByResourceGroupPager(rg, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, z := range page.Value {
			if z != nil && z.Name != nil {
				out = append(out, strings.ToLower(*z.Name))
			}
		}
	}
	return out, nil
}

func (a *privateAPI) get(ctx context.Context, rg, zone, name string) (*txtSet, error) {
	resp, err := a.rs.Get(ctx, rg, zone, armprivatedns.RecordTypeTXT, name, nil)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &txtSet{}
	if resp.Etag != nil {
		s.etag = *resp.Etag
	}
	if p := resp.Properties; p != nil {
		if p.TTL != nil {
			s.ttl = *p.TTL
		}
		for _, r := range p.TxtRecords {
			if r != nil {
				s.records = append(s.records, strs(r.Value))
			}
		}
	}
	return s, nil
}

func (a *privateAPI) put(ctx context.Context, rg, zone, name string, set txtSet, etag string) error {
	props := &armprivatedns.RecordSetProperties{TTL: ptr(set.ttl)}
	for _, r := range set.records {
		props.TxtRecords = append(props.TxtRecords, &armprivatedns.TxtRecord{Value: ptrs(slices.Clone(r))})
	}
	o := &armprivatedns.RecordSetsClientCreateOrUpdateOptions{}
	if etag == "" {
		o.IfNoneMatch = ptr("*")
	} else {
		o.IfMatch = ptr(etag)
	}
	_, err := a.rs.CreateOrUpdate(ctx, rg, zone, armprivatedns.RecordTypeTXT, name, armprivatedns.RecordSet{Properties: props}, o)
	return err
}

func (a *privateAPI) delete(ctx context.Context, rg, zone, name, etag string) error {
	_, err := a.rs.Delete(ctx, rg, zone, armprivatedns.RecordTypeTXT, name, &armprivatedns.RecordSetsClientDeleteOptions{IfMatch: ptr(etag)})
	return err
}
