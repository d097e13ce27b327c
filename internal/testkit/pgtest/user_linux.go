package pgtest

import (
	"fmt"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// unprivileged is how a root process runs PostgreSQL's binaries as nobody
// (initdb refuses root), and nobody's ids, for the cluster's directory.
func unprivileged() (asUser func(*exec.Cmd), uid, gid int, err error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root, and no user nobody to run PostgreSQL as: %w", err)
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return nil, 0, 0, err
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, 0, 0, err
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return func(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred} }, uid, gid, nil
}
