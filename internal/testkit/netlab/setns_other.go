//go:build !linux

package netlab

import "fmt"

func inNamespace(string, func() error) error {
	return fmt.Errorf("%w: network namespaces need Linux", ErrUnavailable)
}
