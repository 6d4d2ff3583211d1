package wasip1

import (
	"context"
	"slices"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
)

const (
	i32 = hostmodule.I32
	i64 = hostmodule.I64
)

func params(t ...hostmodule.ValueType) []hostmodule.ValueType { return t }

var errnoResult = []hostmodule.ValueType{i32}

// fn adapts a function returning an errno to the stack convention.
func fn(name string, p []hostmodule.ValueType, f func(ctx context.Context, s *State, mem Memory, a []uint64) Errno) Function {
	return Function{Name: name, Params: p, Results: errnoResult, Fn: func(ctx context.Context, s *State, mem Memory, stack []uint64) {
		stack[0] = uint64(f(ctx, s, mem, stack))
	}}
}

// u32 and fd read an i32 parameter as wazero does: unsigned for pointers
// and lengths, signed for descriptors.
func u32(v uint64) uint32 { return uint32(v) }
func fd(v uint64) int32   { return int32(v) }

// Functions returns every function of wasi_snapshot_preview1 (the
// preview1 witx), in the witx's order. The table is the same for every
// instance; an engine binds it once per module and passes each call the
// instance's State. Each call returns a new slice of the entries of
// functions, whose Params and Results it shares.
func Functions() []Function { return slices.Clone(functions) }

// functions is the table of wasi_snapshot_preview1, in the witx's order:
// each entry's name, parameters and what it does with them.
var functions = []Function{
	fn("args_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return writeStrings(mem, nil, u32(a[0]), u32(a[1]), 0)
	}),
	fn("args_sizes_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return writeSizes(mem, 0, 0, u32(a[0]), u32(a[1]))
	}),
	fn("environ_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return writeStrings(mem, s.env, u32(a[0]), u32(a[1]), s.envSize)
	}),
	fn("environ_sizes_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return writeSizes(mem, uint32(len(s.env)), s.envSize, u32(a[0]), u32(a[1]))
	}),
	fn("clock_res_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.clockResGet(mem, u32(a[0]), u32(a[1]))
	}),
	fn("clock_time_get", params(i32, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.clockTimeGet(mem, u32(a[0]), u32(a[2]))
	}),
	fn("fd_advise", params(i32, i64, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdAdvise(fd(a[0]), byte(a[3]))
	}),
	fn("fd_allocate", params(i32, i64, i64), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdAllocate(fd(a[0]), a[1], a[2])
	}),
	fn("fd_close", params(i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdClose(fd(a[0]))
	}),
	fn("fd_datasync", params(i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdSync(fd(a[0]))
	}),
	fn("fd_fdstat_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdFdstatGet(mem, fd(a[0]), u32(a[1]))
	}),
	fn("fd_fdstat_set_flags", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdFdstatSetFlags(fd(a[0]), uint16(a[1]))
	}),
	fn("fd_fdstat_set_rights", params(i32, i64, i64), func(context.Context, *State, Memory, []uint64) Errno {
		return ENOSYS // a stub in wazero
	}),
	fn("fd_filestat_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdFilestatGet(mem, fd(a[0]), u32(a[1]))
	}),
	fn("fd_filestat_set_size", params(i32, i64), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdUnsupported(fd(a[0]))
	}),
	fn("fd_filestat_set_times", params(i32, i64, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdFilestatSetTimes(fd(a[0]), uint16(a[3]))
	}),
	fn("fd_pread", params(i32, i32, i32, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdRead(mem, fd(a[0]), u32(a[1]), u32(a[2]), u32(a[4]), true)
	}),
	fn("fd_prestat_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdPrestatGet(mem, fd(a[0]), u32(a[1]))
	}),
	fn("fd_prestat_dir_name", params(i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdPrestatDirName(mem, fd(a[0]), u32(a[1]), u32(a[2]))
	}),
	fn("fd_pwrite", params(i32, i32, i32, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdWrite(mem, fd(a[0]), u32(a[1]), u32(a[2]), u32(a[4]), true)
	}),
	fn("fd_read", params(i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdRead(mem, fd(a[0]), u32(a[1]), u32(a[2]), u32(a[3]), false)
	}),
	fn("fd_readdir", params(i32, i32, i32, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdReaddir(fd(a[0]), u32(a[2]))
	}),
	fn("fd_renumber", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdRenumber(fd(a[0]), fd(a[1]))
	}),
	fn("fd_seek", params(i32, i64, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdUnsupported(fd(a[0]))
	}),
	fn("fd_sync", params(i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdSync(fd(a[0]))
	}),
	fn("fd_tell", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdUnsupported(fd(a[0])) // fd_seek(fd, 0, SEEK_CUR)
	}),
	fn("fd_write", params(i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.fdWrite(mem, fd(a[0]), u32(a[1]), u32(a[2]), u32(a[3]), false)
	}),
	fn("path_create_directory", params(i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[1]), u32(a[2]))
	}),
	fn("path_filestat_get", params(i32, i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[2]), u32(a[3]))
	}),
	fn("path_filestat_set_times", params(i32, i32, i32, i32, i64, i64, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		if errno := s.toTimes(uint16(a[6])); errno != ESUCCESS {
			return errno
		}
		return s.atPath(mem, fd(a[0]), u32(a[2]), u32(a[3]))
	}),
	fn("path_link", params(i32, i32, i32, i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[2]), u32(a[3])) // the new path is never reached
	}),
	fn("path_open", params(i32, i32, i32, i32, i32, i64, i64, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[2]), u32(a[3]))
	}),
	fn("path_readlink", params(i32, i32, i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		if u32(a[2]) == 0 || u32(a[4]) == 0 {
			return EINVAL
		}
		return s.atPath(mem, fd(a[0]), u32(a[1]), u32(a[2]))
	}),
	fn("path_remove_directory", params(i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[1]), u32(a[2]))
	}),
	fn("path_rename", params(i32, i32, i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[1]), u32(a[2])) // the new path is never reached
	}),
	fn("path_symlink", params(i32, i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.dirFd(fd(a[2])) // checked before the paths, and no descriptor is a directory
	}),
	fn("path_unlink_file", params(i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.atPath(mem, fd(a[0]), u32(a[1]), u32(a[2]))
	}),
	fn("poll_oneoff", params(i32, i32, i32, i32), func(ctx context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.pollOneoff(ctx, mem, u32(a[0]), u32(a[1]), u32(a[2]), u32(a[3]))
	}),
	{Name: "proc_exit", Params: params(i32), Fn: func(_ context.Context, _ *State, _ Memory, stack []uint64) {
		exit(u32(stack[0]))
	}},
	fn("proc_raise", params(i32), func(context.Context, *State, Memory, []uint64) Errno {
		return ENOSYS // a stub in wazero
	}),
	fn("sched_yield", nil, func(context.Context, *State, Memory, []uint64) Errno {
		return ESUCCESS // wazero's default osyield does nothing
	}),
	fn("random_get", params(i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		return s.randomGet(mem, u32(a[0]), u32(a[1]))
	}),
	fn("sock_accept", params(i32, i32, i32), func(context.Context, *State, Memory, []uint64) Errno {
		return EBADF // no listener is preopened
	}),
	fn("sock_recv", params(i32, i32, i32, i32, i32, i32), func(context.Context, *State, Memory, []uint64) Errno {
		return EBADF // no descriptor is a connection
	}),
	fn("sock_send", params(i32, i32, i32, i32, i32), func(_ context.Context, s *State, mem Memory, a []uint64) Errno {
		if u32(a[3]) != 0 {
			return ENOTSUP // si_flags are checked first
		}
		return EBADF
	}),
	fn("sock_shutdown", params(i32, i32), func(context.Context, *State, Memory, []uint64) Errno {
		return EBADF
	}),
}
