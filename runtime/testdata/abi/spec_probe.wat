;; ABI v1 SPEC-conformance probe (runtime/spec_test.go). Every method reads its
;; provider spec, a JSON number, and runs that scenario of the table below: the
;; scenarios return a status, output a document, or report what host functions
;; returned as the message of an ERROR (numbers separated by spaces).
;; Generated once with a small script; edit freely, then run `make fixtures`.
(module
  (import "wasmprov_v1" "input" (func $input (param i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "take_result" (func $take_result (param i32 i32) (result i64)))
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (import "wasmprov_v1" "set_error" (func $set_error (param i32 i32 i32 i32 i64) (result i32)))
  (import "wasmprov_v1" "log" (func $log (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmprov_v1" "http_do" (func $http_do (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "machine_update" (func $machine_update (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "pv_list" (func $pv_list (param i32 i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "config_var" (func $config_var (param i32 i32 i32 i32) (result i64)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ;; 65 pages: one more than the 4 MiB result limit, so an output can be refused as TOO_LARGE.
  (memory (export "memory") 65)
  ;; $rp: where the report goes on (reports start at 0x1000); $init_rc: what
  ;; input returned when _initialize called it, outside any call.
  (global $rp (mut i32) (i32.const 0x1000))
  (global $init_rc (mut i64) (i64.const 1))
  (data (i32.const 24576) "{\"name\":\"w\",\"id\":\"42\",\"providerID\":\"spec://42\",\"status\":\"running\",\"addresses\":{\"10.0.0.1\":\"InternalIP\"}}") ;; inst_ok
  (data (i32.const 24688) "{\"name\":\"w\",\"id\":\"1\",\"status\":\"running\"}") ;; inst_one
  (data (i32.const 24736) "oops") ;; oops
  (data (i32.const 24748) "{\"name\":\"w\",\"status\":\"running\"}") ;; inst_noid
  (data (i32.const 24787) "{\"id\":\"1\",\"status\":\"booting\"}") ;; inst_badstatus
  (data (i32.const 24824) "{\"status\":\"creating\"}") ;; inst_creating
  (data (i32.const 24853) "Bogus") ;; bogus
  (data (i32.const 24866) "InvalidConfiguration") ;; invcfg
  (data (i32.const 24894) "invalidconfiguration") ;; invcfg_lc
  (data (i32.const 24922) "bad") ;; bad
  (data (i32.const 24933) "slow") ;; slow
  (data (i32.const 24945) "boom") ;; boom
  (data (i32.const 24957) "{}") ;; empty_obj
  (data (i32.const 24967) "{\"anotations\":{\"a\":\"b\"}}") ;; mu_unknown
  (data (i32.const 24999) "{\"annotations\":{\"wasmprov.io/x\":\"y\"}}") ;; mu_host
  (data (i32.const 25044) "{\"mergePatch\":{\"metadata\":{\"name\":\"x\"}}}") ;; mu_rename
  (data (i32.const 25092) "{\"labels\":{\"spec\":\"probe\"}}") ;; mu_ok
  (data (i32.const 25127) "{\"method\":\"GET\",\"url\":\"https://not-allowed.example/\"}") ;; http_denied
  (data (i32.const 25188) "{\"method\":\"GET\",\"url\":\"http://api.example.com/\"}") ;; http_plain
  (data (i32.const 25244) "{\"type\":\"string\",\"var\":{\"secretKeyRef\":{\"namespace\":\"kube-system\",\"name\":\"s\",\"key\":\"k\"}}}") ;; cv_secret
  (data (i32.const 25341) "{\"type\":\"string\",\"var\":\"\",\"envFallback\":\"HOME\"}") ;; cv_env
  (data (i32.const 25396) "{\"providerSpec\":{\"value\":{\"defaulted\":true}}}") ;; defaults
  (data (i32.const 25449) "{\"config\":\"[global]\",\"name\":\"spec\"}") ;; cloudcfg
  (data (i32.const 25492) "hi") ;; hi
  (data (i32.const 25502) "{\"size\":\"cx22\"}") ;; labels_ok
  (data (i32.const 25525) "x") ;; spec_input_json
  (data (i32.const 25534) "{\"name\":\"w\",\"id\":\"1\"}") ;; inst_nostatus
  (type $scenario (func (param $method i32) (result i32)))
  (table 40 funcref)
  (elem (i32.const 0) $s0 $s1 $s2 $s3 $s4 $s5 $s6 $s7 $s8 $s9 $s10 $s11 $s12 $s13 $s14 $s15 $s16 $s17 $s18 $s19 $s20 $s21 $s22 $s23 $s24 $s25 $s26 $s27 $s28 $s29 $s30 $s31 $s32 $s33 $s34 $s35 $s36 $s37 $s38 $s39)
  (func (export "_initialize")
    (global.set $init_rc (call $input (i32.const 6) (i32.const 0x2000) (i32.const 64))))
  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  ;; Every capability: the test's policy decides what is granted.
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0x7f))

  ;; $rep appends v in decimal and a space to the report.
  (func $rep (param $v i64)
    (local $start i32) (local $end i32) (local $t i32)
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then
        (i32.store8 (global.get $rp) (i32.const 45))
        (global.set $rp (i32.add (global.get $rp) (i32.const 1)))
        (local.set $v (i64.sub (i64.const 0) (local.get $v)))))
    (local.set $start (global.get $rp))
    (loop $digits
      (i32.store8 (global.get $rp)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (global.set $rp (i32.add (global.get $rp) (i32.const 1)))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (local.set $end (i32.sub (global.get $rp) (i32.const 1)))
    (block $done
      (loop $reverse
        (br_if $done (i32.ge_u (local.get $start) (local.get $end)))
        (local.set $t (i32.load8_u (local.get $start)))
        (i32.store8 (local.get $start) (i32.load8_u (local.get $end)))
        (i32.store8 (local.get $end) (local.get $t))
        (local.set $start (i32.add (local.get $start) (i32.const 1)))
        (local.set $end (i32.sub (local.get $end) (i32.const 1)))
        (br $reverse)))
    (i32.store8 (global.get $rp) (i32.const 32))
    (global.set $rp (i32.add (global.get $rp) (i32.const 1))))
  ;; $rep32 reports an i32 result (output, set_error, log).
  (func $rep32 (param $v i32) (call $rep (i64.extend_i32_s (local.get $v))))
  ;; $repok reports an errno as itself and any length as 0.
  (func $repok (param $v i64)
    (call $rep (select (local.get $v) (i64.const 0) (i64.lt_s (local.get $v) (i64.const 0)))))
  ;; $repbytes appends len bytes at ptr and a space.
  (func $repbytes (param $ptr i32) (param $len i32)
    (block $done
      (loop $copy
        (br_if $done (i32.le_s (local.get $len) (i32.const 0)))
        (i32.store8 (global.get $rp) (i32.load8_u (local.get $ptr)))
        (global.set $rp (i32.add (global.get $rp) (i32.const 1)))
        (local.set $ptr (i32.add (local.get $ptr) (i32.const 1)))
        (local.set $len (i32.sub (local.get $len) (i32.const 1)))
        (br $copy)))
    (i32.store8 (global.get $rp) (i32.const 32))
    (global.set $rp (i32.add (global.get $rp) (i32.const 1))))
  ;; $finish hands the report over as the message of an ERROR.
  (func $finish (result i32)
    (drop (call $set_error (i32.const 0) (i32.const 0)
      (i32.const 0x1000) (i32.sub (global.get $rp) (i32.const 0x1000)) (i64.const 0)))
    (i32.const 1))

  ;; $dispatch reads the provider spec (a JSON number) and runs that scenario.
  (func $dispatch (param $method i32) (result i32)
    (local $n i32) (local $i i32) (local $c i32) (local $scenario i32)
    (global.set $rp (i32.const 0x1000))
    (local.set $n (i32.wrap_i64 (call $input (i32.const 3) (i32.const 0x2000) (i32.const 16))))
    (block $done
      (loop $digits
        (br_if $done (i32.ge_s (local.get $i) (local.get $n)))
        (local.set $c (i32.sub (i32.load8_u (i32.add (i32.const 0x2000) (local.get $i))) (i32.const 48)))
        (br_if $done (i32.gt_u (local.get $c) (i32.const 9)))
        (local.set $scenario (i32.add (i32.mul (local.get $scenario) (i32.const 10)) (local.get $c)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $digits)))
    (call_indirect (type $scenario) (local.get $method) (local.get $scenario)))
  (func (export "wasmprov_add_defaults") (result i32) (call $dispatch (i32.const 0)))
  (func (export "wasmprov_validate") (result i32) (call $dispatch (i32.const 1)))
  (func (export "wasmprov_get") (result i32) (call $dispatch (i32.const 2)))
  (func (export "wasmprov_get_cloud_config") (result i32) (call $dispatch (i32.const 3)))
  (func (export "wasmprov_create") (result i32) (call $dispatch (i32.const 4)))
  (func (export "wasmprov_delete") (result i32) (call $dispatch (i32.const 5)))
  (func (export "wasmprov_machine_metrics_labels") (result i32) (call $dispatch (i32.const 6)))
  (func (export "wasmprov_migrate_uid") (result i32) (call $dispatch (i32.const 7)))

  ;; 0: no output, OK
  (func $s0 (type $scenario) (local $n i32) (i32.const 0))
  ;; 1: output with nothing, OK
  (func $s1 (type $scenario) (local $n i32) (drop (call $output (i32.const 0) (i32.const 0))) (i32.const 0))
  ;; 2: a valid running Instance, OK
  (func $s2 (type $scenario) (local $n i32) (drop (call $output (i32.const 24576) (i32.const 104))) (i32.const 0))
  ;; 3: output that is not JSON, OK
  (func $s3 (type $scenario) (local $n i32) (drop (call $output (i32.const 24736) (i32.const 4))) (i32.const 0))
  ;; 4: a running Instance without id, OK
  (func $s4 (type $scenario) (local $n i32) (drop (call $output (i32.const 24748) (i32.const 31))) (i32.const 0))
  ;; 5: an Instance with an unknown status, OK
  (func $s5 (type $scenario) (local $n i32) (drop (call $output (i32.const 24787) (i32.const 29))) (i32.const 0))
  ;; 6: a creating Instance without id, OK
  (func $s6 (type $scenario) (local $n i32) (drop (call $output (i32.const 24824) (i32.const 21))) (i32.const 0))
  ;; 7: TERMINAL without set_error
  (func $s7 (type $scenario) (local $n i32) (i32.const 2))
  ;; 8: TERMINAL with reason Bogus
  (func $s8 (type $scenario) (local $n i32) (drop (call $set_error (i32.const 24853) (i32.const 5) (i32.const 24922) (i32.const 3) (i64.const 0))) (i32.const 2))
  ;; 9: TERMINAL with reason InvalidConfiguration
  (func $s9 (type $scenario) (local $n i32) (drop (call $set_error (i32.const 24866) (i32.const 20) (i32.const 24922) (i32.const 3) (i64.const 0))) (i32.const 2))
  ;; 10: TERMINAL with reason invalidconfiguration
  (func $s10 (type $scenario) (local $n i32) (drop (call $set_error (i32.const 24894) (i32.const 20) (i32.const 24922) (i32.const 3) (i64.const 0))) (i32.const 2))
  ;; 11: NOT_FOUND
  (func $s11 (type $scenario) (local $n i32) (i32.const 3))
  ;; 12: ERROR with retry_after_ms 1500
  (func $s12 (type $scenario) (local $n i32) (drop (call $set_error (i32.const 0) (i32.const 0) (i32.const 24933) (i32.const 4) (i64.const 1500))) (i32.const 1))
  ;; 13: PANIC
  (func $s13 (type $scenario) (local $n i32) (drop (call $set_error (i32.const 0) (i32.const 0) (i32.const 24945) (i32.const 4) (i64.const 0))) (i32.const 4))
  ;; 14: status 5
  (func $s14 (type $scenario) (local $n i32) (i32.const 5))
  ;; 15: status -1
  (func $s15 (type $scenario) (local $n i32) (i32.const -1))
  ;; 16: trap
  (func $s16 (type $scenario) (local $n i32) unreachable)
  ;; 17: proc_exit(3)
  (func $s17 (type $scenario) (local $n i32) (call $proc_exit (i32.const 3)) (i32.const 0))
  ;; 18: report input(part, buf, 0) for parts 0..7: its errno, or 0 when offered
  (func $s18 (type $scenario) (local $n i32) (call $repok (call $input (i32.const 0) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 1) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 2) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 3) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 4) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 5) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 6) (i32.const 0x2000) (i32.const 0))) (call $repok (call $input (i32.const 7) (i32.const 0x2000) (i32.const 0))) (call $finish))
  ;; 19: pending result: too long, asked, copied, gone
  (func $s19 (type $scenario) (local $n i32) (call $rep (call $input (i32.const 3) (i32.const 0x2000) (i32.const 0))) (call $rep (call $take_result (i32.const 0x2000) (i32.const 0))) (call $rep (call $take_result (i32.const 0x2000) (i32.const 64))) (call $rep (call $take_result (i32.const 0x2000) (i32.const 64))) (call $repbytes (i32.const 0x2000) (i32.const 2)) (call $finish))
  ;; 20: a result that fits clears the pending one
  (func $s20 (type $scenario) (local $n i32) (call $rep (call $input (i32.const 3) (i32.const 0x2000) (i32.const 0))) (call $rep (call $input (i32.const 6) (i32.const 0x2000) (i32.const 64))) (call $rep (call $take_result (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 21: an errno's explanation is the pending result
  (func $s21 (type $scenario) (local $n i32) (call $rep (call $input (i32.const 0) (i32.const 0x2000) (i32.const 64))) (local.set $n (i32.wrap_i64 (call $take_result (i32.const 0x2000) (i32.const 4096)))) (call $repbytes (i32.const 0x2000) (local.get $n)) (call $finish))
  ;; 22: a refused take_result keeps the pending result
  (func $s22 (type $scenario) (local $n i32) (call $rep (call $input (i32.const 3) (i32.const 0x2000) (i32.const 0))) (call $rep (call $take_result (i32.const 0xffffff00) (i32.const 16))) (call $rep (call $take_result (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 23: ranges outside linear memory
  (func $s23 (type $scenario) (local $n i32) (call $rep (call $input (i32.const 3) (i32.const 0x40fff0) (i32.const 100))) (call $rep (call $input (i32.const 3) (i32.const 0x2000) (i32.const -1))) (call $rep (call $input (i32.const 3) (i32.const 0x2000) (i32.const 0x7fffffff))) (call $rep32 (call $output (i32.const 0x40fff0) (i32.const 100))) (call $rep32 (call $set_error (i32.const 0x410000) (i32.const 1) (i32.const 0) (i32.const 0) (i64.const 0))) (call $rep32 (call $set_error (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i64.const -1))) (call $rep (call $http_do (i32.const 0x40fff0) (i32.const 100) (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 24: NOT_DECLARED: http_do, log (an i32 function: the pending result stays), then the explanation
  (func $s24 (type $scenario) (local $n i32) (call $rep (call $http_do (i32.const 24957) (i32.const 2) (i32.const 0x2000) (i32.const 64))) (call $rep32 (call $log (i32.const 0) (i32.const 25492) (i32.const 2) (i32.const 0) (i32.const 0))) (local.set $n (i32.wrap_i64 (call $take_result (i32.const 0x2000) (i32.const 4096)))) (call $repbytes (i32.const 0x2000) (local.get $n)) (call $finish))
  ;; 25: machine_update and pv_list outside Create and Delete, or without an updater
  (func $s25 (type $scenario) (local $n i32) (call $rep (call $machine_update (i32.const 24957) (i32.const 2) (i32.const 0x2000) (i32.const 64))) (call $rep (call $pv_list (i32.const 24957) (i32.const 2) (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 26: a host function called outside a call (from _initialize)
  (func $s26 (type $scenario) (local $n i32) (call $rep (global.get $init_rc)) (call $finish))
  ;; 27: machine_update refusals, then an allowed update
  (func $s27 (type $scenario) (local $n i32) (call $rep (call $machine_update (i32.const 24967) (i32.const 24) (i32.const 0x2000) (i32.const 64))) (call $rep (call $machine_update (i32.const 24999) (i32.const 37) (i32.const 0x2000) (i32.const 64))) (call $rep (call $machine_update (i32.const 25044) (i32.const 40) (i32.const 0x2000) (i32.const 64))) (call $repok (call $machine_update (i32.const 25092) (i32.const 27) (i32.const 0x2000) (i32.const 0))) (call $finish))
  ;; 28: http_do refused by the policy
  (func $s28 (type $scenario) (local $n i32) (call $rep (call $http_do (i32.const 25127) (i32.const 53) (i32.const 0x2000) (i32.const 64))) (call $rep (call $http_do (i32.const 25188) (i32.const 48) (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 29: config_var: an unreferenced Secret, an environment variable the policy does not list
  (func $s29 (type $scenario) (local $n i32) (call $rep (call $config_var (i32.const 25244) (i32.const 89) (i32.const 0x2000) (i32.const 64))) (call $rep (call $config_var (i32.const 25341) (i32.const 47) (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 30: output twice: the second replaces the first
  (func $s30 (type $scenario) (local $n i32) (drop (call $output (i32.const 24688) (i32.const 40))) (drop (call $output (i32.const 24576) (i32.const 104))) (i32.const 0))
  ;; 31: AddDefaults output of a partial spec
  (func $s31 (type $scenario) (local $n i32) (drop (call $output (i32.const 25396) (i32.const 45))) (i32.const 0))
  ;; 32: GetCloudConfig output
  (func $s32 (type $scenario) (local $n i32) (drop (call $output (i32.const 25449) (i32.const 35))) (i32.const 0))
  ;; 33: report the log_level part
  (func $s33 (type $scenario) (local $n i32) (local.set $n (i32.wrap_i64 (call $input (i32.const 6) (i32.const 0x2000) (i32.const 64)))) (call $repbytes (i32.const 0x2000) (local.get $n)) (call $finish))
  ;; 34: ERROR with retry_after_ms of a day
  (func $s34 (type $scenario) (local $n i32) (drop (call $set_error (i32.const 0) (i32.const 0) (i32.const 24933) (i32.const 4) (i64.const 86400000))) (i32.const 1))
  ;; 35: a valid labels document, OK
  (func $s35 (type $scenario) (local $n i32) (drop (call $output (i32.const 25502) (i32.const 15))) (i32.const 0))
  ;; 36: ERROR without set_error
  (func $s36 (type $scenario) (local $n i32) (i32.const 1))
  ;; 37: report input(part, buf, 0) again, after output and set_error (they leave the pending result alone)
  (func $s37 (type $scenario) (local $n i32) (call $rep (call $input (i32.const 3) (i32.const 0x2000) (i32.const 0))) (drop (call $output (i32.const 24576) (i32.const 104))) (drop (call $set_error (i32.const 0) (i32.const 0) (i32.const 25492) (i32.const 2) (i64.const 0))) (call $rep (call $take_result (i32.const 0x2000) (i32.const 64))) (call $finish))
  ;; 38: an output over the 4 MiB result limit (refused: TOO_LARGE), then OK
  (func $s38 (type $scenario) (local $n i32) (drop (call $output (i32.const 0) (i32.const 0x400001))) (i32.const 0))
  ;; 39: an Instance without status, OK
  (func $s39 (type $scenario) (local $n i32) (drop (call $output (i32.const 25534) (i32.const 21))) (i32.const 0))
)
