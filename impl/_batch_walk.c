/*
 * impl._batch_walk: the plain-batch loop of LogSegment recovery (spec §4.6 step 3), compiled.
 *
 * impl/segment.py's LogSegment._rebuild walks a segment batch by batch.  Most batches of a real
 * segment are "plain": magic 2, at least 61 bytes, whole, CRC-32C right (§1.2, §1.9, §1.10), with
 * offsets representable relative to the segment's base (§5.5), an index entry (if one is due) that
 * OffsetIndex.append and TimeIndex.maybe_append would accept, no control bit, and a leader epoch
 * the cache already has (§4.14).  walk() runs those batches exactly as the Python loop does and
 * stops, without touching its state, at the first batch that is anything else; the Python loop
 * then takes that one batch through its general path (BatchScan's rules, Kafka's errors, marker
 * reads, epoch assignment) and calls walk() again.  The Python loop alone is the fallback when
 * this module is absent and the oracle it is tested against (tests/test_batch_walk.py).
 *
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) uses SSE 4.2's crc32 instruction when the
 * CPU has it, three independent streams at a time so that the instruction's latency is hidden,
 * the streams joined by a precomputed "append n zero bytes" operator; a table-driven loop
 * otherwise.  No allocation per batch except the Python objects the caller keeps (index entries
 * and the positions of batches with a producer id); the GIL is released while a batch of 32 KiB or
 * more is checksummed, as the crc32c package does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define KLC_X86 1
#endif

#define POLY 0x82F63B78u
#define LONG_BLOCK 4096   /* bytes per stream in a long round of three */
#define SHORT_BLOCK 256   /* bytes per stream in a short round */
#define GIL_RELEASE_BYTES 32768
#define V2_HEADER_SIZE 61
#define FIELDS_SIZE 51    /* base offset .. producer id: what the loop reads of a header */

static uint32_t table[8][256];       /* slicing-by-8 for the software path */
static uint32_t shift_long[4][256];  /* register after LONG_BLOCK zero bytes, by byte of the register */
static uint32_t shift_short[4][256];
static int have_sse42;

/* ---- CRC-32C --------------------------------------------------------------------------------- */

static void make_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        }
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int k = 1; k < 8; k++) {
            table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
        }
    }
}

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only: checked in module init */
    return v;
}

static uint32_t crc_sw(uint32_t reg, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        reg = (reg >> 8) ^ table[0][(reg ^ *p++) & 0xff];
        n--;
    }
    while (n >= 8) {
        uint64_t v = load64(p) ^ reg;
        reg = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^ table[5][(v >> 16) & 0xff] ^
              table[4][(v >> 24) & 0xff] ^ table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
              table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) {
        reg = (reg >> 8) ^ table[0][(reg ^ *p++) & 0xff];
    }
    return reg;
}

/* The register after n zero bytes fed from reg: linear in reg, so a 4 x 256 table applies it. */
static uint32_t zeros_slow(uint32_t reg, size_t n) {
    while (n--) {
        reg = (reg >> 8) ^ table[0][reg & 0xff];
    }
    return reg;
}

static void make_shift(uint32_t shift[4][256], size_t n) {
    uint32_t bit[32];
    for (int i = 0; i < 32; i++) {
        bit[i] = zeros_slow(1u << i, n);
    }
    for (int k = 0; k < 4; k++) {
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t out = 0;
            for (int b = 0; b < 8; b++) {
                if (v & (1u << b)) {
                    out ^= bit[8 * k + b];
                }
            }
            shift[k][v] = out;
        }
    }
}

static inline uint32_t shift_by(uint32_t shift[4][256], uint32_t reg) {
    return shift[0][reg & 0xff] ^ shift[1][(reg >> 8) & 0xff] ^ shift[2][(reg >> 16) & 0xff] ^ shift[3][reg >> 24];
}

#ifdef KLC_X86
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t reg, const unsigned char *p, size_t n) {
    uint64_t r0 = reg;
    while (n && ((uintptr_t)p & 7)) {
        r0 = _mm_crc32_u8((uint32_t)r0, *p++);
        n--;
    }
    /* three streams of `block` bytes each: their registers joined as (r0 << block) ^ r1, then ^ r2 */
    while (n >= 3 * LONG_BLOCK) {
        uint64_t r1 = 0, r2 = 0;
        const unsigned char *end = p + LONG_BLOCK;
        do {
            r0 = _mm_crc32_u64(r0, load64(p));
            r1 = _mm_crc32_u64(r1, load64(p + LONG_BLOCK));
            r2 = _mm_crc32_u64(r2, load64(p + 2 * LONG_BLOCK));
            p += 8;
        } while (p < end);
        r0 = shift_by(shift_long, (uint32_t)r0) ^ (uint32_t)r1;
        r0 = shift_by(shift_long, (uint32_t)r0) ^ (uint32_t)r2;
        p += 2 * LONG_BLOCK;
        n -= 3 * LONG_BLOCK;
    }
    while (n >= 3 * SHORT_BLOCK) {
        uint64_t r1 = 0, r2 = 0;
        const unsigned char *end = p + SHORT_BLOCK;
        do {
            r0 = _mm_crc32_u64(r0, load64(p));
            r1 = _mm_crc32_u64(r1, load64(p + SHORT_BLOCK));
            r2 = _mm_crc32_u64(r2, load64(p + 2 * SHORT_BLOCK));
            p += 8;
        } while (p < end);
        r0 = shift_by(shift_short, (uint32_t)r0) ^ (uint32_t)r1;
        r0 = shift_by(shift_short, (uint32_t)r0) ^ (uint32_t)r2;
        p += 2 * SHORT_BLOCK;
        n -= 3 * SHORT_BLOCK;
    }
    while (n >= 8) {
        r0 = _mm_crc32_u64(r0, load64(p));
        p += 8;
        n -= 8;
    }
    while (n--) {
        r0 = _mm_crc32_u8((uint32_t)r0, *p++);
    }
    return (uint32_t)r0;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t n) {
#ifdef KLC_X86
    if (have_sse42) {
        return crc_hw(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
    }
#endif
    return crc_sw(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

/* ---- big-endian fields ----------------------------------------------------------------------- */

static inline int64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return (int64_t)v;
}

static inline int32_t be32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static inline int16_t be16(const unsigned char *p) {
    return (int16_t)((uint16_t)p[0] << 8 | p[1]);
}

/* ---- the walk -------------------------------------------------------------------------------- */

static int append_pair(PyObject *list, long long a, long long b) {
    PyObject *x = PyLong_FromLongLong(a), *y = PyLong_FromLongLong(b);
    int rc = (x == NULL || y == NULL) ? -1 : PyList_Append(list, x) | PyList_Append(list, y);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return rc;
}

PyDoc_STRVAR(walk_doc,
"walk(buf, pos, state, off_buf, time_buf, producer_positions) -> pos\n\n"
"Run LogSegment._rebuild's loop over the plain batches of buf from pos; return the position of the\n"
"first batch it leaves to the Python loop (or len(buf)).  state is a list of the loop's integers,\n"
"[base, interval, last_index_entry, best_ts, best_off, n_off, last_off, max_off, n_time, last_ts,\n"
"last_ts_off, max_time, epoch_floor, map_end, has_map_end], updated in place; index entries are\n"
"appended flattened to off_buf and time_buf, the position of each batch with a producer id to the\n"
"bytearray producer_positions (8 bytes, native order).");

enum { S_BASE, S_INTERVAL, S_LAST_ENTRY, S_BEST_TS, S_BEST_OFF, S_N_OFF, S_LAST_OFF, S_MAX_OFF, S_N_TIME,
       S_LAST_TS, S_LAST_TS_OFF, S_MAX_TIME, S_EPOCH_FLOOR, S_MAP_END, S_HAS_MAP_END, S_COUNT };

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *bufobj, *state, *off_buf, *time_buf, *producers;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "OnO!O!O!O!", &bufobj, &pos, &PyList_Type, &state, &PyList_Type, &off_buf,
                          &PyList_Type, &time_buf, &PyByteArray_Type, &producers)) {
        return NULL;
    }
    if (PyList_GET_SIZE(state) != S_COUNT) {
        PyErr_SetString(PyExc_ValueError, "walk: state must hold 15 integers");
        return NULL;
    }
    long long s[S_COUNT];
    for (int i = 0; i < S_COUNT; i++) {
        s[i] = PyLong_AsLongLong(PyList_GET_ITEM(state, i));
        if (s[i] == -1 && PyErr_Occurred()) {
            return NULL; /* a value beyond int64: the caller's Python loop handles such a segment */
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *buf = view.buf;
    const Py_ssize_t end = view.len;
    const long long base = s[S_BASE], interval = s[S_INTERVAL], max_off = s[S_MAX_OFF], max_time = s[S_MAX_TIME];
    const long long epoch_floor = s[S_EPOCH_FLOOR];
    long long last_entry = s[S_LAST_ENTRY], best_ts = s[S_BEST_TS], best_off = s[S_BEST_OFF];
    long long n_off = s[S_N_OFF], last_off = s[S_LAST_OFF], n_time = s[S_N_TIME], last_ts = s[S_LAST_TS];
    long long last_ts_off = s[S_LAST_TS_OFF], map_end = s[S_MAP_END], has_map_end = s[S_HAS_MAP_END];
    int failed = 0;

    while (pos >= 0 && pos <= end - FIELDS_SIZE) {
        const unsigned char *p = buf + pos;
        int64_t first = be64(p);
        Py_ssize_t size = (Py_ssize_t)be32(p + 8) + 12;
        int32_t epoch = be32(p + 12);
        signed char magic = (signed char)p[16];
        /* §1.10 rules 4-6 and the v2 minimum: anything else goes to BatchScan's rules */
        if (magic < 2 || size < V2_HEADER_SIZE || size > end - pos) {
            break;
        }
        uint32_t stored = (uint32_t)be32(p + 17);
        uint32_t computed;
        if (size >= GIL_RELEASE_BYTES) {
            Py_BEGIN_ALLOW_THREADS
            computed = crc32c(p + 21, (size_t)(size - 21));
            Py_END_ALLOW_THREADS
        } else {
            computed = crc32c(p + 21, (size_t)(size - 21));
        }
        if (computed != stored) {
            break; /* §1.9: a CorruptRecordException, raised by the Python path */
        }
        int16_t attributes = be16(p + 21);
        int32_t delta = be32(p + 23);
        int64_t max_ts = be64(p + 35);
        int64_t producer = be64(p + 43);
        long long last, rel;
        if (__builtin_add_overflow((long long)first, (long long)delta, &last) || __builtin_sub_overflow(last, base, &rel) ||
            rel < 0 || rel > INT32_MAX) {
            break; /* beyond int64, or not relative to the base (§5.5): the Python loop raises the overflow */
        }
        if ((producer >= 0 && (attributes & 0x20)) || epoch > epoch_floor) {
            break; /* a control batch's marker is read through storage; a new epoch is assigned */
        }
        long long nbest_ts = best_ts, nbest_off = best_off;
        if (max_ts > nbest_ts) {
            nbest_ts = max_ts;
            nbest_off = last;
        }
        int entry = pos - last_entry > interval, off_entry = 0, time_entry = 0;
        if (entry) {
            if (!(n_off < max_off && (n_off == 0 || last > last_off))) {
                break; /* OffsetIndex.append refuses: its error is raised by the Python path */
            }
            off_entry = 1;
            if (!(n_time < max_time && (n_time == 0 || (nbest_off >= last_ts_off && nbest_ts >= last_ts)))) {
                break; /* TimeIndex.maybe_append refuses */
            }
            time_entry = nbest_ts > last_ts;
        }
        /* the batch is plain: commit it */
        if (off_entry) {
            if (append_pair(off_buf, rel, pos) < 0) {
                failed = 1;
                break;
            }
            n_off += 1;
            last_off = last;
            if (time_entry) {
                if (append_pair(time_buf, nbest_ts, nbest_off - base) < 0) {
                    failed = 1;
                    break;
                }
                n_time += 1;
                last_ts = nbest_ts;
                last_ts_off = nbest_off;
            }
            last_entry = pos;
        }
        if (producer >= 0) {
            Py_ssize_t n = PyByteArray_GET_SIZE(producers);
            if (PyByteArray_Resize(producers, n + 8) < 0) {
                failed = 1;
                break;
            }
            int64_t at = pos;
            memcpy(PyByteArray_AS_STRING(producers) + n, &at, 8);
        }
        best_ts = nbest_ts;
        best_off = nbest_off;
        map_end = last + 1;
        has_map_end = 1;
        pos += size;
    }
    PyBuffer_Release(&view);
    long long out[S_COUNT] = {base, interval, last_entry, best_ts, best_off, n_off, last_off, max_off,
                              n_time, last_ts, last_ts_off, max_time, epoch_floor, map_end, has_map_end};
    for (int i = 0; i < S_COUNT; i++) {
        PyObject *v = PyLong_FromLongLong(out[i]);
        if (v == NULL || PyList_SetItem(state, i, v) < 0) {
            return NULL;
        }
    }
    if (failed) {
        return NULL;
    }
    return PyLong_FromSsize_t(pos);
}


/* ---- the producer batches recovery hands to the producer state ------------------------------- */

PyDoc_STRVAR(collapse_doc,
"collapse(buf, positions, keep) -> list\n\n"
"Of the positions (8-byte native integers, in log order) of the v2 batches with a producer id,\n"
"those the producer state must read: every transactional or control batch, the first batch of each\n"
"run of a producer's other batches, and every batch followed by fewer than keep data batches of\n"
"its producer before the next first batch of a run.  impl.producer_runs.collapse is the same in\n"
"Python, and says why.");

typedef struct {
    int64_t pid;
    int64_t seen; /* forward: 1 while the pid is in a run; backward: its data batches seen */
    int64_t era;  /* backward: seen counts only in the era it was counted in */
    int used;
} Slot;

static Slot *slot_of(Slot *table, size_t mask, int64_t pid) {
    size_t i = (size_t)((uint64_t)pid * 0x9E3779B97F4A7C15ull >> 17) & mask;
    while (table[i].used && table[i].pid != pid) {
        i = (i + 1) & mask;
    }
    return &table[i];
}

static PyObject *collapse(PyObject *self, PyObject *args) {
    PyObject *bufobj, *posobj;
    Py_ssize_t keep;
    if (!PyArg_ParseTuple(args, "OOn", &bufobj, &posobj, &keep)) {
        return NULL;
    }
    Py_buffer view, positions;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(posobj, &positions, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t n = positions.len / 8;
    const unsigned char *buf = view.buf;
    size_t size = 16;
    while (size < (size_t)n * 2) {
        size <<= 1;
    }
    Slot *table = PyMem_Calloc(size, sizeof(Slot));
    unsigned char *kept = PyMem_Calloc(n ? (size_t)n : 1, 1);
    int64_t *at = PyMem_Malloc((n ? (size_t)n : 1) * sizeof(int64_t));
    PyObject *out = NULL;
    if (table == NULL || kept == NULL || at == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(at, positions.buf, (size_t)n * 8);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (at[i] < 0 || at[i] > view.len - V2_HEADER_SIZE) {
            PyErr_Format(PyExc_ValueError, "collapse: no batch header at position %lld", (long long)at[i]);
            goto done;
        }
    }
    /* forward: the first batch of every run, and every transactional or control batch */
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *p = buf + at[i];
        Slot *s = slot_of(table, size - 1, be64(p + 43));
        s->used = 1;
        s->pid = be64(p + 43);
        if (be16(p + 21) & 0x30) {
            kept[i] = 1;
            s->seen = 0;
        } else if (s->seen == 0) {
            kept[i] = 3; /* kept, and the first of a run: a check may refuse it */
            s->seen = 1;
        }
    }
    /* backward: every batch with fewer than keep data batches of its producer after it and before
     * the next first batch of a run (where reading may stop): each such batch starts a new era */
    memset(table, 0, size * sizeof(Slot));
    int64_t era = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        const unsigned char *p = buf + at[i];
        if (kept[i] == 3) {
            era += 1;
            continue;
        }
        Slot *s = slot_of(table, size - 1, be64(p + 43));
        s->used = 1;
        s->pid = be64(p + 43);
        if (s->era != era) {
            s->era = era;
            s->seen = 0;
        }
        if (!(be16(p + 21) & 0x20)) {
            kept[i] |= s->seen < keep;
            s->seen += 1;
        }
    }
    out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        if (kept[i]) {
            PyObject *v = PyLong_FromLongLong(at[i]);
            if (v == NULL || PyList_Append(out, v) < 0) {
                Py_CLEAR(out);
            }
            Py_XDECREF(v);
        }
    }
done:
    PyMem_Free(table);
    PyMem_Free(kept);
    PyMem_Free(at);
    PyBuffer_Release(&positions);
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(frame_doc,
"frame(buf, pos, end, producer_positions, most) -> pos\n\n"
"BatchScan's framing-only loop (check_crc=False) over the plain v2 batches of buf[pos:end]: the\n"
"position of each batch with a producer id is appended to the bytearray producer_positions (8 bytes,\n"
"native order), at most `most` of them; return the position of the first batch it leaves to the\n"
"Python loop (a legacy or negative magic, a size below the minimum, a torn batch, the examined\n"
"tail's end) or the one after the `most`-th producer batch.");

static PyObject *frame(PyObject *self, PyObject *args) {
    PyObject *bufobj, *producers;
    Py_ssize_t pos, end, most;
    if (!PyArg_ParseTuple(args, "OnnO!n", &bufobj, &pos, &end, &PyByteArray_Type, &producers, &most)) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *buf = view.buf;
    if (end > view.len) {
        end = view.len;
    }
    const Py_ssize_t last_header_start = end - 17; /* a tail of 17 bytes or fewer is not examined */
    Py_ssize_t found = 0;
    int failed = 0;
    while (pos >= 0 && pos < last_header_start && found < most) {
        const long long total = (long long)be32(buf + pos + 8) + 12;
        const unsigned char magic = buf[pos + 16];
        if (total < 14 + 12 || pos > end - total || magic < 2 || magic > 127 || total < V2_HEADER_SIZE) {
            break; /* the Python loop's to judge: an error, a torn batch, a legacy message */
        }
        if (be64(buf + pos + 43) >= 0) {
            int64_t at = (int64_t)pos;
            if (PyByteArray_Resize(producers, PyByteArray_GET_SIZE(producers) + 8) < 0) {
                failed = 1;
                break;
            }
            memcpy(PyByteArray_AS_STRING(producers) + PyByteArray_GET_SIZE(producers) - 8, &at, 8);
            found += 1;
        }
        pos += (Py_ssize_t)total;
    }
    PyBuffer_Release(&view);
    return failed ? NULL : PyLong_FromSsize_t(pos);
}

PyDoc_STRVAR(crc_doc, "crc32c(buf) -> int\n\nCRC-32C of the bytes of buf (as crc32c.crc32c(buf)).");

static PyObject *py_crc32c(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    uint32_t c;
    Py_BEGIN_ALLOW_THREADS
    c = crc32c(view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *py_hardware(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(have_sse42);
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"collapse", collapse, METH_VARARGS, collapse_doc},
    {"frame", frame, METH_VARARGS, frame_doc},
    {"crc32c", py_crc32c, METH_O, crc_doc},
    {"hardware_based", py_hardware, METH_NOARGS, "True when CRC-32C uses the CPU's crc32 instruction."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "impl._batch_walk",
    "LogSegment recovery's plain-batch loop, compiled (see impl/_batch_walk.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__batch_walk(void) {
    const uint16_t one = 1;
    if (*(const unsigned char *)&one != 1) {
        PyErr_SetString(PyExc_ImportError, "impl._batch_walk reads 8 bytes at a time little-endian only");
        return NULL;
    }
    make_tables();
    make_shift(shift_long, LONG_BLOCK);
    make_shift(shift_short, SHORT_BLOCK);
#ifdef KLC_X86
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
    return PyModule_Create(&module);
}
