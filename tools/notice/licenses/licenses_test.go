package licenses

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A module is named by its license files; one without a recognised
// license, or with a license certfn does not ship under, is refused,
// naming the module.
func TestClassify(t *testing.T) {
	const mit = `MIT License

Copyright (c) 2026 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`
	apache, err := os.ReadFile(filepath.Join("..", "..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		license string
		err     string
	}{
		{"apache", map[string]string{"LICENSE": string(apache), "NOTICE": "Copyright 2026 Someone"}, "Apache-2.0", ""},
		{"two licenses", map[string]string{"LICENSE": string(apache), "LICENSE.other": mit}, "Apache-2.0 AND MIT", ""},
		{"none", map[string]string{"README.md": "hello"}, "", "no license found"},
		{"unrecognised", map[string]string{"LICENSE": "All rights reserved. You may not use this."}, "", "no license found"},
		{"not allowed", map[string]string{"COPYING": "This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation, either version 3 of the License, or (at your option) any later version."}, "", "is not one certfn ships under"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := Module{Path: "example.com/m", Version: "v1.0.0", Dir: dir}
			err := m.classify()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "example.com/m@v1.0.0") {
					t.Fatalf("classify: %v, want an error naming the module and %q", err, tc.err)
				}
				return
			}
			if err != nil || m.License != tc.license {
				t.Fatalf("classify: %q %v, want %q", m.License, err, tc.license)
			}
		})
	}
}
