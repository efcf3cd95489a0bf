package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// RefusesKey tells, before any key exists, whether every request of
// in.Request's kind with a private key of alg and size (RSA modulus bits,
// ECDSA curve bits, 0 for Ed25519) would be denied: in.Request carries
// the namespace, issuerRef and requester identity of the requests to come
// and no spec.request. It refuses only when the request's signer is not
// in the auto-approve list, at least one policy applies (Ready, selecting
// the request, bound to the requester with `use`: as Evaluate decides
// which apply) and none of them allows the key (spec.constraints.privateKey
// algorithm, minSize, maxSize: a policy that refuses the key denies every
// such request, whatever else it allows). The message lists each
// applicable policy's bounds, as a Denied request's message would. No
// applicable policy is not a refusal: the request would be left pending
// for a person or a later policy (Unmatched).
func (a *Approver) RefusesKey(in Input, alg api.PrivateKeyAlgorithm, size int) (string, bool) {
	cr := in.Request
	if cr == nil {
		return "", false
	}
	if _, ok := a.autoApproved(cr); ok {
		return "", false
	}
	sc := scan{in: &in, id: identityOf(cr), sel: newSelectorInput(cr, in.NamespaceLabels)}
	list := a.evaluator.list(in.Policies)
	r := &Request{KeyAlgorithm: alg, KeySize: size}
	var why []string
	for i, p := range in.Policies {
		c := sc.applies(p, list.entries[i])
		if c == nil {
			continue
		}
		errs := c.evalPrivateKey(r, full)
		if len(errs) == 0 {
			return "", false
		}
		why = append(why, fmt.Sprintf("[policy %q: %s]", c.Name, strings.Join(errs, "; ")))
	}
	if len(why) == 0 {
		return "", false
	}
	sort.Strings(why)
	return strings.Join(why, " "), true
}
