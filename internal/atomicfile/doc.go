// Package atomicfile writes the files a run leaves behind (a client's
// result and textfile, its -O export, the server's -G statistics, a plot)
// so that a planted name in a shared directory cannot redirect or block
// them, and a reader never sees half a file.
//
// The rules, the same for every output:
//   - the name must be a regular file or absent: a symbolic link, a FIFO,
//     a device or a directory at the name is refused with an error naming
//     what it is, and nothing is opened through it (O_NOFOLLOW, and
//     O_NONBLOCK so that a FIFO cannot block the open);
//   - in a sticky directory (such as /tmp) a file owned by another user is
//     refused: it is what an attacker plants, and replacing it would fail
//     (or, for root, keep the attacker's mode);
//   - Write replaces the file as a whole: the data goes to a temporary file
//     created exclusively (O_EXCL, a random name) in the same directory,
//     is flushed, given the existing file's mode (or the one asked for a
//     new file), and renamed over the name;
//   - Check and CheckOpen find before a test whatever Write or Create will
//     need, so that an hour's test does not end in a result that cannot be
//     written.
//
// The files a service reads at its own paths (the agent's configuration,
// the SQLite store's database, WAL, index and journal) are opened by the
// same rules: Open, ReadFile (read.go) with a bound on the size, and
// CheckRegular (lstat only) for a name another library opens itself.
//
// It sits in internal/ because it is a mechanism of this module's
// commands, not part of the API other programs import; report, client and
// metrics share it without importing each other for it.
package atomicfile
