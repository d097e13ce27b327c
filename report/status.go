package report

import (
	"strings"

	"github.com/udpstp/udpstp/dataphase"
)

// ErrorStatus values with a rule of their own (OB-UDPST 9.0.0's exit
// statuses, which the package doc lists).
const (
	StatusSuccess = 0
	StatusWarnMax = dataphase.WarnMax // 1..49 are warnings: a completed test keeps them
	// StatusInit is OB-UDPST's initialization error base
	// (STATUS_INIT_ERRBASE): a file or socket that cannot be opened at
	// start, a result that cannot be written.
	StatusInit     = 75
	StatusMinConns = 200 // fewer active connections than -C min
	StatusGeneral  = 255 // the start value: a run that ends any other way
)

// errorState is OB-UDPST's ErrorStatus and its two JSON message buffers.
// It starts at 255 ("general error") so that only an explicit normal stop
// declares success.
type errorState struct {
	status    int
	msg, msg2 string
}

func newErrorState() errorState { return errorState{status: StatusGeneral} }

// record keeps a message the way OB-UDPST's JSON error buffers do: the
// previous one moves to ErrorMessage2, double quotes become single quotes,
// the text ends at the first newline, and at most 1023 bytes are kept.
func (e *errorState) record(msg string) {
	if e.msg != "" {
		e.msg2 = e.msg
	}
	if len(msg) > 1023 {
		msg = msg[:1023]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	e.msg = strings.ReplaceAll(msg, `"`, `'`)
}

// set overwrites the status: every warning and every setup/activation
// error does, whatever came before.
func (e *errorState) set(code int) { e.status = code }

// stopped is a Test Connection's normal stop: an error (> 49, including
// the initial 255) becomes success, a warning is kept.
func (e *errorState) stopped() {
	if e.status > StatusWarnMax {
		e.status = StatusSuccess
	}
}

// minConns applies 200 only over success or a warning; an earlier error
// (a setup error such as 110, or the initial 255) is kept.
func (e *errorState) minConns() {
	if e.status <= StatusWarnMax {
		e.status = StatusMinConns
	}
}
