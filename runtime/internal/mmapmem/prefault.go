//go:build linux || darwin

package mmapmem

// Commit faults pages in (prefault) rather than leave their first touch to
// the guest: a page fault taken in a guest's compiled code (5-11 µs each on
// CI's VMs) is time wazero cannot preempt, which a host collection waited
// out (runtime/RATIONALE.md, "Why are a memory's pages faulted in when they
// are committed?"). In host Go code the scheduler preempts at will.

// prefaultChunk is how much prefault asks the kernel to populate at once:
// populating holds the process's memory map lock, which every mmap, munmap
// and mprotect of the Go runtime (its heap growth, a collection's
// scavenging) then waits for. 256 MiB at once held a host collection for
// 418 ms; 1 MiB holds it for about 0.2 ms.
const prefaultChunk = 1 << 20

// prefault faults in every page of b, a committed range of zeros: pages
// stay zero, and writing the zero back is what makes the page resident and
// writable for good.
func prefault(b []byte) {
	for len(b) > 0 {
		c := b[:min(len(b), prefaultChunk)]
		b = b[len(c):]
		populate(c)
		for i := uint64(0); i < uint64(len(c)); i += pageSize {
			c[i] = 0
		}
	}
}
