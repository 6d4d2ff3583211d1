/*
 * c-fake: machine-controller's fake cloud provider as a wasmprov guest in
 * C (clang + wasi-libc), written from abi/SPEC.md alone — it shares no code
 * with the Go SDK. It behaves like examples/fake:
 *
 *   - providerSpec.value must be a JSON object whose cloudProviderSpec is an
 *     object; anything else is a TERMINAL InvalidConfiguration error.
 *   - Validate succeeds only when cloudProviderSpec.passValidation is true
 *     (otherwise a retriable ERROR, as upstream's fake).
 *   - Unlike upstream's fake, it remembers what it created, on the Machine
 *     itself (the wasm instance may be discarded between calls, §1): Create
 *     records the Machine's UID as the instance ID in the annotation
 *     c-fake.example/instance-id and sets spec.providerID to "fake://ID"
 *     through machine_update (§6.3); Get reports the instance, named after
 *     the Machine, while the annotation is there and NOT_FOUND otherwise; a
 *     second Create returns the recorded instance; Delete removes the
 *     annotation. So it passes the stateful conformance profile (the
 *     default) as well as the stateless one.
 *   - MachineMetricsLabels reports {"size": "fake"}; everything else
 *     succeeds.
 *
 * Build (see build.sh):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -o c-fake.wasm fake.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- ABI v1 (SPEC.md §6) ------------------------------------------------ */

#define IMPORT(name) __attribute__((import_module("wasmprov_v1"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

IMPORT("input") int64_t host_input(int32_t part, void *buf, int32_t limit);
IMPORT("take_result") int64_t host_take_result(void *buf, int32_t limit);
IMPORT("output") int32_t host_output(const void *ptr, int32_t len);
IMPORT("set_error") int32_t host_set_error(const char *reason, int32_t reason_len,
                                           const char *msg, int32_t msg_len, int64_t retry_after_ms);
IMPORT("machine_update") int64_t host_machine_update(const void *req, int32_t req_len, void *buf, int32_t limit);
IMPORT("log") int32_t host_log(int32_t level, const char *msg, int32_t msg_len,
                               const char *attrs, int32_t attrs_len);

enum { STATUS_OK = 0, STATUS_ERROR = 1, STATUS_TERMINAL = 2, STATUS_NOT_FOUND = 3 };
enum { INPUT_MACHINE = 1, INPUT_SPEC = 2, INPUT_PROVIDER_SPEC = 3 };
enum { CAP_LOG = 0x01, CAP_MACHINE_UPDATE = 0x04 };
enum { LEVEL_DEBUG = -4 };

EXPORT("wasmprov_abi_version") int32_t abi_version(void) { return 1; }
EXPORT("wasmprov_capabilities") int64_t capabilities(void) { return CAP_LOG | CAP_MACHINE_UPDATE; }

/* ---- bytes in and out (SPEC.md §5) -------------------------------------- */

static char scratch[16384];

/* A document pulled from the host: either in scratch or malloc'ed. */
typedef struct {
  const char *p;
  int64_t n;
  char *heap;
} doc;

static void doc_free(doc *d) { free(d->heap); }

/* fetch pulls an input part. Results larger than scratch wait as the
 * pending result and are copied with take_result (§5.1). */
static int fetch(int32_t part, doc *d) {
  d->heap = NULL;
  int64_t n = host_input(part, scratch, sizeof scratch);
  if (n < 0) return -1;
  if (n <= (int64_t)sizeof scratch) {
    d->p = scratch, d->n = n;
    return 0;
  }
  d->heap = malloc((size_t)n);
  if (!d->heap || host_take_result(d->heap, (int32_t)n) != n) {
    free(d->heap);
    d->heap = NULL;
    return -1;
  }
  d->p = d->heap, d->n = n;
  return 0;
}

static int32_t fail(int32_t status, const char *reason, const char *msg) {
  host_set_error(reason, (int32_t)strlen(reason), msg, (int32_t)strlen(msg), 0);
  return status;
}

static int32_t invalid(const char *msg) { return fail(STATUS_TERMINAL, "InvalidConfiguration", msg); }

static void debug(const char *msg) { host_log(LEVEL_DEBUG, msg, (int32_t)strlen(msg), 0, 0); }

/* ---- a minimal JSON reader ---------------------------------------------
 * Enough to validate a document and find object members without
 * allocating. Every function returns NULL on malformed input, and nesting is
 * bounded so hostile input cannot exhaust the stack. */

#define MAX_DEPTH 256

static const char *ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static const char *skip_string(const char *p, const char *e) {
  if (p >= e || *p != '"') return NULL;
  for (p++; p < e; p++) {
    if (*p == '\\') {
      if (++p >= e) return NULL;
    } else if (*p == '"') {
      return p + 1;
    } else if ((unsigned char)*p < 0x20) {
      return NULL;
    }
  }
  return NULL;
}

static const char *skip_value(const char *p, const char *e, int depth);

static const char *skip_container(const char *p, const char *e, int depth, char close, int object) {
  if (depth > MAX_DEPTH) return NULL;
  p = ws(p + 1, e);
  if (p < e && *p == close) return p + 1;
  for (;;) {
    if (object) {
      p = skip_string(ws(p, e), e);
      if (!p) return NULL;
      p = ws(p, e);
      if (p >= e || *p != ':') return NULL;
      p++;
    }
    p = skip_value(p, e, depth + 1);
    if (!p) return NULL;
    p = ws(p, e);
    if (p < e && *p == ',') {
      p++;
      continue;
    }
    if (p < e && *p == close) return p + 1;
    return NULL;
  }
}

static const char *skip_literal(const char *p, const char *e, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

static const char *skip_value(const char *p, const char *e, int depth) {
  p = ws(p, e);
  if (p >= e) return NULL;
  switch (*p) {
  case '{': return skip_container(p, e, depth, '}', 1);
  case '[': return skip_container(p, e, depth, ']', 0);
  case '"': return skip_string(p, e);
  case 't': return skip_literal(p, e, "true");
  case 'f': return skip_literal(p, e, "false");
  case 'n': return skip_literal(p, e, "null");
  }
  if (*p == '-' || (*p >= '0' && *p <= '9')) {
    const char *s = p;
    while (p < e && (*p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9'))) p++;
    return p > s ? p : NULL;
  }
  return NULL;
}

/* member finds key in the object at p and returns its value (after
 * whitespace), or NULL when p is not an object or has no such key. Keys
 * with escapes never match, which is fine for the ASCII keys used here. */
static const char *member(const char *p, const char *e, const char *key) {
  p = ws(p, e);
  if (p >= e || *p != '{') return NULL;
  size_t klen = strlen(key);
  p = ws(p + 1, e);
  while (p < e && *p == '"') {
    const char *k = p + 1, *kend = skip_string(p, e);
    if (!kend) return NULL;
    p = ws(kend, e);
    if (p >= e || *p != ':') return NULL;
    const char *v = ws(p + 1, e);
    if ((size_t)(kend - 1 - k) == klen && memcmp(k, key, klen) == 0) return v;
    p = skip_value(v, e, 1);
    if (!p) return NULL;
    p = ws(p, e);
    if (p < e && *p == ',') p = ws(p + 1, e);
  }
  return NULL;
}

static int is(const char *v, const char *e, char c) { return v && ws(v, e) < e && *ws(v, e) == c; }

/* ---- the provider -------------------------------------------------------- */

/* check_config validates providerSpec.value like the Go SDK's DecodeConfig
 * plus the fake's own spec; it returns STATUS_OK, or a status with the error
 * set. *pass reports passValidation. */
static int32_t check_config(int *pass) {
  doc d;
  if (fetch(INPUT_PROVIDER_SPEC, &d) != 0) return fail(STATUS_ERROR, "", "cannot read the provider spec");
  const char *p = d.p, *e = d.p + d.n;
  int32_t st = STATUS_OK;
  const char *end = skip_value(p, e, 0);
  const char *cps, *os, *pv;
  if (!end || ws(end, e) != e) {
    st = invalid("machine.spec.providerSpec.value is not valid JSON");
  } else if (!is(p, e, '{')) {
    st = invalid("machine.spec.providerSpec.value is empty or not an object");
  } else if ((os = member(p, e, "operatingSystem")) && !is(os, e, '"')) {
    st = invalid("operatingSystem must be a string");
  } else if (!(cps = member(p, e, "cloudProviderSpec")) || !is(cps, e, '{')) {
    st = invalid("cloudProviderSpec must be an object");
  } else if ((pv = member(cps, e, "passValidation")) && !skip_literal(pv, e, "true") && !skip_literal(pv, e, "false") &&
             !skip_literal(pv, e, "null")) {
    st = invalid("cloudProviderSpec.passValidation must be a bool");
  } else {
    *pass = pv && skip_literal(pv, e, "true") != NULL;
  }
  doc_free(&d);
  return st;
}

EXPORT("wasmprov_add_defaults") int32_t add_defaults(void) {
  return STATUS_OK; /* no output: the spec is unchanged (§4.1) */
}

EXPORT("wasmprov_validate") int32_t validate(void) {
  int pass = 0;
  int32_t st = check_config(&pass);
  if (st != STATUS_OK) return st;
  if (!pass) {
    debug("failing validation as requested");
    return fail(STATUS_ERROR, "", "failing validation as requested");
  }
  debug("succeeding validation as requested");
  return STATUS_OK;
}

EXPORT("wasmprov_get_cloud_config") int32_t get_cloud_config(void) {
  static const char out[] = "{\"config\":\"\",\"name\":\"\"}";
  return host_output(out, sizeof out - 1) == 0 ? STATUS_OK : fail(STATUS_ERROR, "", "output failed");
}

/* append copies n bytes to the output buffer b (capacity cap) at *len. */
static int append(char *b, size_t cap, size_t *len, const char *s, size_t n) {
  if (*len + n > cap) return -1;
  memcpy(b + *len, s, n);
  *len += n;
  return 0;
}

/* string_member returns the inside of a string member (still JSON-escaped,
 * so it can be copied into another JSON string as is), or "". */
static const char *string_member(const char *obj, const char *e, const char *key, size_t *n) {
  const char *v = obj ? member(obj, e, key) : NULL;
  const char *end = v && is(v, e, '"') ? skip_string(v, e) : NULL;
  if (!end) {
    *n = 0;
    return "";
  }
  *n = (size_t)(end - v - 2);
  return v + 1;
}

#define ID_ANNOTATION "c-fake.example/instance-id"

/* output_instance outputs the Instance (§8.1) named name with ID id (both
 * still JSON-escaped). */
static int32_t output_instance(const char *name, size_t nlen, const char *id, size_t idlen) {
  size_t cap = nlen + 2 * idlen + 128, len = 0;
  char *b = malloc(cap);
  int32_t st = STATUS_OK;
  if (!b) {
    st = fail(STATUS_ERROR, "", "out of memory");
  } else if (append(b, cap, &len, "{\"name\":\"", 9) || append(b, cap, &len, name, nlen) ||
             append(b, cap, &len, "\",\"id\":\"", 8) || append(b, cap, &len, id, idlen) ||
             append(b, cap, &len, "\",\"providerID\":\"fake://", 23) || append(b, cap, &len, id, idlen) ||
             append(b, cap, &len, "\",\"status\":\"running\"}", 21)) {
    st = fail(STATUS_ERROR, "", "instance document too large");
  } else if (host_output(b, (int32_t)len) != 0) {
    st = fail(STATUS_ERROR, "", "output failed");
  }
  free(b);
  return st;
}

/* update sends a machine_update request. The updated Machine it returns is
 * left pending (limit 0) and not needed; on an errno the host's explanation
 * is pending instead (§5.1) and becomes the error message. */
static int32_t update(const char *req, size_t n) {
  if (host_machine_update(req, (int32_t)n, 0, 0) >= 0) return STATUS_OK;
  int64_t m = host_take_result(scratch, sizeof scratch - 1);
  if (m < 0 || m >= (int64_t)sizeof scratch) return fail(STATUS_ERROR, "", "machine_update failed");
  scratch[m] = 0;
  return fail(STATUS_ERROR, "", scratch);
}

/* machine is one call's view of the Machine: its name and the instance ID
 * recorded on it (idlen 0: none). */
typedef struct {
  doc d;
  const char *meta, *name, *id;
  size_t nlen, idlen;
} machine;

static int read_machine(machine *m) {
  if (fetch(INPUT_MACHINE, &m->d) != 0) return -1;
  const char *e = m->d.p + m->d.n;
  m->meta = member(m->d.p, e, "metadata");
  m->name = string_member(m->meta, e, "name", &m->nlen);
  const char *ann = m->meta ? member(m->meta, e, "annotations") : NULL;
  m->id = string_member(ann, e, ID_ANNOTATION, &m->idlen);
  return 0;
}

EXPORT("wasmprov_get") int32_t get(void) {
  machine m;
  if (read_machine(&m) != 0) return fail(STATUS_ERROR, "", "cannot read the machine");
  int32_t st = m.idlen == 0 ? fail(STATUS_NOT_FOUND, "", "no " ID_ANNOTATION " annotation: no instance")
                            : output_instance(m.name, m.nlen, m.id, m.idlen);
  doc_free(&m.d);
  return st;
}

/* Create returns the recorded instance if there is one, so a second Create
 * makes nothing new (§4.2); else it records the Machine's UID as the ID. */
EXPORT("wasmprov_create") int32_t create(void) {
  machine m;
  if (read_machine(&m) != 0) return fail(STATUS_ERROR, "", "cannot read the machine");
  const char *e = m.d.p + m.d.n;
  int32_t st;
  size_t ulen;
  const char *uid = string_member(m.meta, e, "uid", &ulen);
  if (m.idlen > 0) {
    st = output_instance(m.name, m.nlen, m.id, m.idlen);
  } else if (ulen == 0) {
    st = fail(STATUS_ERROR, "", "the Machine has no metadata.uid");
  } else {
    static const char a[] = "{\"annotations\":{\"" ID_ANNOTATION "\":\"", b[] = "\"},\"providerID\":\"fake://", c[] = "\"}";
    size_t cap = 2 * ulen + sizeof a + sizeof b + sizeof c, len = 0;
    char *req = malloc(cap);
    if (!req || append(req, cap, &len, a, sizeof a - 1) || append(req, cap, &len, uid, ulen) ||
        append(req, cap, &len, b, sizeof b - 1) || append(req, cap, &len, uid, ulen) || append(req, cap, &len, c, sizeof c - 1)) {
      st = fail(STATUS_ERROR, "", "out of memory");
    } else if ((st = update(req, len)) == STATUS_OK) {
      st = output_instance(m.name, m.nlen, uid, ulen);
    }
    free(req);
  }
  doc_free(&m.d);
  return st;
}

/* Delete forgets the instance; a Machine without one is already deleted. */
EXPORT("wasmprov_delete") int32_t delete_(void) {
  static const char req[] = "{\"annotations\":{\"" ID_ANNOTATION "\":null}}";
  machine m;
  if (read_machine(&m) != 0) return fail(STATUS_ERROR, "", "cannot read the machine");
  int32_t st = m.idlen == 0 ? STATUS_OK : update(req, sizeof req - 1);
  doc_free(&m.d);
  return st;
}

EXPORT("wasmprov_machine_metrics_labels") int32_t machine_metrics_labels(void) {
  static const char out[] = "{\"size\":\"fake\"}";
  return host_output(out, sizeof out - 1) == 0 ? STATUS_OK : fail(STATUS_ERROR, "", "output failed");
}

EXPORT("wasmprov_migrate_uid") int32_t migrate_uid(void) { return STATUS_OK; }
