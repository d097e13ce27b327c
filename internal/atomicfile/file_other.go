//go:build !unix

package atomicfile

import "io/fs"

// openFlags: no O_NOFOLLOW or O_NONBLOCK here; the Lstat before each open
// and the Stat after it refuse what is not a regular file.
const openFlags = 0

// owner: no user IDs to compare here.
func owner(fs.FileInfo) (int, bool) { return 0, false }
