//go:build !linux || portable

package engine

import "testing"

func refuseAll(*Socket) {}

func acceptPartly(t *testing.T, _ *Socket, _ func(int) int) {
	t.Skip("partial sends are injected through the Linux socket's send call; the fallback socket has none")
}
