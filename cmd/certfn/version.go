package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time (-ldflags "-X main.version=v1.2.3", as
// make release does); "dev" otherwise.
var version = "dev"

// newVersion is `certfn version`: the version, the VCS revision the binary
// was built from when known, and the Go version and platform.
func newVersion(std streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print certfn's version, build revision, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			rev := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = s.Value
					}
				}
			}
			_, err := fmt.Fprintf(std.out, "certfn %s (revision %s, %s, %s/%s)\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
