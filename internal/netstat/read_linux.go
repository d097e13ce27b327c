package netstat

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadSelf reads the counters of the process's own network namespace:
// /proc/self/net/snmp and, where IPv6 is on, snmp6 (absent without IPv6:
// its counters are then missing). /proc/self/net, not /proc/net: a unit
// with ProcSubset=pid hides the latter. Each file is read to 1 MiB at
// most (the kernel's are a few kB).
func ReadSelf() (Counters, error) {
	var text []byte
	for _, p := range []string{"/proc/self/net/snmp", "/proc/self/net/snmp6"} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) && p == "/proc/self/net/snmp6" {
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		text = append(append(text, b...), '\n')
	}
	return Parse(string(text))
}
