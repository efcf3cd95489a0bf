package kubeapi

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// involvedRequirement is one term of an Events field selector on
// involvedObject.* (what `kubectl describe` asks for an object's Events).
type involvedRequirement struct {
	field, value string
	equal        bool
}

// involvedFields are the involvedObject fields an Events field selector
// may name, as the Kubernetes API server offers them.
var involvedFields = map[string]bool{"involvedObject.kind": true, "involvedObject.name": true,
	"involvedObject.namespace": true, "involvedObject.apiVersion": true, "involvedObject.uid": true}

// splitInvolved takes the involvedObject.* terms out of an Events field
// selector: the rest goes to the application service (metadata.name,
// metadata.namespace), these are applied here.
func splitInvolved(selector string) (rest string, reqs []involvedRequirement, err error) {
	if !strings.Contains(selector, "involvedObject.") {
		return selector, nil, nil
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", nil, badRequest(fmt.Sprintf("fieldSelector %q: %v", selector, err))
	}
	var others []string
	for _, r := range sel.Requirements() {
		if !strings.HasPrefix(r.Field, "involvedObject.") {
			others = append(others, r.Field+string(r.Operator)+fields.EscapeValue(r.Value))
			continue
		}
		if !involvedFields[r.Field] {
			return "", nil, badRequest(fmt.Sprintf("fieldSelector %q: field label not supported: %s", selector, r.Field))
		}
		reqs = append(reqs, involvedRequirement{field: r.Field, value: r.Value, equal: r.Operator != selection.NotEquals})
	}
	return strings.Join(others, ","), reqs, nil
}

// involvedMatch keeps the Events whose involvedObject meets every
// requirement. The uid is the involved object's current metadata.uid,
// read through the service: an object the caller may not get, or that is
// gone, matches no uid.
func (h *Handler) involvedMatch(ctx context.Context, caller app.Caller, objs []api.Object, reqs []involvedRequirement) []api.Object {
	if len(reqs) == 0 {
		return objs
	}
	uids := map[api.Key]string{}
	var out []api.Object
	for _, o := range objs {
		ev, ok := o.(*api.Event)
		if !ok {
			continue
		}
		io := ev.InvolvedObject
		keep := true
		for _, r := range reqs {
			var have string
			switch r.field {
			case "involvedObject.kind":
				have = io.Kind
			case "involvedObject.name":
				have = io.Name
			case "involvedObject.namespace":
				have = io.Namespace
			case "involvedObject.apiVersion":
				have = io.APIVersion
			case "involvedObject.uid":
				key := api.Key{Kind: io.Kind, Namespace: io.Namespace, Name: io.Name}
				uid, seen := uids[key]
				if !seen {
					if obj, err := h.svc.Get(ctx, caller, key); err == nil {
						uid = obj.GetObjectMeta().UID
					}
					uids[key] = uid
				}
				have = uid
			}
			if (have == r.value) != r.equal || (r.field == "involvedObject.uid" && have == "") {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, o)
		}
	}
	return out
}
