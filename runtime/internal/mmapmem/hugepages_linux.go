package mmapmem

import "golang.org/x/sys/unix"

// adviseNoHugePages keeps transparent huge pages out of the reservation:
// where THP is "always", touching one byte of a linear memory could make a
// whole 2 MiB page resident, and many small instances are the case this
// package is for. Best effort.
func adviseNoHugePages(region []byte) { _ = unix.Madvise(region, unix.MADV_NOHUGEPAGE) }
