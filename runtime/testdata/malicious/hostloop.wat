;; Get calls host functions in a tight loop that never ends: input (cached
;; by the host after the first call) and a disabled-level log.
(module
  (import "wasmprov_v1" "input" (func $input (param i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "log" (func $log (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "spam")
  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 1))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32)
    (loop $forever
      (drop (call $input (i32.const 1) (i32.const 1024) (i32.const 16384)))
      (drop (call $log (i32.const -8) (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0)))
      (br $forever))
    (i32.const 0))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 0))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0))
)
