;; Get passes out-of-bounds, wrapping and overlapping pointers to every host
;; function and checks each answer. It returns status 0 with a valid
;; instance when every answer was the expected errno, else 100+N where N is
;; the first check that failed (the host reports an unknown status).
(module
  (import "wasmprov_v1" "input" (func $input (param i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "take_result" (func $take_result (param i32 i32) (result i64)))
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (import "wasmprov_v1" "set_error" (func $set_error (param i32 i32 i32 i32 i64) (result i32)))
  (import "wasmprov_v1" "log" (func $log (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmprov_v1" "http_do" (func $http_do (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "machine_update" (func $machine_update (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "pv_list" (func $pv_list (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "config_var" (func $config_var (param i32 i32 i32 i32) (result i64)))
  ;; 96 pages (6 MiB): room for a 5 MiB output.
  (memory (export "memory") 96)
  (data (i32.const 0) "{\"name\":\"x\",\"id\":\"x\",\"status\":\"running\"}")
  (data (i32.const 1024) "{\"type\":\"string\",\"var\":\"hello\"}")
  (data (i32.const 2048) "{\"type\":\"string\",\"var\":\"hello\"}")
  (global $failed (mut i32) (i32.const 0))
  ;; check records the first failing check number.
  (func $check (param $n i32) (param $ok i32)
    (if (i32.and (i32.eqz (local.get $ok)) (i32.eqz (global.get $failed)))
      (then (global.set $failed (local.get $n)))))
  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  ;; log | http | machine_update | pv_list | config_var
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0x1f))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32)
    (global.set $failed (i32.const 0))
    ;; 1: input into a buffer past the end of memory: invalid (-3).
    (call $check (i32.const 1) (i64.eq (call $input (i32.const 2) (i32.const 0xfffffff0) (i32.const 100000)) (i64.const -3)))
    ;; 2: take_result into a buffer past the end: invalid.
    (call $check (i32.const 2) (i64.eq (call $take_result (i32.const 0xfffffff0) (i32.const 100000)) (i64.const -3)))
    ;; 3: an input part that does not exist: invalid (-3; a part the method
    ;; does not offer would be unavailable, -5).
    (call $check (i32.const 3) (i64.eq (call $input (i32.const 99) (i32.const 0) (i32.const 0)) (i64.const -3)))
    ;; 4: output from a range that wraps around 4 GiB: invalid.
    (call $check (i32.const 4) (i32.eq (call $output (i32.const 0xffffffff) (i32.const 2)) (i32.const -3)))
    ;; 5: output of 4 GiB - 1 bytes: invalid (out of bounds).
    (call $check (i32.const 5) (i32.eq (call $output (i32.const 0) (i32.const 0xffffffff)) (i32.const -3)))
    ;; 6: set_error with an out-of-bounds reason: invalid.
    (call $check (i32.const 6) (i32.eq (call $set_error (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 1) (i64.const 0)) (i32.const -3)))
    ;; 7: log with an out-of-bounds message: invalid.
    (call $check (i32.const 7) (i32.eq (call $log (i32.const 0) (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 0)) (i32.const -3)))
    ;; 8: log with out-of-bounds attributes: invalid.
    (call $check (i32.const 8) (i32.eq (call $log (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0xfffffff0) (i32.const 100)) (i32.const -3)))
    ;; 9-12: each data function with an out-of-bounds request: invalid.
    (call $check (i32.const 9) (i64.eq (call $http_do (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 0)) (i64.const -3)))
    (call $check (i32.const 10) (i64.eq (call $machine_update (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 0)) (i64.const -3)))
    (call $check (i32.const 11) (i64.eq (call $pv_list (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 0)) (i64.const -3)))
    (call $check (i32.const 12) (i64.eq (call $config_var (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 0)) (i64.const -3)))
    ;; 13: a request length of 2 GiB: outside memory, so invalid before any
    ;; size limit applies.
    (call $check (i32.const 13) (i64.eq (call $http_do (i32.const 0) (i32.const 0x7fffffff) (i32.const 0) (i32.const 0)) (i64.const -3)))
    ;; 14: config_var whose result buffer overlaps its own request: the host
    ;; copied the request first, so the answer is "hello" (5 bytes) written over it.
    (call $check (i32.const 14) (i64.eq (call $config_var (i32.const 1024) (i32.const 31) (i32.const 1024) (i32.const 64)) (i64.const 5)))
    (call $check (i32.const 15) (i32.eq (i32.load8_u (i32.const 1028)) (i32.const 0x6f)))
    ;; 16: config_var with a valid request but a result buffer out of bounds: invalid.
    (call $check (i32.const 16) (i64.eq (call $config_var (i32.const 2048) (i32.const 31) (i32.const 0xfffffff0) (i32.const 64)) (i64.const -3)))
    ;; 17: a 5 MiB output, over the 4 MiB result cap: too large (-6).
    (call $check (i32.const 17) (i32.eq (call $output (i32.const 0) (i32.const 5242880)) (i32.const -6)))
    ;; 18: take_result with nothing pending returns the pending length or an errno, never crashes.
    (call $check (i32.const 18) (i64.le_s (call $take_result (i32.const 0) (i32.const 0)) (i64.const 100000)))
;; 19-25: lengths and limits of -1 and 0x7fffffff are ranges like any
    ;; other, not huge unsigned sizes: invalid, nothing done.
    (call $check (i32.const 19) (i64.eq (call $input (i32.const 3) (i32.const 0) (i32.const -1)) (i64.const -3)))
    (call $check (i32.const 20) (i32.eq (call $set_error (i32.const 0) (i32.const 0x7fffffff) (i32.const 0) (i32.const 1) (i64.const 0)) (i32.const -3)))
    (call $check (i32.const 21) (i32.eq (call $set_error (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1) (i64.const -1)) (i32.const -3)))
    (call $check (i32.const 22) (i32.eq (call $output (i32.const 0) (i32.const 0x7fffffff)) (i32.const -3)))
    (call $check (i32.const 23) (i32.eq (call $log (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0) (i32.const -1)) (i32.const -3)))
    (call $check (i32.const 24) (i64.eq (call $input (i32.const -1) (i32.const 0) (i32.const 16)) (i64.const -3)))
    (call $check (i32.const 25) (i64.eq (call $pv_list (i32.const 0) (i32.const 2) (i32.const 0) (i32.const 0x7fffffff)) (i64.const -3)))
    (if (global.get $failed) (then (return (i32.add (i32.const 100) (global.get $failed)))))
    (drop (call $output (i32.const 0) (i32.const 40)))
    (i32.const 0))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 0))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0))
)
