//go:build small

package server

// The small build (cmd/udpstp commands_small.go) has no Prometheus
// endpoint: package metrics brings Prometheus's client, protobuf and
// net/http, a quarter of the binary, and a router's server is watched
// through -G and its log instead. --metrics-listen is refused there.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
)

// metricsEndpoint is never made in the small build.
type metricsEndpoint struct{}

// listenMetrics refuses an endpoint: this build has none.
func listenMetrics(addr string, opt func(string) option) (*metricsEndpoint, error) {
	if addr == "" {
		return nil, nil
	}
	return nil, fmt.Errorf("%s: not in this build (udpstp built with -tags small has no metrics endpoint)", opt("metrics-listen"))
}

func (m *metricsEndpoint) close() {}

func (m *metricsEndpoint) start(context.Context, *sync.WaitGroup, *control.Server, *statsNet, *enginenet.Net, *serverArchive, func() bool, *slog.Logger,
	func(string) option) {
}
