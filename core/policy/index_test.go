package policy

// Every evaluation in this package's tests uses its list's index (built on
// the first evaluation of a list rather than the second), so that the
// tables of the other test files check the indexed path; the path without
// an index is checked against it by TestIndexedAgreesWithEach.
func init() { indexAtUse = 1 }
