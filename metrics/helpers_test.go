package metrics

import (
	"log/slog"
	"runtime"
)

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func goos() string      { return runtime.GOOS }
func goarch() string    { return runtime.GOARCH }
func goversion() string { return runtime.Version() }
