package policy

import "fmt"

// The evaluators of spec.constraints: the requested duration and the
// CSR's private key.

const constraintsPath = "spec.constraints"

// evalDuration checks the requested duration (spec.duration, else
// spec.expirationSeconds) against minDuration and maxDuration; a request
// without a duration fails a policy that sets either.
func (c *Compiled) evalDuration(r *Request, m mode) errorList {
	k := &c.constraints
	if k.minDuration == nil && k.maxDuration == nil {
		return nil
	}
	d := r.Duration
	if d == nil {
		if m == quick {
			return failedQuick
		}
		which := "maxDuration"
		if k.maxDuration == nil {
			which = "minDuration"
		}
		return errorList{fmt.Sprintf("%s.%s: the request carries no duration (spec.duration or spec.expirationSeconds)", constraintsPath, which)}
	}
	var errs errorList
	if k.maxDuration != nil && *d > *k.maxDuration {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.maxDuration: requested duration %s is longer than %s", constraintsPath, *d, *k.maxDuration))
	}
	if k.minDuration != nil && *d < *k.minDuration {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.minDuration: requested duration %s is shorter than %s", constraintsPath, *d, *k.minDuration))
	}
	return errs
}

// evalPrivateKey checks the CSR's public key against privateKey.algorithm,
// minSize and maxSize.
func (c *Compiled) evalPrivateKey(r *Request, m mode) errorList {
	k := &c.constraints
	var errs errorList
	if k.algorithm != "" && r.KeyAlgorithm != k.algorithm {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.privateKey.algorithm: the request's key is %s, the policy requires %s", constraintsPath, keyAlg(r.KeyAlgorithm), k.algorithm))
	}
	if k.minSize != nil && r.KeySize < *k.minSize {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.privateKey.minSize: the request's %s key has size %d, the policy requires at least %d", constraintsPath, keyAlg(r.KeyAlgorithm), r.KeySize, *k.minSize))
	}
	if k.maxSize != nil && r.KeySize > *k.maxSize {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.privateKey.maxSize: the request's %s key has size %d, the policy allows at most %d", constraintsPath, keyAlg(r.KeyAlgorithm), r.KeySize, *k.maxSize))
	}
	return errs
}
