// Command notice writes the repository's NOTICE: certfn's copyright and
// license, then every Go module certfn's binaries link (licenses.Binaries),
// with its version and license. The release archives and the .deb carry
// NOTICE and the modules' license texts (tools/release).
//
//	go run ./tools/notice          # rewrite NOTICE
//	go run ./tools/notice -check   # exit 1 when NOTICE is not current
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/certfn/certfn/tools/notice/licenses"
)

func main() {
	check := flag.Bool("check", false, "exit 1 when NOTICE is not current, instead of writing it")
	flag.Parse()
	want, err := render(context.Background(), ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "notice:", err)
		os.Exit(1)
	}
	if *check {
		have, err := os.ReadFile("NOTICE")
		if err != nil || !bytes.Equal(have, want) {
			fmt.Fprintln(os.Stderr, "notice: NOTICE is not current: run go run ./tools/notice")
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile("NOTICE", want, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "notice:", err)
		os.Exit(1)
	}
}

// header is NOTICE's text before the module table.
const header = `certfn
Copyright 2026 The certfn Authors

Licensed under the Apache License, Version 2.0 (the "License"); see LICENSE.

certfn's binaries (certfn, the AWS Lambda functions, the Cloud Run binary and
terraform-provider-certfn) link the Go modules below, each under the license
named. Their license and notice texts are in licenses/<module path>/ of every
release archive and in /usr/share/doc/certfn/licenses/ of the .deb.
This file is generated: go run ./tools/notice

`

// render is NOTICE for the module in root.
func render(ctx context.Context, root string) ([]byte, error) {
	mods, err := licenses.Linked(ctx, "go", root, licenses.Binaries...)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "MODULE\tVERSION\tLICENSE")
	for _, m := range mods {
		fmt.Fprintf(w, "%s\t%s\t%s\n", m.Path, m.Version, m.License)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
