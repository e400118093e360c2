/* Rows of Arrow-style columns rendered as JSON text, rows joined by commas, after an optional prefix.
 *
 * A row is the concatenation of its parts, each a tuple (kind, buffers..., offset) where `offset` is the
 * array's offset into its buffers (Arrow slices) and a validity bitmap may be None (all present):
 *   (LITERAL, bytes)                                   the bytes as they are
 *   (INT, validity, int64 values, offset)               a number, or null
 *   (STRING, validity, int64 offsets, data, offset)     a JSON string (escaped), or null
 *   (TAIL, validity, int64 offsets, data, offset)       the rest of a JSON string a snippet opened: the text
 *                                                       escaped and the closing quote (never null)
 *   (INTS, validity, int64 offsets, int64 values, offset)  a JSON array of numbers, or null
 *   (SNIPPET, int64 ids, int64 offsets, data)           the ids[row]-th of pre-rendered JSON snippets
 *   (SPLITS, int64 task offsets, int64 file, int64 start, int64 length, offset)
 *                                                       [[file,start,length],...] of the row's pieces
 * INT, STRING and INTS take an optional last item, a key (say b',"sort-order-id":'): the key and the value
 * where the value is present, nothing at all where it is null (an optional field left out of that row).
 * Buffers are checked against `length` before any row is rendered; rendering runs without the GIL. */
#include "kernels.h"

enum { P_LITERAL, P_INT, P_STRING, P_INTS, P_SNIPPET, P_SPLITS, P_TAIL };
#define MAX_BUFFERS 4

typedef struct {
    int kind;
    Py_buffer views[MAX_BUFFERS];
    Py_buffer key;  /* INT, STRING, INTS: written before a present value; a null one is left out (buf NULL: none) */
    int64_t offset;
} Part;

static inline int present(const Py_buffer *validity, int64_t i) {
    return validity->buf == NULL || (((const uint8_t *)validity->buf)[i >> 3] >> (i & 7)) & 1;
}

static inline const int64_t *i64(const Py_buffer *view) { return (const int64_t *)view->buf; }

static inline int64_t count64(const Py_buffer *view) { return view->len / 8; }

/* Writers into memory reserved beforehand (row_bound): each returns the position after what it wrote. */

static const char DIGIT_PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *put_int(char *p, int64_t value) {
    char digits[24];
    char *end = digits + sizeof digits, *d = end;
    uint64_t v = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    while (v >= 100) {
        unsigned pair = (unsigned)(v % 100);
        v /= 100;
        d -= 2;
        memcpy(d, DIGIT_PAIRS + 2 * pair, 2);
    }
    if (v >= 10) {
        d -= 2;
        memcpy(d, DIGIT_PAIRS + 2 * v, 2);
    } else {
        *--d = (char)('0' + v);
    }
    if (value < 0) *p++ = '-';
    memcpy(p, d, (size_t)(end - d));
    return p + (end - d);
}

static inline char *put_text(char *p, const void *text, size_t n) {
    memcpy(p, text, n);
    return p + n;
}

/* Bytes that JSON strings must escape: '"', '\\' and the control characters. */
static inline int escaped(uint8_t c) { return c < 0x20 || c == '"' || c == '\\'; }

/* Whether any of 8 bytes needs escaping (each byte: below 0x20, or equal to '"' or '\\'). */
static inline int any_escaped(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
    uint64_t below = (w - ones * 0x20) & ~w;  /* high bit set where a byte < 0x20 (or >= 0xa0 borrowed: rechecked) */
    uint64_t zero_q = (quote - ones) & ~quote, zero_s = (slash - ones) & ~slash;
    return ((below | zero_q | zero_s) & highs) != 0;
}

/* The bytes escaped as JSON string text, and the closing quote. */
static char *put_string_tail(char *p, const uint8_t *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (n - run >= 8) {  /* eight bytes at a time while none needs escaping */
            uint64_t w;
            memcpy(&w, s + run, 8);
            if (any_escaped(w)) break;
            run += 8;
        }
        while (run < n && !escaped(s[run])) run++;
        memcpy(p, s + i, run - i);  /* the run of bytes as they are */
        p += run - i;
        if (run == n) break;
        uint8_t c = s[run];
        *p++ = '\\';
        if (c == '"' || c == '\\') {
            *p++ = (char)c;
        } else {
            memcpy(p, "u00", 3);
            p[3] = hex[c >> 4];
            p[4] = hex[c & 15];
            p += 5;
        }
        i = run + 1;
    }
    *p++ = '"';
    return p;
}

static char *put_string(char *p, const uint8_t *s, size_t n) {
    *p++ = '"';
    return put_string_tail(p, s, n);
}

#define INT_BYTES 20  /* "-9223372036854775808" */

/* The most bytes a part can render for a row. */
static size_t part_bound(const Part *part, int64_t row) {
    const Py_buffer *v = part->views;
    int64_t i = row + part->offset;
    size_t key = part->key.buf != NULL ? (size_t)part->key.len : 0;
    switch (part->kind) {
        case P_LITERAL:
            return (size_t)v[0].len;
        case P_INT:
            return key + INT_BYTES;
        case P_STRING:
        case P_TAIL: {
            const int64_t *offsets = i64(&v[1]);
            return key + 6 * (size_t)(offsets[i + 1] - offsets[i]) + 4;  /* every byte \u00XX; or null */
        }
        case P_INTS: {
            const int64_t *offsets = i64(&v[1]);
            return key + (size_t)(offsets[i + 1] - offsets[i]) * (INT_BYTES + 1) + 4;
        }
        case P_SNIPPET: {
            int64_t id = i64(&v[0])[row];
            const int64_t *offsets = i64(&v[1]);
            return (size_t)(offsets[id + 1] - offsets[id]);
        }
        case P_SPLITS: {
            const int64_t *tasks = i64(&v[0]);
            return (size_t)(tasks[i + 1] - tasks[i]) * (3 * INT_BYTES + 5) + 2;
        }
        default:
            return 0;
    }
}

static char *render_part(char *p, const Part *part, int64_t row) {
    const Py_buffer *v = part->views;
    int64_t i = row + part->offset;
    if (part->key.buf != NULL) {  /* an optional field: its key and value, or nothing */
        if (!present(&v[0], i)) return p;
        p = put_text(p, part->key.buf, (size_t)part->key.len);
    }
    switch (part->kind) {
        case P_LITERAL:
            return put_text(p, v[0].buf, (size_t)v[0].len);
        case P_INT:
            return present(&v[0], i) ? put_int(p, i64(&v[1])[i]) : put_text(p, "null", 4);
        case P_STRING: {
            if (!present(&v[0], i)) return put_text(p, "null", 4);
            const int64_t *offsets = i64(&v[1]);
            return put_string(p, (const uint8_t *)v[2].buf + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
        }
        case P_TAIL: {
            const int64_t *offsets = i64(&v[1]);
            return put_string_tail(p, (const uint8_t *)v[2].buf + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
        }
        case P_INTS: {
            if (!present(&v[0], i)) return put_text(p, "null", 4);
            const int64_t *offsets = i64(&v[1]), *values = i64(&v[2]);
            *p++ = '[';
            for (int64_t k = offsets[i]; k < offsets[i + 1]; k++) {
                if (k > offsets[i]) *p++ = ',';
                p = put_int(p, values[k]);
            }
            *p++ = ']';
            return p;
        }
        case P_SNIPPET: {
            int64_t id = i64(&v[0])[row];
            const int64_t *offsets = i64(&v[1]);
            return put_text(p, (const char *)v[2].buf + offsets[id], (size_t)(offsets[id + 1] - offsets[id]));
        }
        case P_SPLITS: {
            const int64_t *tasks = i64(&v[0]), *file = i64(&v[1]), *start = i64(&v[2]), *length = i64(&v[3]);
            *p++ = '[';
            for (int64_t k = tasks[i]; k < tasks[i + 1]; k++) {
                if (k > tasks[i]) *p++ = ',';
                *p++ = '[';
                p = put_int(p, file[k]);
                *p++ = ',';
                p = put_int(p, start[k]);
                *p++ = ',';
                p = put_int(p, length[k]);
                *p++ = ']';
            }
            *p++ = ']';
            return p;
        }
        default:
            return p;
    }
}

/* Offsets (n + 1 of them, from `first`) must ascend and stay within `limit`. */
static int offsets_ok(const int64_t *offsets, int64_t first, int64_t n, int64_t limit) {
    for (int64_t k = first; k < first + n; k++)
        if (offsets[k] < 0 || offsets[k] > offsets[k + 1] || offsets[k + 1] > limit) return 0;
    return 1;
}

static const char *check_part(const Part *part, int64_t length) {
    const Py_buffer *v = part->views;
    int64_t first = part->offset, last = part->offset + length;  /* rows [first, last) of the buffers */
    int bitmap_ok = v[0].buf == NULL || v[0].len * 8 >= last;
    switch (part->kind) {
        case P_LITERAL:
            return NULL;
        case P_INT:
            return bitmap_ok && count64(&v[1]) >= last ? NULL : "an int column shorter than the rows";
        case P_TAIL:
            if (v[0].buf != NULL) return "a string tail with a validity bitmap";  /* FALLTHROUGH */
        case P_STRING:
        case P_INTS: {
            if (!bitmap_ok || count64(&v[1]) < last + 1) return "a column shorter than the rows";
            int64_t limit = part->kind == P_INTS ? count64(&v[2]) : (int64_t)v[2].len;
            return offsets_ok(i64(&v[1]), first, length, limit) ? NULL : "bad offsets";
        }
        case P_SNIPPET: {
            int64_t snippets = count64(&v[1]) - 1;
            if (count64(&v[0]) < length || snippets < 0 || !offsets_ok(i64(&v[1]), 0, snippets, v[2].len))
                return "bad snippets";
            for (int64_t r = 0; r < length; r++)
                if (i64(&v[0])[r] < 0 || i64(&v[0])[r] >= snippets) return "a snippet id out of range";
            return NULL;
        }
        case P_SPLITS: {
            int64_t pieces = count64(&v[1]);
            if (count64(&v[2]) != pieces || count64(&v[3]) != pieces || count64(&v[0]) < last + 1)
                return "split columns of different lengths";
            return offsets_ok(i64(&v[0]), first, length, pieces) ? NULL : "bad task offsets";
        }
        default:
            return "an unknown part kind";
    }
}

static const char *FORMATS[] = {"iy*", "iz*y*L|y*", "iz*y*y*L|y*", "iz*y*y*L|y*", "iy*y*y*", "iy*y*y*y*L", "iz*y*y*L"};

PyObject *kernels_render_rows(PyObject *self, PyObject *args) {
    long long length;
    PyObject *spec, *result = NULL;
    Py_buffer prefix = {0};
    if (!PyArg_ParseTuple(args, "LO!|y*", &length, &PyList_Type, &spec, &prefix)) return NULL;
    Py_ssize_t n_parts = PyList_GET_SIZE(spec), parsed = 0;
    Part *parts = PyMem_Calloc((size_t)n_parts + 1, sizeof(Part));
    const char *bad = length < 0 ? "a negative length" : NULL;
    if (parts == NULL) {
        PyBuffer_Release(&prefix);
        return PyErr_NoMemory();
    }
    for (; bad == NULL && parsed < n_parts; parsed++) {
        PyObject *item = PyList_GET_ITEM(spec, parsed);
        Part *p = &parts[parsed];
        int kind;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 1) {
            bad = "a part that is not a tuple";
            break;
        }
        kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        if (kind == -1 && PyErr_Occurred()) goto fail;
        if (kind < P_LITERAL || kind > P_TAIL) {
            bad = "an unknown part kind";
            break;
        }
        Py_buffer *w = p->views;
        long long offset = 0;
        int ok;
        switch (kind) {
            case P_LITERAL: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0]); break;
            case P_INT: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &offset, &p->key); break;
            case P_STRING:
            case P_INTS:
                ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &w[2], &offset, &p->key);
                break;
            case P_TAIL: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &w[2], &offset); break;
            case P_SNIPPET: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &w[2]); break;
            default: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &w[2], &w[3], &offset); break;
        }
        if (!ok) goto fail;
        p->kind = kind;
        p->offset = offset;
        bad = offset < 0 ? "a negative offset" : check_part(p, length);
    }
    if (bad != NULL) {
        PyErr_Format(PyExc_ValueError, "render_rows: %s", bad);
        goto fail;
    }
    /* the rows' bound first, then the bytes object itself written into (no copy), shrunk to what was written */
    size_t bound = (size_t)prefix.len + (size_t)length;  /* the prefix, and a comma per row */
    Py_BEGIN_ALLOW_THREADS
    for (int64_t row = 0; row < length; row++)
        for (Py_ssize_t k = 0; k < n_parts; k++) bound += part_bound(&parts[k], row);
    Py_END_ALLOW_THREADS
    if (bound > (size_t)PY_SSIZE_T_MAX || (result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound)) == NULL) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto fail;
    }
    char *start = PyBytes_AS_STRING(result), *p = start;
    Py_BEGIN_ALLOW_THREADS
    if (prefix.len > 0) memcpy(p, prefix.buf, (size_t)prefix.len);
    p += prefix.len;
    for (int64_t row = 0; row < length; row++) {
        if (row > 0) *p++ = ',';
        for (Py_ssize_t k = 0; k < n_parts; k++) p = render_part(p, &parts[k], row);
    }
    Py_END_ALLOW_THREADS
    _PyBytes_Resize(&result, (Py_ssize_t)(p - start));  /* (NULL, an error set, if it fails) */
fail:
    for (Py_ssize_t i = 0; i < parsed; i++) {  /* (a no-op for the buffers unused) */
        for (int k = 0; k < MAX_BUFFERS; k++) PyBuffer_Release(&parts[i].views[k]);
        PyBuffer_Release(&parts[i].key);
    }
    PyMem_Free(parts);
    PyBuffer_Release(&prefix);
    return result;
}
