//go:build !linux

package netlab

import "fmt"

// relay is Linux-only: TUN devices and ppoll.
type relay struct{}

func newRelay(*Lab, int, int, [2]Impairment, uint64) (*relay, error) {
	return nil, fmt.Errorf("%w: the relay needs Linux", ErrUnavailable)
}

func (*relay) start()                              {}
func (*relay) close() error                        { return nil }
func (*relay) impair(Direction, Impairment)        {}
func (*relay) stats(Direction) (RelayStats, error) { return RelayStats{}, nil }

func probeTUN() error { return fmt.Errorf("%w: the relay needs Linux", ErrUnavailable) }
