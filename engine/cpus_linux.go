//go:build !portable

package engine

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// AllowedCPUs returns the CPUs the process may use: its affinity mask
// (sched_getaffinity), and the cgroup v2 quota (cpu.max) of its cgroup and
// every cgroup above it up to the cgroup2 mount. A host with cgroup v1
// only, or whose files cannot be read, reports no quota.
func AllowedCPUs() CPULimit {
	var l CPULimit
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		l.Affinity = set.Count()
	}
	if l.Affinity <= 0 {
		l.Affinity = runtime.NumCPU()
	}
	l.Quota, l.QuotaAt = readCgroupQuota()
	return l
}

func readCgroupQuota() (float64, string) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, ""
	}
	p, ok := parseCgroupV2Path(string(cg))
	if !ok {
		return 0, ""
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0, ""
	}
	mounts := parseCgroup2Mounts(string(mi))
	dir := cgroupDir(p, mounts)
	if dir == "" {
		return 0, ""
	}
	// The walk up ends at the highest mount point dir lies under (dir is
	// absolute: a mount point joined with a cgroup path).
	top := dir
	for _, m := range mounts {
		if _, under := relCgroup(dir, m.point); under && len(m.point) < len(top) {
			top = m.point
		}
	}
	return cgroupQuota(dir, top, func(f string) (string, error) {
		b, err := os.ReadFile(f)
		return string(b), err
	})
}
