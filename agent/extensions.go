package agent

import "github.com/udpstp/udpstp/control"

// extensions asks for udpstp's figures in the stored document.
// TODO(strict): set cc.Extensions once control.ClientConfig has it.
func extensions(cc *control.ClientConfig) {}
