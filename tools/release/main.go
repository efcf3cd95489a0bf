// Command release builds certfn's release files for Linux VMs into one
// directory (`make release` runs it):
//
//   - certfn_<version>_linux_<arch>.tar.gz: a directory
//     certfn_<version>_linux_<arch>/ holding the certfn binary, README.md,
//     LICENSE and NOTICE (when the repository has them), licenses/<module>/
//     (the license and notice files of every Go module the binary links),
//     install.md, the systemd unit
//     (systemd/certfn.service, for a binary in /usr/local/bin) and the
//     example environment file (default/certfn);
//   - certfn_<version>_<arch>.deb: /usr/bin/certfn, the unit in
//     /usr/lib/systemd/system, /etc/default/certfn (a conffile, 0600) and the
//     maintainer scripts of packaging/deb (the certfn user and group,
//     /var/lib/certfn);
//   - SHA256SUMS over all of them, in sha256sum's format.
//
// The binaries are static (CGO_ENABLED=0), built with -trimpath,
// -buildvcs=auto and -ldflags "-s -w -X main.version=<version>". The archives are
// reproducible: entries sorted, owned by root (0/0), every time the one
// given by -mtime (make passes the last commit's time), gzip headers
// without names or times; the same binaries give the same bytes.
//
//	go run ./tools/release -version 1.2.3 -mtime 1700000000 -o dist
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() { os.Exit(run()) }

// run is main without the exit: 0 on success, 1 when the release fails,
// 2 on bad usage.
func run() int {
	o := options{Root: "."}
	var archs, mtime string
	flag.StringVar(&o.Version, "version", "", "release version, starting with a digit (e.g. 1.2.3; required)")
	flag.StringVar(&o.OutDir, "o", "dist", "output directory")
	flag.StringVar(&archs, "arch", "amd64 arm64", "Linux architectures, separated by spaces or commas (amd64, arm64)")
	flag.StringVar(&mtime, "mtime", os.Getenv("SOURCE_DATE_EPOCH"), "time of every archive entry, in seconds since 1970 (default $SOURCE_DATE_EPOCH; required)")
	flag.StringVar(&o.Maintainer, "maintainer", defaultMaintainer, "the .deb's Maintainer field")
	flag.StringVar(&o.Go, "go", "go", "go command that builds the binaries")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: release -version 1.2.3 -mtime SECONDS [-o dist] [-arch 'amd64 arm64']")
		return 2
	}
	o.Archs = strings.FieldsFunc(archs, func(r rune) bool { return r == ' ' || r == ',' })
	if mtime != "" {
		sec, err := strconv.ParseInt(mtime, 10, 64)
		if err != nil || sec < 0 {
			fmt.Fprintf(os.Stderr, "release: -mtime %q: want seconds since 1970 (an integer ≥ 0)\n", mtime)
			return 2
		}
		o.ModTime = time.Unix(sec, 0).UTC()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	written, err := release(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	for _, p := range written {
		fmt.Println(p)
	}
	return 0
}
