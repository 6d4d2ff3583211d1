;; Reports ABI version 0: a wrong ABI.
(module
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (import "wasmprov_v1" "set_error" (func $set_error (param i32 i32 i32 i32 i64) (result i32)))

  (memory (export "memory") 1)
  ;; A valid Instance document at 0 (40 bytes).
  (data (i32.const 0) "{\"name\":\"x\",\"id\":\"x\",\"status\":\"running\"}")
  (func (export "wasmprov_abi_version") (result i32) (i32.const 0))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32)
    (i32.const 0))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 0))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0))
)
