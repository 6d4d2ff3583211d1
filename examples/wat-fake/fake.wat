;; wat-fake: a stateful fake cloud provider in hand-written WebAssembly text,
;; written from abi/SPEC.md alone (no SDK, no libc). Its "cloud" is the
;; Machine itself: Create records the instance ID (the Machine's UID at
;; creation) in the annotation wat-fake.example/instance-id and sets
;; spec.providerID through machine_update (SPEC §6.3); Get reports the
;; instance while the annotation is there and NOT_FOUND otherwise; Delete
;; removes the annotation. Nothing lives in the instance, which the host may
;; discard between calls (§1). See README.md.
(module
  (import "wasmprov_v1" "input" (func $input (param i32 i32 i32) (result i64)))
  (import "wasmprov_v1" "take_result" (func $take_result (param i32 i32) (result i64)))
  (import "wasmprov_v1" "output" (func $output (param i32 i32) (result i32)))
  (import "wasmprov_v1" "set_error" (func $set_error (param i32 i32 i32 i32 i64) (result i32)))
  (import "wasmprov_v1" "machine_update" (func $machine_update (param i32 i32 i32 i32) (result i64)))

  ;; Page 0 holds the constants below; an input document is read to DOC =
  ;; 65536 and the documents the guest builds go after it (from $o on).
  (memory (export "memory") 2)
  (global $end (mut i32) (i32.const 0)) ;; end of the document at DOC
  (global $o (mut i32) (i32.const 0))   ;; where put appends
  (global $sl (mut i32) (i32.const 0))  ;; length of the string str found

  ;; address, length: text
  (data (i32.const 64) "metadata")                    ;; 64 8
  (data (i32.const 80) "uid")                         ;; 80 3
  (data (i32.const 96) "name")                        ;; 96 4
  (data (i32.const 112) "annotations")                ;; 112 11
  (data (i32.const 128) "wat-fake.example/instance-id") ;; 128 28
  (data (i32.const 160) "operatingSystem")            ;; 160 15
  (data (i32.const 176) "cloudProviderSpec")          ;; 176 17
  (data (i32.const 208) "{\"name\":\"")               ;; 208 9
  (data (i32.const 224) "\",\"id\":\"")               ;; 224 8
  (data (i32.const 240) "\",\"providerID\":\"wat-fake://") ;; 240 27
  (data (i32.const 272) "\",\"status\":\"running\"}") ;; 272 21
  (data (i32.const 304) "{\"annotations\":{\"wat-fake.example/instance-id\":\"") ;; 304 48
  (data (i32.const 352) "\"},\"providerID\":\"wat-fake://") ;; 352 28
  (data (i32.const 384) "\"}")                        ;; 384 2
  (data (i32.const 400) "{\"annotations\":{\"wat-fake.example/instance-id\":null}}") ;; 400 53
  (data (i32.const 464) "{\"size\":\"wat\"}")         ;; 464 14
  (data (i32.const 480) "InvalidConfiguration")       ;; 480 20
  (data (i32.const 512) "wat-fake: cannot read an input") ;; 512 30
  (data (i32.const 544) "wat-fake: providerSpec.value must be a JSON object") ;; 544 50
  (data (i32.const 608) "wat-fake: cloudProviderSpec must be a JSON object") ;; 608 49
  (data (i32.const 672) "wat-fake: operatingSystem must be a string") ;; 672 42
  (data (i32.const 720) "wat-fake: the Machine has no metadata.uid") ;; 720 41
  (data (i32.const 768) "wat-fake: no wat-fake.example/instance-id annotation: no instance") ;; 768 65
  (data (i32.const 848) "wat-fake: machine_update failed") ;; 848 31
  (data (i32.const 880) "wat-fake: output failed")    ;; 880 23

  (func (export "wasmprov_abi_version") (result i32) (i32.const 1))
  (func (export "wasmprov_capabilities") (result i64) (i64.const 0x04)) ;; machine_update

  ;; reserve grows memory so that [0, end) exists; 0 when it cannot.
  (func $reserve (param $end i32) (result i32) (local $need i32)
    (local.set $need (i32.sub (i32.shr_u (i32.add (local.get $end) (i32.const 0xffff)) (i32.const 16)) (memory.size)))
    (if (i32.le_s (local.get $need) (i32.const 0)) (then (return (i32.const 1))))
    (i32.ne (memory.grow (local.get $need)) (i32.const -1)))

  ;; fetch reads input part $part to DOC and returns its length, or -1. A
  ;; part larger than the free memory is left pending and copied with
  ;; take_result once memory has grown (§5.1).
  (func $fetch (param $part i32) (result i32) (local $n i64) (local $avail i32)
    (local.set $avail (i32.sub (i32.shl (memory.size) (i32.const 16)) (i32.const 65536)))
    (local.set $n (call $input (local.get $part) (i32.const 65536) (local.get $avail)))
    (if (i64.gt_u (local.get $n) (i64.const 0x3fffffff)) (then (return (i32.const -1)))) ;; errno, or absurd
    (global.set $end (i32.add (i32.const 65536) (i32.wrap_i64 (local.get $n))))
    ;; 64 bytes of slack: the scanner may look one byte past a value
    (if (i32.eqz (call $reserve (i32.add (global.get $end) (i32.const 64)))) (then (return (i32.const -1))))
    (if (i64.gt_u (local.get $n) (i64.extend_i32_u (local.get $avail)))
      (then (if (i64.ne (call $take_result (i32.const 65536) (i32.wrap_i64 (local.get $n))) (local.get $n))
        (then (return (i32.const -1))))))
    (global.set $o (i32.add (global.get $end) (i32.const 64)))
    (i32.wrap_i64 (local.get $n)))

  ;; put appends [$s, $s+$n) at $o.
  (func $put (param $s i32) (param $n i32) (local $i i32)
    ;; out of memory (the host's cap) is a crash, like any allocator's
    (if (i32.eqz (call $reserve (i32.add (global.get $o) (local.get $n)))) (then (unreachable)))
    (block $out (loop $l
      (br_if $out (i32.ge_u (local.get $i) (local.get $n)))
      (i32.store8 (i32.add (global.get $o) (local.get $i)) (i32.load8_u (i32.add (local.get $s) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (global.set $o (i32.add (global.get $o) (local.get $n))))

  (func $fail (param $st i32) (param $r i32) (param $rl i32) (param $m i32) (param $ml i32) (result i32)
    (drop (call $set_error (local.get $r) (local.get $rl) (local.get $m) (local.get $ml) (i64.const 0)))
    (local.get $st))
  (func $invalid (param $m i32) (param $ml i32) (result i32) ;; TERMINAL InvalidConfiguration
    (call $fail (i32.const 2) (i32.const 480) (i32.const 20) (local.get $m) (local.get $ml)))

  ;; ---- a JSON scanner. The host's documents are valid JSON (§6.1), so it
  ;; only finds things; every loop still stops at $end.
  (func $ws (param $p i32) (result i32) (local $c i32)
    (block $out (loop $l
      (br_if $out (i32.ge_u (local.get $p) (global.get $end)))
      (local.set $c (i32.load8_u (local.get $p)))
      (br_if $out (i32.and (i32.ne (local.get $c) (i32.const 32))
        (i32.and (i32.ne (local.get $c) (i32.const 9)) (i32.and (i32.ne (local.get $c) (i32.const 10)) (i32.ne (local.get $c) (i32.const 13))))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $l)))
    (local.get $p))

  ;; skip_str returns the address past the string that starts (with ") at $p.
  (func $skip_str (param $p i32) (result i32) (local $c i32)
    (block $out (loop $l
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $out (i32.ge_u (local.get $p) (global.get $end)))
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 92)) (then (local.set $p (i32.add (local.get $p) (i32.const 1))) (br $l))) ;; \x
      (br_if $l (i32.ne (local.get $c) (i32.const 34)))))
    (i32.add (local.get $p) (i32.const 1)))

  ;; skip returns the address past the value at $p. ('[' | 32) == '{' and
  ;; (']' | 32) == '}', so one test covers both kinds of container.
  (func $skip (param $p i32) (result i32) (local $c i32) (local $d i32)
    (local.set $p (call $ws (local.get $p)))
    (local.set $c (i32.load8_u (local.get $p)))
    (if (i32.eq (local.get $c) (i32.const 34)) (then (return (call $skip_str (local.get $p)))))
    (if (i32.eq (i32.or (local.get $c) (i32.const 32)) (i32.const 123))
      (then
        (loop $l
          (local.set $c (i32.load8_u (local.get $p)))
          (if (i32.eq (local.get $c) (i32.const 34))
            (then (local.set $p (call $skip_str (local.get $p))))
            (else
              (local.set $c (i32.or (local.get $c) (i32.const 32)))
              (if (i32.eq (local.get $c) (i32.const 123)) (then (local.set $d (i32.add (local.get $d) (i32.const 1)))))
              (if (i32.eq (local.get $c) (i32.const 125)) (then (local.set $d (i32.sub (local.get $d) (i32.const 1)))))
              (local.set $p (i32.add (local.get $p) (i32.const 1)))))
          (br_if $l (i32.and (i32.ne (local.get $d) (i32.const 0)) (i32.lt_u (local.get $p) (global.get $end)))))
        (return (local.get $p))))
    (block $out (loop $l ;; a number or a literal: up to , ] } or whitespace
      (br_if $out (i32.ge_u (local.get $p) (global.get $end)))
      (local.set $c (i32.load8_u (local.get $p)))
      (br_if $out (i32.le_u (local.get $c) (i32.const 32)))
      (br_if $out (i32.eq (local.get $c) (i32.const 44)))
      (br_if $out (i32.eq (i32.or (local.get $c) (i32.const 32)) (i32.const 125)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $l)))
    (local.get $p))

  (func $eq (param $a i32) (param $al i32) (param $b i32) (param $bl i32) (result i32)
    (if (i32.ne (local.get $al) (local.get $bl)) (then (return (i32.const 0))))
    (block $out (loop $l
      (br_if $out (i32.eqz (local.get $al)))
      (if (i32.ne (i32.load8_u (local.get $a)) (i32.load8_u (local.get $b))) (then (return (i32.const 0))))
      (local.set $a (i32.add (local.get $a) (i32.const 1)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (local.set $al (i32.sub (local.get $al) (i32.const 1)))
      (br $l)))
    (i32.const 1))

  ;; member returns the address of member $k of the object at $p, or 0 if $p
  ;; is 0, not an object, or has no such key (keys compared as written).
  (func $member (param $p i32) (param $k i32) (param $kl i32) (result i32) (local $s i32) (local $q i32)
    (if (i32.eqz (local.get $p)) (then (return (i32.const 0))))
    (local.set $p (call $ws (local.get $p)))
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 123)) (then (return (i32.const 0))))
    (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1))))
    (loop $l
      (if (i32.or (i32.ge_u (local.get $p) (global.get $end)) (i32.ne (i32.load8_u (local.get $p)) (i32.const 34)))
        (then (return (i32.const 0))))
      (local.set $s (i32.add (local.get $p) (i32.const 1)))
      (local.set $q (call $skip_str (local.get $p)))
      (local.set $p (call $ws (i32.add (call $ws (local.get $q)) (i32.const 1)))) ;; past ':'
      (if (call $eq (local.get $s) (i32.sub (i32.sub (local.get $q) (i32.const 1)) (local.get $s)) (local.get $k) (local.get $kl))
        (then (return (local.get $p))))
      (local.set $p (call $ws (call $skip (local.get $p))))
      (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 44)) (then (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1))))))
      (br $l))
    (i32.const 0))

  ;; str returns the inside of the string at $v (still escaped, so it can be
  ;; copied into another JSON string) and sets $sl; 0 if $v is no string.
  (func $str (param $v i32) (result i32)
    (global.set $sl (i32.const 0))
    (if (i32.or (i32.eqz (local.get $v)) (i32.ne (i32.load8_u (local.get $v)) (i32.const 34))) (then (return (i32.const 0))))
    (global.set $sl (i32.sub (i32.sub (call $skip_str (local.get $v)) (local.get $v)) (i32.const 2)))
    (i32.add (local.get $v) (i32.const 1)))

  ;; ---- the provider
  ;; check_config accepts a provider spec that is an object whose
  ;; cloudProviderSpec is an object and whose operatingSystem, if set, is a
  ;; string (or null); else TERMINAL InvalidConfiguration (§4.2).
  (func $check_config (result i32) (local $v i32)
    (if (i32.lt_s (call $fetch (i32.const 3)) (i32.const 0))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 512) (i32.const 30)))))
    (if (i32.ne (i32.load8_u (call $ws (i32.const 65536))) (i32.const 123))
      (then (return (call $invalid (i32.const 544) (i32.const 50)))))
    (local.set $v (i32.load8_u (call $member (i32.const 65536) (i32.const 160) (i32.const 15)))) ;; 0: absent
    (if (i32.and (i32.ne (local.get $v) (i32.const 0)) (i32.and (i32.ne (local.get $v) (i32.const 34)) (i32.ne (local.get $v) (i32.const 110))))
      (then (return (call $invalid (i32.const 672) (i32.const 42)))))
    (if (i32.ne (i32.load8_u (call $member (i32.const 65536) (i32.const 176) (i32.const 17))) (i32.const 123))
      (then (return (call $invalid (i32.const 608) (i32.const 49)))))
    (i32.const 0))

  ;; machine reads the Machine and returns its metadata (0 if none), or -1.
  (func $machine (result i32)
    (if (i32.lt_s (call $fetch (i32.const 1)) (i32.const 0)) (then (return (i32.const -1))))
    (call $member (i32.const 65536) (i32.const 64) (i32.const 8)))

  ;; recorded returns the instance ID recorded on the Machine (and sets $sl).
  (func $recorded (param $meta i32) (result i32)
    (call $str (call $member (call $member (local.get $meta) (i32.const 112) (i32.const 11)) (i32.const 128) (i32.const 28))))

  ;; instance outputs the Instance (§8.1) of the Machine with ID [$id, +$idl).
  (func $instance (param $meta i32) (param $id i32) (param $idl i32) (result i32) (local $start i32) (local $n i32)
    (local.set $start (global.get $o))
    (local.set $n (call $str (call $member (local.get $meta) (i32.const 96) (i32.const 4))))
    (call $put (i32.const 208) (i32.const 9))
    (call $put (local.get $n) (global.get $sl))
    (call $put (i32.const 224) (i32.const 8))
    (call $put (local.get $id) (local.get $idl))
    (call $put (i32.const 240) (i32.const 27))
    (call $put (local.get $id) (local.get $idl))
    (call $put (i32.const 272) (i32.const 21))
    (if (call $output (local.get $start) (i32.sub (global.get $o) (local.get $start)))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 880) (i32.const 23)))))
    (i32.const 0))

  ;; update sends the machine_update request [$req, +$n) and discards the
  ;; updated Machine (limit 0 leaves it pending). On an errno, the host's
  ;; explanation is pending (§5.1) and becomes the error message.
  (func $update (param $req i32) (param $n i32) (result i32) (local $r i64)
    (if (i64.ge_s (call $machine_update (local.get $req) (local.get $n) (i32.const 0) (i32.const 0)) (i64.const 0))
      (then (return (i32.const 0))))
    (drop (call $reserve (i32.add (global.get $end) (i32.const 4096)))) ;; else take_result fails
    (local.set $r (call $take_result (global.get $end) (i32.const 4096)))
    (if (i64.gt_u (local.get $r) (i64.const 4096)) ;; errno, or longer than the room
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 848) (i32.const 31)))))
    (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (global.get $end) (i32.wrap_i64 (local.get $r))))

  (func (export "wasmprov_add_defaults") (result i32) (i32.const 0)) ;; no output: unchanged
  (func (export "wasmprov_validate") (result i32) (call $check_config))
  (func (export "wasmprov_get_cloud_config") (result i32) (i32.const 0)) ;; no output: empty
  (func (export "wasmprov_migrate_uid") (result i32) (i32.const 0)) ;; the ID is not the UID
  (func (export "wasmprov_machine_metrics_labels") (result i32)
    (if (call $output (i32.const 464) (i32.const 14))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 880) (i32.const 23)))))
    (i32.const 0))

  (func (export "wasmprov_get") (result i32) (local $meta i32) (local $id i32)
    (local.set $meta (call $machine))
    (if (i32.lt_s (local.get $meta) (i32.const 0))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 512) (i32.const 30)))))
    (local.set $id (call $recorded (local.get $meta)))
    (if (i32.eqz (local.get $id))
      (then (return (call $fail (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 768) (i32.const 65)))))
    (call $instance (local.get $meta) (local.get $id) (global.get $sl)))

  ;; Create returns the recorded instance if there is one (a second Create
  ;; makes nothing new); else it records the Machine's UID as the ID.
  (func (export "wasmprov_create") (result i32) (local $st i32) (local $meta i32) (local $id i32) (local $idl i32) (local $req i32)
    (local.set $st (call $check_config))
    (if (local.get $st) (then (return (local.get $st))))
    (local.set $meta (call $machine))
    (if (i32.lt_s (local.get $meta) (i32.const 0))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 512) (i32.const 30)))))
    (local.set $id (call $recorded (local.get $meta)))
    (if (local.get $id) (then (return (call $instance (local.get $meta) (local.get $id) (global.get $sl)))))
    (local.set $id (call $str (call $member (local.get $meta) (i32.const 80) (i32.const 3))))
    (local.set $idl (global.get $sl))
    (if (i32.eqz (local.get $idl))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 720) (i32.const 41)))))
    (local.set $req (global.get $o))
    (call $put (i32.const 304) (i32.const 48))
    (call $put (local.get $id) (local.get $idl))
    (call $put (i32.const 352) (i32.const 28))
    (call $put (local.get $id) (local.get $idl))
    (call $put (i32.const 384) (i32.const 2))
    (local.set $st (call $update (local.get $req) (i32.sub (global.get $o) (local.get $req))))
    (if (local.get $st) (then (return (local.get $st))))
    (global.set $o (local.get $req))
    (call $instance (local.get $meta) (local.get $id) (local.get $idl)))

  ;; Delete forgets the instance; a Machine with none is already deleted.
  (func (export "wasmprov_delete") (result i32) (local $meta i32)
    (local.set $meta (call $machine))
    (if (i32.lt_s (local.get $meta) (i32.const 0))
      (then (return (call $fail (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 512) (i32.const 30)))))
    (if (i32.eqz (call $recorded (local.get $meta))) (then (return (i32.const 0))))
    (call $update (i32.const 400) (i32.const 53)))
)
