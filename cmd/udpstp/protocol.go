package main

import "github.com/udpstp/udpstp/control"

// checkProtocol refuses what an older protocol version (--protocol) cannot
// carry, instead of sending it to be ignored: keys (OB-UDPST before 9.0.0
// signs otherwise), the ECN CE threshold and rate-adjustment suppression
// (protocol 20 fields), a Sub-Interval that is not whole seconds (carried
// in seconds before 20) and, before 10, more than one connection
// (docs/compatibility.md).
func checkProtocol(v optionValues, cfg *control.ClientConfig) error {
	p := cfg.Protocol
	if p == 0 || p >= int(control.ProtocolVersion) {
		return nil
	}
	switch {
	case v.set("auth-key") || v.set("key-file"):
		return configError("ERROR: Authentication is not available with %s %d (only 20)", opt("protocol"), p)
	case cfg.CEThresh != 0:
		return configError("ERROR: %s is not available with %s %d (only 20)", opt("ecn-ce-threshold"), opt("protocol"), p)
	case cfg.Suppress:
		return configError("ERROR: %s with a negative count is not available with %s %d (only 20)", opt("bimodal"), opt("protocol"), p)
	case cfg.SubIntPeriod%1000 != 0:
		return configError("ERROR: %s must be whole seconds with %s %d (%d ms)", opt("sub-interval"), opt("protocol"), p, cfg.SubIntPeriod)
	case p < 10 && cfg.ConnMax > 1:
		return configError("ERROR: %s %d has one Test Connection per server (%s %d)", opt("protocol"), p, opt("connections"), cfg.ConnMax)
	}
	return nil
}
