package precheck

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// tablesModule has tables tables of size entries each (maximum size), one
// function, and elems elements (function 0) in segs segments, active
// (spread over the tables) or passive.
func tablesModule(tables, size, elems, segs int, passive bool) []byte {
	g := gen{types: [][]byte{i32i32}, funcs: []uint32{0}, codes: [][]byte{ret0()}}
	for i := 0; i < tables; i++ {
		g.tables = append(g.tables, cat([]byte{0x70, 0x01}, leb(uint64(size)), leb(uint64(size))))
	}
	per := elems / segs
	for s := 0; s < segs; s++ {
		funcs := cat(leb(uint64(per)), make([]byte, per))
		if passive {
			g.elems = append(g.elems, cat([]byte{0x01, 0x00}, funcs)) // passive, funcref, function indices
			continue
		}
		tbl := s % tables
		off := (s / tables) * per
		// Active, explicit table, funcref, function indices.
		g.elems = append(g.elems, cat([]byte{0x02}, leb(uint64(tbl)), opI32Const(int32(off)), opEnd, []byte{0x00}, funcs))
	}
	return g.bytes()
}

// The red team's instantiation bomb (four tables of 262,144 entries
// filled by 1 M elements: 0.8-1.5 s and 30 MiB every instance start on
// wazero) and its halves are refused before anything compiles.
func TestTableBombs(t *testing.T) {
	for _, c := range []struct {
		name, limit string
		wasm        []byte
	}{
		{"4 tables × 262,144, 1 M elements", "MaxInitialTableEntries", tablesModule(4, 1<<18, 1<<20, 4, false)},
		{"1 table × 262,144, 262,144 elements", "MaxElements", tablesModule(1, 1<<18, 1<<18, 1, false)},
		{"262,144 passive elements", "MaxElements", tablesModule(1, 1, 1<<18, 4, true)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.wasm, Limits{})
			var r *Rejection
			if !errors.As(err, &r) || r.Limit != c.limit {
				t.Fatalf("Check: %v, want a %s rejection", err, c.limit)
			}
			t.Log(err)
		})
	}
}

// BenchmarkInstanceTables: what an instance start costs wazero for the
// worst tables and elements within DefaultLimits (and, for comparison,
// the red team's, over them). cpu-ms/op is the process's CPU time an
// instantiation; retained-MiB the heap each instance holds while it lives;
// alloc-MiB/op what it allocates.
//
//	go test -run XXX -bench InstanceTables -benchtime 20x ./runtime/internal/precheck
func BenchmarkInstanceTables(b *testing.B) {
	d := DefaultLimits
	for _, c := range []struct {
		name string
		wasm []byte
		over bool
	}{
		{"limits/active", tablesModule(4, d.MaxInitialTableEntries/4, d.MaxElements, 4, false), false},
		{"limits/one-table-active", tablesModule(1, d.MaxInitialTableEntries, d.MaxElements, d.MaxElementSegments, false), false},
		{"limits/passive", tablesModule(4, d.MaxInitialTableEntries/4, d.MaxElements, d.MaxElementSegments, true), false},
		{"limits/tables-only", tablesModule(4, d.MaxInitialTableEntries/4, 0, 1, false), false},
		{"red-team", tablesModule(4, 1<<18, 1<<20, 4, false), true},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := Check(c.wasm, Limits{}); (err != nil) != c.over {
				b.Fatalf("Check: %v", err)
			}
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
			defer rt.Close(ctx)
			cm, err := rt.CompileModule(ctx, c.wasm)
			if err != nil {
				b.Fatal(err)
			}
			mods := make([]api.Module, 0, b.N)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := cpuTime()
			for i := 0; i < b.N; i++ {
				m, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
				if err != nil {
					b.Fatal(err)
				}
				mods = append(mods, m)
			}
			cpu := cpuTime() - start
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20)/float64(b.N), "retained-MiB")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20)/float64(b.N), "alloc-MiB/op")
			for _, m := range mods {
				m.Close(ctx)
			}
		})
	}
}
