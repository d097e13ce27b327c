package store

import (
	"context"
	"fmt"
)

// OpenSpoolTo is OpenSpool with a remote Store of the caller's, opened
// already: a collector's client (package collector), which no --store
// scheme of Open names because it needs a credential too.
func OpenSpoolTo(ctx context.Context, remote Store, localPath string, o SpoolOptions) (*Spool, error) {
	local, err := Open(ctx, "sqlite:"+localPath)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if o.Outbox == "" {
		o.Outbox = localPath + ".outbox"
	}
	s, err := NewSpool(local, remote, o)
	if err != nil {
		local.Close()
		return nil, err
	}
	return s, nil
}
