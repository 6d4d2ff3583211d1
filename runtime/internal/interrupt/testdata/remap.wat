;; FlagBudget's index remapping: the yield import takes function index 1
;; (after env.add), so every defined function moves up by one. Every kind of
;; function-index use is here: call; call_indirect through tables filled by
;; element segments of every form wat2wasm writes (active on table 0 with
;; function indices and with expressions, active on table 1 with both,
;; passive with both, declarative with both); ref.func in code and in a global
;; initialiser; the start function; exports; the name section (wat2wasm
;; --debug-names; see budget_test.go's go:generate).
(module $remap
  (import "env" "add" (func $host_add (param i32 i32) (result i32)))
  (type $ret_i32 (func (result i32)))
  (table $tab 5 funcref)
  (table $tab1 4 funcref)
  (global $started (mut i32) (i32.const 0))
  (global $fref funcref (ref.func $nine))
  (elem (i32.const 0) func $seven $eight)                              ;; flags 0
  (elem (i32.const 2) funcref (ref.func $nine) (ref.null func))        ;; flags 4
  (elem (table $tab1) (i32.const 0) func $eight)                       ;; flags 2
  (elem (table $tab1) (i32.const 1) funcref (ref.func $ten) (ref.null func)) ;; flags 6
  (elem $passive_funcs func $seven)                                    ;; flags 1
  (elem $passive_exprs funcref (ref.func $nine) (ref.null func))       ;; flags 5
  (elem declare func $ten)                                             ;; flags 3
  (elem declare funcref (ref.func $ten) (ref.null func))               ;; flags 7
  (start $init)
  (func $init (global.set $started (i32.const 100)))
  (func $seven (type $ret_i32) (i32.const 7))
  (func $eight (type $ret_i32) (i32.const 8))
  (func $nine (type $ret_i32) (i32.const 9))
  (func $ten (type $ret_i32) (i32.const 10))
  (func $f_direct (export "direct") (result i32) (call $eight))
  (func $f_indirect (export "indirect") (param $slot i32) (result i32)
    (call_indirect $tab (type $ret_i32) (local.get $slot)))
  (func $f_indirect1 (export "indirect1") (param $slot i32) (result i32)
    (call_indirect $tab1 (type $ret_i32) (local.get $slot)))
  ;; Copies passive segment $which (0: $passive_funcs, 1: $passive_exprs)
  ;; to table 1 slot 3 and calls it.
  (func $f_passive (export "passive") (param $which i32) (result i32)
    (if (local.get $which)
      (then (table.init $tab1 $passive_exprs (i32.const 3) (i32.const 0) (i32.const 1)))
      (else (table.init $tab1 $passive_funcs (i32.const 3) (i32.const 0) (i32.const 1))))
    (call_indirect $tab1 (type $ret_i32) (i32.const 3)))
  (func $f_host (export "host") (result i32)
    (call $host_add (i32.const 2) (i32.const 3)))
  (func $f_started (export "started") (result i32) (global.get $started))
  (func $f_reffunc (export "reffunc") (result i32)
    (table.set $tab (i32.const 4) (ref.func $ten))
    (call_indirect $tab (type $ret_i32) (i32.const 4)))
  (func $f_globalref (export "globalref") (result i32)
    (table.set $tab (i32.const 4) (global.get $fref))
    (call_indirect $tab (type $ret_i32) (i32.const 4)))
  (func $f_loop (export "loop") (param $n i32) (result i32) (local $i i32) (local $sum i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $sum (i32.add (local.get $sum) (call $seven)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $sum))
  (func $trap_inner (unreachable))
  (func $f_trap (export "trap") (call $trap_inner))
  (export "seven" (func $seven))
  (export "table" (table $tab)))
