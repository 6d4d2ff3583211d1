;; Exports only memory and the ABI version: every other required export is missing.
(module
  (memory (export "memory") 1)
  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
)
