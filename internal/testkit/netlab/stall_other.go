//go:build !linux

package netlab

import "time"

// stallWatch watches nothing here: the relay is Linux-only.
type stallWatch struct{}

func watchStalls() *stallWatch { return nil }

func (*stallWatch) stop() time.Duration { return 0 }
