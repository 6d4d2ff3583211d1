;; fixed: randprobe with a fixed "random" stream, as a host without real
;; randomness would give every instance. Only the conformance suite's own
;; test of sandbox.random-per-instance loads it.
;; randprobe: the smallest provider module that shows the random stream
;; an instance gets. MachineMetricsLabels answers {"size":"<32 hex digits>"}
;; from 16 bytes of WASI random_get; every other method answers OK with no
;; output. The conformance check sandbox.random-per-instance loads it twice
;; on the runtime a run uses and compares the two answers.
(module
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "0123456789abcdef")
  (data (i32.const 64) "{\"size\":\"")                  ;; 64 9, then 32 hex digits at 73
  (data (i32.const 105) "\"}")                          ;; 105 2: the document is [64, 107)

  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0x40)) ;; random
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32) (i32.const 0))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 0))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0))

  ;; 16 random bytes at 32, written as hex at 73.
  (func (export "wasmprov_machine_metrics_labels") (result i32) (local $i i32) (local $b i32)
    ;; no random_get: bytes 32..47 stay as the data segment left them (zero)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (i32.const 16)))
      (local.set $b (i32.load8_u (i32.add (i32.const 32) (local.get $i))))
      (i32.store8 (i32.add (i32.const 73) (i32.shl (local.get $i) (i32.const 1)))
        (i32.load8_u (i32.shr_u (local.get $b) (i32.const 4))))
      (i32.store8 (i32.add (i32.const 74) (i32.shl (local.get $i) (i32.const 1)))
        (i32.load8_u (i32.and (local.get $b) (i32.const 15))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (if (call $output (i32.const 64) (i32.const 43)) (then (unreachable)))
    (i32.const 0))
)
