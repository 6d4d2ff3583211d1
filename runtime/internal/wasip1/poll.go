package wasip1

import (
	"context"
	"math"
	"time"
)

// pollOneoff follows wazero's poll_oneoff step by step, on memory as it is
// (the subscriptions and events may overlap, and each write is visible to
// the reads after it):
//
//  1. nsubscriptions 0 is EINVAL; the subscriptions (48 bytes each) and
//     events (32 bytes each) must be in memory (EFAULT). Both sizes are
//     computed in 32 bits, as wazero does.
//  2. The events are zeroed and nevents is written as nsubscriptions,
//     before any subscription is read.
//  3. Each subscription in turn: a clock with relative time gives its
//     event at once and its timeout counts towards the sleep; absolute time
//     is ENOTSUP, other clock flags EINVAL (the whole call). fd_read of an
//     open descriptor is deferred; of any other descriptor it gives an event
//     with EBADF. fd_write gives an event with ENOTSUP (open) or EBADF. A
//     negative descriptor is EBADF and an unknown type EINVAL (the whole
//     call).
//  4. With nothing deferred, the call sleeps for the shortest relative
//     timeout (with no clock subscription, for ever: wazero's timeout starts
//     at the largest duration) when the clock is granted. With fd_read
//     subscriptions deferred, stdin (always ready, at EOF) answers at once:
//     their events follow, with no sleep; if stdin was closed, EBADF.
//
// Where wazero would index past a buffer whose size wrapped around 32 bits
// (a Go panic, reported as a trap), this returns EFAULT.
func (s *State) pollOneoff(ctx context.Context, mem Memory, in, out, nsubs, resultNevents uint32) Errno {
	if nsubs == 0 {
		return EINVAL
	}
	inBuf, ok := mem.Read(in, nsubs*48)
	if !ok {
		return EFAULT
	}
	outBuf, ok := mem.Read(out, nsubs*32)
	clear(outBuf)
	if !ok {
		return EFAULT
	}
	if !putU32(mem, resultNevents, nsubs) {
		return EFAULT
	}

	var (
		timeout  = time.Duration(math.MaxInt64)
		nevents  uint32
		deferred []uint64 // bit i: subscription i is a deferred fd_read
		ndefer   uint32
	)
	// event writes an event for the subscription at inOffset, reading its
	// userdata now, or reports false where wazero would index out of range.
	event := func(inOffset uint32, typ byte, errno Errno) bool {
		o := uint64(nevents) * 32
		if o+32 > uint64(len(outBuf)) {
			return false
		}
		e := outBuf[o : o+32]
		copy(e[0:8], inBuf[inOffset:inOffset+8])
		e[8], e[9] = byte(errno), 0
		le.PutUint32(e[10:], uint32(typ))
		nevents++
		return true
	}
	for i := uint32(0); i < nsubs; i++ {
		if i&(checkEvery-1) == 0 && i > 0 {
			s.check()
		}
		inOffset := i * 48
		// A subscription is whole unless the buffer's size wrapped; past
		// the end wazero panics on the type byte, the clock fields or the
		// descriptor.
		if uint64(inOffset) >= uint64(len(inBuf)) {
			return EFAULT
		}
		sub := inBuf[inOffset:]
		avail := len(sub)
		switch typ := sub[8]; typ {
		case eventClock:
			if avail < 48 {
				return EFAULT
			}
			d := time.Duration(le.Uint64(sub[24:32]))
			switch flags := le.Uint16(sub[40:42]); flags {
			case 0: // relative; the clock id is not checked
			case 1: // subscription_clock_abstime
				return ENOTSUP
			default:
				return EINVAL
			}
			timeout = min(timeout, d)
			if !event(inOffset, typ, ESUCCESS) {
				return EFAULT
			}
		case eventFdRead, eventFdWrite:
			if avail < 20 {
				return EFAULT
			}
			fd := int32(le.Uint32(sub[16:20]))
			written := true
			switch {
			case fd < 0:
				return EBADF
			case typ == eventFdWrite && s.lookup(fd):
				written = event(inOffset, typ, ENOTSUP)
			case !s.lookup(fd):
				written = event(inOffset, typ, EBADF)
			default: // fd_read of stdio: deferred
				if deferred == nil {
					// At most every subscription in the buffer.
					deferred = make([]uint64, min(uint64(nsubs), uint64(len(inBuf)/48)+1)/64+1)
				}
				deferred[i/64] |= 1 << (i % 64)
				ndefer++
			}
			if !written {
				return EFAULT
			}
		default:
			return EINVAL
		}
	}

	if ndefer == 0 {
		s.sleep(ctx, timeout)
		return ESUCCESS
	}
	if !s.open[0] {
		return EBADF // stdin is what answers the deferred reads
	}
	for i := uint32(0); i < nsubs; i++ {
		if i&(checkEvery-1) == 0 && i > 0 {
			s.check()
		}
		if deferred[i/64]&(1<<(i%64)) == 0 {
			continue
		}
		if !event(i*48, eventFdRead, ESUCCESS) {
			return EFAULT
		}
	}
	return ESUCCESS
}
