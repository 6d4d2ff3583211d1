;; A deliberately broken provider: it declares http and pv_list (0x0a) but
;; imports neither http_do nor pv_list, so it can never use them.
;; abi.no-unused-capabilities must warn; the module loads (abi.module passes).
(module
  (memory (export "memory") 1)
  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0x0a))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32) (i32.const 3))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 1))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0))
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0)))
