// Package faultsweep drives the fault harnesses that run on the cloud
// functions themselves (tests/awse2e on the Lambda functions, tests/gcpe2e
// on the Cloud Run services): a flow is run clean, then once per call
// number N and fault kind with the N-th call faulted, and the runs'
// convergence is summed up. What a fault does and what converged means is
// the caller's (its Run func); this package only sweeps and reports.
package faultsweep

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Kinds are the fault kinds, in sweep order: the call takes effect and its
// process dies; it fails without effect; it takes effect and its answer
// is lost.
var Kinds = []string{"crash", "transient", "lost"}

// Result is one run of a flow.
type Result struct {
	// Labels name every counted call, in order ("service.Operation").
	Labels []string
	// Fired is the faulted call's label ("": the run made fewer calls).
	Fired string
	// Lag is the fake time from the fault until the flow converged.
	Lag time.Duration
	// Err says what went wrong (nil: converged, every invariant held).
	Err error
	// Logs are the functions' warnings, shown for CERTFN_FAULTS_ONLY.
	Logs string
}

// Sweep runs the clean flow three times (calls vary a little from run to
// run on the clouds: the sweep goes up to the fewest), then each call n as
// the kinds whose index k has (n+k) mod stride == 0 — every call as one
// kind by default (stride 3), every call as every kind with
// CERTFN_FAULTS_STRIDE=1; CERTFN_FAULTS_ONLY=<n>:<kind> runs one. A run
// that never reached its call is counted, not failed, unless a tenth of
// the runs are. It logs one summary line starting with what.
func Sweep(t *testing.T, what string, bound time.Duration, run func(n int, kind string) Result) {
	t.Helper()
	SweepStride(t, what, bound, 3, run)
}

// SweepStride is Sweep with another default stride (a slower flow's, so
// that `make test` spends about as long on it: stride 9 faults every third
// call, each as one kind in turn); CERTFN_FAULTS_STRIDE still overrides it.
func SweepStride(t *testing.T, what string, bound time.Duration, defaultStride int, run func(n int, kind string) Result) {
	t.Helper()
	began := time.Now()
	var clean Result
	for i := 0; i < 3; i++ {
		r := run(0, "")
		if r.Err != nil {
			t.Fatalf("clean run: %v", r.Err)
		}
		if i == 0 || len(r.Labels) < len(clean.Labels) {
			clean = r
		}
	}
	if len(clean.Labels) < 10 {
		t.Fatalf("clean run: implausibly few calls: %v", clean.Labels)
	}
	byService := map[string]int{}
	for _, l := range clean.Labels {
		byService[strings.SplitN(l, ".", 2)[0]]++
	}
	stride := defaultStride
	if s := os.Getenv("CERTFN_FAULTS_STRIDE"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 1 {
			stride = n
		}
	}
	only := os.Getenv("CERTFN_FAULTS_ONLY")
	var runs, failed, unfired int
	worst := map[string]time.Duration{}
	for n := 1; n <= len(clean.Labels); n++ {
		for k, kind := range Kinds {
			if (n+k)%stride != 0 || (only != "" && only != fmt.Sprintf("%d:%s", n, kind)) {
				continue
			}
			runs++
			r := run(n, kind)
			if only != "" {
				t.Logf("%s at call %d (%s): converged %s after the fault; the functions' warnings:\n%s", kind, n, r.Fired, r.Lag, r.Logs)
			}
			switch {
			case r.Fired == "":
				unfired++
			case r.Err == nil && r.Lag > bound:
				failed++
				t.Errorf("%s at call %d (%s): converged %s after the fault, want at most %s", kind, n, r.Fired, r.Lag, bound)
			case r.Err != nil:
				failed++
				t.Errorf("%s at call %d (%s in the clean run): %v", kind, n, clean.Labels[n-1], r.Err)
			default:
				worst[kind] = max(worst[kind], r.Lag)
			}
		}
	}
	t.Logf("%s: %d calls in the clean run (%s); %d faulted runs (stride %d), %d failed, %d made fewer calls than their fault's number; "+
		"converged at most %s after a crash (bound %s), %s after a transient fault, %s after a lost answer; %s real",
		what, len(clean.Labels), fmt.Sprint(byService), runs, stride, failed, unfired, worst["crash"], bound, worst["transient"], worst["lost"],
		time.Since(began).Round(time.Millisecond))
	if unfired*10 > runs {
		t.Errorf("%d of %d runs never reached their fault: the flow's calls vary too much for the harness", unfired, runs)
	}
}

// LoadSeed is the seed of a load test's shuffled schedule: 15 (so that
// `make test` runs the same schedule every time), CERTFN_LOAD_SEED=<n> for
// another, =random for a new one each run. It logs the seed.
func LoadSeed(t *testing.T) int64 {
	t.Helper()
	seed := int64(15)
	switch s := os.Getenv("CERTFN_LOAD_SEED"); s {
	case "":
	case "random":
		seed = time.Now().UnixNano()
	default:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("CERTFN_LOAD_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (CERTFN_LOAD_SEED=%d repeats this schedule)", seed, seed)
	return seed
}
