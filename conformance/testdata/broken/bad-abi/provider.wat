;; A deliberately broken provider: it reports ABI version 2 and lacks the
;; wasmprov_migrate_uid export. abi.module must fail; every other check is
;; skipped because the module does not load.
(module
  (memory (export "memory") 1)
  (func (export "wasmprov_abi_version") (result i32) (i32.const 2))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0))
  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0))
  (func (export "wasmprov_validate") (result i32) (i32.const 0))
  (func (export "wasmprov_get") (result i32) (i32.const 3))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0))
  (func (export "wasmprov_create") (result i32) (i32.const 1))
  (func (export "wasmprov_delete") (result i32) (i32.const 0))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (i32.const 0)))
