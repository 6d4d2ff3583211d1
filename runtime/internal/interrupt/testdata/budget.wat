;; Loops for FlagBudget's behaviour tests and the check's benchmark
;; (wat2wasm --debug-names; see budget_test.go's go:generate).
(module $budget
  (memory 256) ;; 16 MiB
  ;; Never returns.
  (func $spin (export "spin") (loop $forever (br $forever)))
  ;; Sums 0..n-1 (mod 2^32) in a loop whose header runs n times (n >= 1):
  ;; with the entry, n+1 checks.
  (func $sum (export "sum") (param $n i32) (result i32) (local $i i32) (local $s i32)
    (loop $next
      (local.set $s (i32.add (local.get $s) (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $s))
  ;; Fills n bytes k times (k >= 1, n <= 16 MiB): the entry's check, then k
  ;; times the loop header's check and a memory.fill of n bytes.
  (func $fill (export "fill") (param $n i32) (param $k i32)
    (loop $next
      (memory.fill (i32.const 0) (i32.const 1) (local.get $n))
      (br_if $next (local.tee $k (i32.sub (local.get $k) (i32.const 1))))))
  ;; Never returns: fills the whole memory again and again (a few
  ;; milliseconds each time), one check per fill.
  (func $fillspin (export "fillspin")
    (loop $forever
      (memory.fill (i32.const 0) (i32.const 1) (i32.const 16777216))
      (br $forever))))
