package policy

import (
	"fmt"

	"github.com/certfn/certfn/core/api"
)

// The evaluators of spec.constraints: the requested duration and the
// CSR's private key, reporting in approver-policy's order (maxDuration,
// minDuration; algorithm, maxSize, minSize).

const constraintsPath = "spec.constraints"

// evalDuration checks the requested duration (spec.duration, else
// spec.expirationSeconds) against maxDuration and minDuration; a request
// without a duration fails each that is set.
func (c *Compiled) evalDuration(r *Request, m mode) errorList {
	k := &c.constraints
	if k.minDuration == nil && k.maxDuration == nil {
		return nil
	}
	d := r.Duration
	var errs errorList
	if k.maxDuration != nil && (d == nil || *d > *k.maxDuration) {
		if m == quick {
			return failedQuick
		}
		if d == nil {
			errs = append(errs, fmt.Sprintf("%s.maxDuration: the request carries no duration (spec.duration or spec.expirationSeconds); the policy allows at most %s", constraintsPath, *k.maxDuration))
		} else {
			errs = append(errs, fmt.Sprintf("%s.maxDuration: requested duration %s is longer than %s", constraintsPath, *d, *k.maxDuration))
		}
	}
	if k.minDuration != nil && (d == nil || *d < *k.minDuration) {
		if m == quick {
			return failedQuick
		}
		if d == nil {
			errs = append(errs, fmt.Sprintf("%s.minDuration: the request carries no duration (spec.duration or spec.expirationSeconds); the policy requires at least %s", constraintsPath, *k.minDuration))
		} else {
			errs = append(errs, fmt.Sprintf("%s.minDuration: requested duration %s is shorter than %s", constraintsPath, *d, *k.minDuration))
		}
	}
	return errs
}

// evalPrivateKey checks the CSR's public key against privateKey.algorithm,
// maxSize and minSize. An Ed25519 key has no size: it passes any maxSize
// and fails any minSize (approver-policy gives it size -1).
func (c *Compiled) evalPrivateKey(r *Request, m mode) errorList {
	k := &c.constraints
	var errs errorList
	if k.algorithm != "" && r.KeyAlgorithm != k.algorithm {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.privateKey.algorithm: the request's key is %s, the policy requires %s", constraintsPath, keyAlg(r.KeyAlgorithm), k.algorithm))
	}
	sized := r.KeyAlgorithm != api.Ed25519KeyAlgorithm
	if k.maxSize != nil && sized && r.KeySize > *k.maxSize {
		if m == quick {
			return failedQuick
		}
		errs = append(errs, fmt.Sprintf("%s.privateKey.maxSize: the request's %s key has size %d, the policy allows at most %d", constraintsPath, keyAlg(r.KeyAlgorithm), r.KeySize, *k.maxSize))
	}
	if k.minSize != nil && (!sized || r.KeySize < *k.minSize) {
		if m == quick {
			return failedQuick
		}
		if sized {
			errs = append(errs, fmt.Sprintf("%s.privateKey.minSize: the request's %s key has size %d, the policy requires at least %d", constraintsPath, keyAlg(r.KeyAlgorithm), r.KeySize, *k.minSize))
		} else {
			errs = append(errs, fmt.Sprintf("%s.privateKey.minSize: the request's Ed25519 key has no size, the policy requires at least %d", constraintsPath, *k.minSize))
		}
	}
	return errs
}
