package main

// --textfile: the option's check; the client package writes the file
// (client/textfile.go).

import (
	"os"
	"path/filepath"

	"github.com/udpstp/udpstp/report/textfile"
)

// textfileOption reads --textfile: a name ending in .prom in a directory
// that exists, so that a mistyped name fails now, before the test, not
// after it.
func textfileOption(v optionValues) (string, error) {
	if !v.set("textfile") {
		return "", nil
	}
	p := v.text("textfile")
	if p == "" {
		return "", configError("ERROR: %s needs a file name", opt("textfile"))
	}
	if err := textfile.CheckTextfileName(p); err != nil {
		return "", configError("ERROR: %v (%s)", err, opt("textfile"))
	}
	if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
		return "", configError("ERROR: directory of %q not found (%s)", p, opt("textfile"))
	}
	return p, nil
}
