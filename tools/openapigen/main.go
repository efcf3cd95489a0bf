// Command openapigen writes adapters/kubeapi/schemas.json: the OpenAPI
// (v3-style JSON Schema) definition of every kind the Kubernetes API of
// adapters/kubeapi serves, generated from core/api's Go types (their JSON
// field names and types, by reflection) and their doc comments (parsed
// from core/api's sources). adapters/kubeapi builds its /openapi/v2 and
// /openapi/v3 documents from that file; the test of this package fails
// when the checked-in file is stale. Run from the repository root:
//
//	go run ./tools/openapigen
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository's root directory")
	check := flag.Bool("check", false, "fail when the checked-in file differs instead of writing it")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

// Output is the generated file, relative to the repository's root.
const Output = "adapters/kubeapi/schemas.json"

func run(root string, check bool) error {
	b, err := Generate(root)
	if err != nil {
		return err
	}
	out := filepath.Join(root, Output)
	if check {
		have, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if string(have) != string(b) {
			return fmt.Errorf("%s is stale: run go run ./tools/openapigen", Output)
		}
		return nil
	}
	return os.WriteFile(out, b, 0o644)
}
