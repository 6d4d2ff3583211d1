;; Get writes 64 KiB lines to stdout (and Validate to stderr) 512 times: 32 MiB
;; of output, 32 times the host's per-instance cap, each line 16 times the
;; per-line cap.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 0) "{\"name\":\"x\",\"id\":\"x\",\"status\":\"running\"}")
  (func $flood (param $fd i32)
    (local $i i32)
    ;; 64 KiB of 'A' at 65536, the last byte a newline.
    (memory.fill (i32.const 65536) (i32.const 0x41) (i32.const 65536))
    (i32.store8 (i32.const 131071) (i32.const 10))
    ;; iovec at 64: {buf=65536, len=65536}
    (i32.store (i32.const 64) (i32.const 65536))
    (i32.store (i32.const 68) (i32.const 65536))
    (loop $again
      (drop (call $fd_write (local.get $fd) (i32.const 64) (i32.const 1) (i32.const 80)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 512)))))
  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (call $flood (i32.const 2)) (i32.const 0))
  (func (export "wasmprov_get") (result i32)
    (call $flood (i32.const 1))
    (drop (call $output (i32.const 0) (i32.const 40)))
    (i32.const 0))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 0))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0))
)
