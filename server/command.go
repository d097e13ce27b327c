package server

// What the server shares with the command that runs it: the exit status
// each of its errors carries, and how its messages name an option.

import (
	"errors"

	"github.com/udpstp/udpstp/report"
)

// Exit statuses of the server's errors. ExitConfig and ExitInit match
// OB-UDPST, which exits 50 on any command-line or configuration error and
// 75 when it cannot initialize.
const (
	ExitFailure = 1
	ExitConfig  = 50
	// ExitInit is OB-UDPST's initialization error base (STATUS_INIT_ERRBASE):
	// a file or socket that cannot be opened at start, a result that
	// cannot be written.
	ExitInit = report.StatusInit
)

// ExitError is an error that ends the process with Status. It satisfies
// urfave/cli's ExitCoder, so a command may return it as it is.
type ExitError struct {
	Msg    string
	Status int
}

func (e *ExitError) Error() string { return e.Msg }

// ExitCode is the process exit status.
func (e *ExitError) ExitCode() int { return e.Status }

// exitError is an error that ends the process with status.
func exitError(msg string, status int) error { return &ExitError{Msg: msg, Status: status} }

// ExitStatus is the exit status for err: the status an error with an
// ExitCode method carries, else ExitFailure.
func ExitStatus(err error) int {
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return ExitFailure
}

// exitCode is the status a detached server reports for err (daemon.go).
func exitCode(err error) int { return ExitStatus(err) }

// optionNames names options in messages (Config.OptionName); nil: --name.
type optionNames func(long string) string

// option is an option named in a message.
type option string

// opt is the option name as messages spell it.
func (n optionNames) opt(name string) option {
	if n != nil {
		return option(n(name))
	}
	return option("--" + name)
}

func (o option) String() string { return string(o) }
