// Package uring is the least of Linux io_uring that udpstp uses: a ring of
// send submissions (IORING_OP_SEND, IORING_OP_SENDMSG) and the completions
// they post, set up and driven over golang.org/x/sys with the layouts of
// linux/io_uring.h. It hands the kernel the sends of many sockets in one
// system call. Only non-blocking sends are meant (MSG_DONTWAIT): each
// completes inside the io_uring_enter that submitted it, so a buffer may
// be reused once Submit returned and its completions were reaped.
// New reports ErrUnavailable where the kernel refuses a ring
// (kernel.io_uring_disabled, seccomp, an old kernel); the package has no
// code off Linux.
package uring
