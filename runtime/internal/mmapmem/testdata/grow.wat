;; Test module for package mmapmem: a memory of one page and no maximum of
;; its own (the runtime's limit applies), and functions to grow and touch it.
;; Regenerate grow.wasm with: wat2wasm grow.wat -o grow.wasm
(module
  (memory (export "memory") 1)
  ;; grow returns the previous size in pages, or -1.
  (func (export "grow") (param $pages i32) (result i32)
    (memory.grow (local.get $pages)))
  (func (export "size") (result i32)
    (memory.size))
  (func (export "load") (param $addr i32) (result i32)
    (i32.load (local.get $addr)))
  (func (export "store") (param $addr i32) (param $v i32)
    (i32.store (local.get $addr) (local.get $v)))
  (func (export "fill") (param $addr i32) (param $byte i32) (param $len i32)
    (memory.fill (local.get $addr) (local.get $byte) (local.get $len)))
  ;; sum adds up the bytes in [addr, addr+len).
  (func (export "sum") (param $addr i32) (param $len i32) (result i64)
    (local $end i32) (local $acc i64)
    (local.set $end (i32.add (local.get $addr) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $addr) (local.get $end)))
        (local.set $acc (i64.add (local.get $acc) (i64.load8_u (local.get $addr))))
        (local.set $addr (i32.add (local.get $addr) (i32.const 1)))
        (br $next)))
    (local.get $acc))
)
