package control

// Setup Response codes (cmdResponse of a Test Setup PDU with cmdRequest 2), as
// OB-UDPST 9.0.0 produces them (the cmdResponse field of RFC 9946's Test
// Setup PDU). A client turns a rejection code c into ErrorStatus 100+c (see
// the package doc).
const (
	SetupNone          uint8 = 0  // the value a request must carry
	SetupAccepted      uint8 = 1  // ACKOK
	SetupBadVersion    uint8 = 2  // BADVER: protocol version outside 11..20
	SetupJumboMismatch uint8 = 3  // BADJS: jumbo bit differs from the server
	SetupAuthNotConf   uint8 = 4  // AUTHNC: authMode != 0, server has no key
	SetupAuthRequired  uint8 = 5  // AUTHREQ: authMode 0, server has a key
	SetupAuthMode      uint8 = 6  // AUTHINV: authMode > 1
	SetupAuthFail      uint8 = 7  // AUTHFAIL: digest verified with no key
	SetupAuthTime      uint8 = 8  // AUTHTIME: digest ok, time outside +/-5 s
	SetupNoMaxBW       uint8 = 9  // NOMAXBW: server has -B, request has no bandwidth
	SetupCapExceeded   uint8 = 10 // CAPEXC: bandwidth pool exhausted
	SetupTradMismatch  uint8 = 11 // BADTMTU: traditional-MTU bit differs
	SetupMCInvalid     uint8 = 12 // MCINVPAR: multi-connection fields invalid
	SetupConnFail      uint8 = 13 // CONNFAIL: no slot or socket failure
)

// Test Activation Response codes. A 9.0.0 server always answers 1: it coerces
// parameters instead of refusing them, and so do we.
const (
	ActivationAccepted uint8 = 1 // ACKOK
	ActivationBadParam uint8 = 2 // never produced by 9.0.0 (client: ErrorStatus 152)
)

// Protocol versions.
const (
	ProtocolVersion    uint16 = 20 // what we send, and the newest we accept
	MinProtocolVersion uint16 = 11 // the oldest OB-UDPST 9.0.0's server accepts (8.2.0)
	AuthECNProtocolVer uint16 = 20 // first version with the KDF, Null PDU, 104-byte TA and 204-byte Status
	DefaultControlPort        = 24601
)

// SetupCodeText is the reason OB-UDPST's client prints for a Setup Response
// code (the client exits with ErrorStatus 100+c: see the package doc), without
// its "ERROR: " prefix and server suffix. Unknown codes get "".
func SetupCodeText(code uint8) string {
	switch code {
	case SetupBadVersion:
		return "Client protocol version not accepted by server"
	case SetupJumboMismatch:
		return "Client jumbo datagram size option does not match server"
	case SetupAuthNotConf:
		return "Authentication not configured on server"
	case SetupAuthRequired:
		return "Authentication required by server"
	case SetupAuthMode:
		return "Authentication method does not match server"
	case SetupAuthFail:
		return "Authentication verification failed at server"
	case SetupAuthTime:
		return "Authentication time outside time window of server"
	case SetupNoMaxBW:
		return "Max bandwidth option required by server"
	case SetupCapExceeded:
		return "Required max bandwidth exceeds available capacity on server"
	case SetupTradMismatch:
		return "Client traditional MTU option does not match server"
	case SetupMCInvalid:
		return "Multi-connection parameters rejected by server"
	case SetupConnFail:
		return "Connection allocation failure on server"
	}
	return ""
}
