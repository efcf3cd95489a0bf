package api

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxReportedErrors bounds how many problems one error message lists;
// MaxReportedLine bounds one problem's text (bytes). Error messages of
// input that may be large (a manifest, a batch) stay small whatever the
// input: an error body, a log line or a stored condition never grows
// with the input.
const (
	MaxReportedErrors = 20
	MaxReportedLine   = 512
)

// JoinBounded renders n problems, one a line (line(i) is the i-th), with
// at most MaxReportedErrors lines of at most MaxReportedLine bytes each,
// and a last line counting the problems left out.
func JoinBounded(n int, line func(i int) string) string {
	shown := min(n, MaxReportedErrors)
	lines := make([]string, 0, shown+1)
	for i := 0; i < shown; i++ {
		lines = append(lines, Truncate(line(i), MaxReportedLine))
	}
	if n > shown {
		lines = append(lines, fmt.Sprintf("... and %d more problems", n-shown))
	}
	return strings.Join(lines, "\n")
}

// Truncate cuts s to at most max bytes on a character boundary, marking
// the cut with "…".
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
