package engine

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
)

// CPULimit is how much CPU the process may use, which sizes the pool: the
// CPUs of its affinity mask, and the cgroup v2 quota (cpu.max) of its
// cgroup and the cgroups above it.
type CPULimit struct {
	// Affinity is the number of CPUs in the process's affinity mask
	// (sched_getaffinity; runtime.NumCPU off Linux).
	Affinity int
	// Quota is the tightest cgroup v2 cpu.max on the way from the
	// process's cgroup to the root, in CPUs (quota / period); 0 when no
	// cgroup sets one, or when cgroup v2 is not there.
	Quota float64
	// QuotaAt is the cgroup directory whose cpu.max set Quota.
	QuotaAt string
}

// Threads is the number of Engine Threads the limit allows: the affinity
// CPUs, fewer if the quota is tighter (rounded up: a quota of 1.5 CPUs
// runs two threads that each wait most of the time), at least 1.
func (l CPULimit) Threads() int {
	n := max(l.Affinity, 1)
	if l.Quota > 0 {
		n = min(n, max(int(math.Ceil(l.Quota-1e-9)), 1))
	}
	return n
}

func (l CPULimit) String() string {
	q := "none"
	if l.Quota > 0 {
		q = strconv.FormatFloat(l.Quota, 'f', -1, 64) + " CPUs"
	}
	return fmt.Sprintf("%d CPUs allowed, cgroup quota %s", l.Affinity, q)
}

// The parsers below read the files of cgroup v2 from their contents, so
// their tests run on every platform.

// parseCgroupV2Path returns the cgroup v2 path in /proc/self/cgroup's
// contents: the line "0::<path>". ok is false on a cgroup v1 only host.
func parseCgroupV2Path(procSelfCgroup string) (p string, ok bool) {
	for _, line := range strings.Split(procSelfCgroup, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "0::"); found {
			if rest == "" {
				rest = "/"
			}
			return rest, true
		}
	}
	return "", false
}

// cgroup2Mount is a cgroup2 mount of /proc/self/mountinfo: where it is
// mounted, and which cgroup directory it shows there.
type cgroup2Mount struct {
	root, point string
}

// parseCgroup2Mounts returns the cgroup2 mounts in /proc/self/mountinfo's
// contents (proc(5): "id parent major:minor root mount-point options
// [optional fields] - fstype source super-options"; spaces in paths are
// octal escapes).
func parseCgroup2Mounts(mountinfo string) []cgroup2Mount {
	var out []cgroup2Mount
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		out = append(out, cgroup2Mount{root: unescapeMountPath(f[3]), point: unescapeMountPath(f[4])})
	}
	return out
}

// unescapeMountPath undoes mountinfo's \ooo octal escapes.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDir returns the directory of cgroup path p (from
// parseCgroupV2Path) under the mounts, or "" if no mount shows it. A mount
// whose root is not "/" (a container that sees its own subtree) shows the
// part of p below its root.
func cgroupDir(p string, mounts []cgroup2Mount) string {
	best, bestLen := "", -1
	for _, m := range mounts {
		rel, ok := relCgroup(p, m.root)
		if !ok || len(m.root) <= bestLen {
			continue
		}
		best, bestLen = path.Join(m.point, rel), len(m.root)
	}
	if best == "" && len(mounts) > 0 && strings.HasPrefix(p, "/") {
		// Inside a cgroup namespace the path is relative to the
		// namespace's root already, whatever root the mount shows.
		best = path.Join(mounts[0].point, p)
	}
	return best
}

func relCgroup(p, root string) (string, bool) {
	switch {
	case root == "/":
		return p, true
	case p == root:
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// parseCPUMax reads a cpu.max file's contents, "$MAX $PERIOD" with MAX a
// number of microseconds or "max" (cgroup-v2.rst). It returns the quota in
// CPUs, 0 when unlimited.
func parseCPUMax(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return 0, fmt.Errorf("cpu.max %q: want \"$MAX $PERIOD\"", strings.TrimSpace(s))
	}
	if f[0] == "max" {
		return 0, nil
	}
	q, err := strconv.ParseUint(f[0], 10, 63)
	if err != nil || q == 0 {
		return 0, fmt.Errorf("cpu.max %q: bad quota", strings.TrimSpace(s))
	}
	period := uint64(100000) // the kernel's default when only MAX is written
	if len(f) == 2 {
		if period, err = strconv.ParseUint(f[1], 10, 63); err != nil || period == 0 {
			return 0, fmt.Errorf("cpu.max %q: bad period", strings.TrimSpace(s))
		}
	}
	return float64(q) / float64(period), nil
}

// cgroupQuota walks from the cgroup directory dir up to the mount point
// (top), reading cpu.max in each with read, and returns the tightest
// quota and where it was set. Limits nest: a child cannot use more than
// its parent grants, so the smallest one along the way binds.
func cgroupQuota(dir, top string, read func(file string) (string, error)) (quota float64, at string) {
	top = path.Clean(top)
	for d := path.Clean(dir); ; d = path.Dir(d) {
		if s, err := read(path.Join(d, "cpu.max")); err == nil {
			if q, err := parseCPUMax(s); err == nil && q > 0 && (quota == 0 || q < quota) {
				quota, at = q, d
			}
		}
		if d == top || d == "/" || d == "." || !strings.HasPrefix(d, top) {
			return quota, at
		}
	}
}
