;; _initialize calls host functions before any method call is in progress
;; (the closest the ABI comes to re-entrancy: no host function calls back
;; into the guest). The ABI version is reported as 1 only if every answer
;; was "unavailable" (-5), so the module loads iff the host refused them all.
(module
  (import "wasmprov_v1" "input" (func $input (param i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "log" (func $log (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmprov_v1" "config_var" (func $config_var (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (import "wasmprov_v1" "set_error" (func $set_error (param i32 i32 i32 i32 i64) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"name\":\"x\",\"id\":\"x\",\"status\":\"running\"}")
  (global $ok (mut i32) (i32.const 0))
  (func (export "_initialize")
    (global.set $ok
      (i32.and
        (i32.and
          (i64.eq (call $input (i32.const 1) (i32.const 0) (i32.const 0)) (i64.const -5))
          (i32.eq (call $log (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 0)) (i32.const -5)))
        (i32.and
          (i64.eq (call $config_var (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 0)) (i64.const -5))
          (i32.eq (call $set_error (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1) (i64.const 0)) (i32.const -5))))))
  (func (export "wasmprov_abi_version") (result i32)
    (select (i32.const 1) (i32.const 99) (global.get $ok)))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0x11))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32)
    (drop (call $output (i32.const 0) (i32.const 40)))
    (i32.const 0))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 0))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0))
)
