/* Rows of Arrow-style columns rendered as JSON text, rows joined by commas.
 *
 * A row is the concatenation of its parts, each a tuple (kind, buffers..., offset) where `offset` is the
 * array's offset into its buffers (Arrow slices) and a validity bitmap may be None (all present):
 *   (LITERAL, bytes)                                   the bytes as they are
 *   (INT, validity, int64 values, offset)               a number, or null
 *   (STRING, validity, int64 offsets, data, offset)     a JSON string (escaped), or null
 *   (INTS, validity, int64 offsets, int64 values, offset)  a JSON array of numbers, or null
 *   (SNIPPET, int64 ids, int64 offsets, data)           the ids[row]-th of pre-rendered JSON snippets
 *   (SPLITS, int64 task offsets, int64 file, int64 start, int64 length, offset)
 *                                                       [[file,start,length],...] of the row's pieces
 * Buffers are checked against `length` before any row is rendered; rendering runs without the GIL. */
#include "kernels.h"

enum { P_LITERAL, P_INT, P_STRING, P_INTS, P_SNIPPET, P_SPLITS };
#define MAX_BUFFERS 4

typedef struct {
    int kind;
    Py_buffer views[MAX_BUFFERS];
    int64_t offset;
} Part;

static inline int present(const Py_buffer *validity, int64_t i) {
    return validity->buf == NULL || (((const uint8_t *)validity->buf)[i >> 3] >> (i & 7)) & 1;
}

static inline const int64_t *i64(const Py_buffer *view) { return (const int64_t *)view->buf; }

static inline int64_t count64(const Py_buffer *view) { return view->len / 8; }

static int put_int(Buf *out, int64_t value) {
    char digits[24];
    int n = 0;
    uint64_t v = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (buf_reserve(out, (size_t)n + 1) < 0) return -1;
    if (value < 0) out->p[out->len++] = '-';
    while (n) out->p[out->len++] = digits[--n];
    return 0;
}

/* Bytes that JSON strings must escape: '"', '\\' and the control characters. */
static inline int escaped(uint8_t c) { return c < 0x20 || c == '"' || c == '\\'; }

static int put_string(Buf *out, const uint8_t *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(out, n * 6 + 2) < 0) return -1;  /* the worst case: every byte \u00XX */
    char *p = out->p + out->len;
    *p++ = '"';
    size_t i = 0;
    while (i < n) {
        size_t run = i;
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
    out->len = (size_t)(p - out->p);
    return 0;
}

static int put_null(Buf *out) { return buf_append(out, "null", 4); }

static int render_part(Buf *out, const Part *part, int64_t row) {
    const Py_buffer *v = part->views;
    int64_t i = row + part->offset;
    switch (part->kind) {
        case P_LITERAL:
            return buf_append(out, v[0].buf, (size_t)v[0].len);
        case P_INT:
            return present(&v[0], i) ? put_int(out, i64(&v[1])[i]) : put_null(out);
        case P_STRING: {
            if (!present(&v[0], i)) return put_null(out);
            const int64_t *offsets = i64(&v[1]);
            return put_string(out, (const uint8_t *)v[2].buf + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
        }
        case P_INTS: {
            if (!present(&v[0], i)) return put_null(out);
            const int64_t *offsets = i64(&v[1]), *values = i64(&v[2]);
            if (buf_append(out, "[", 1) < 0) return -1;
            for (int64_t k = offsets[i]; k < offsets[i + 1]; k++) {
                if ((k > offsets[i] && buf_append(out, ",", 1) < 0) || put_int(out, values[k]) < 0) return -1;
            }
            return buf_append(out, "]", 1);
        }
        case P_SNIPPET: {
            int64_t id = i64(&v[0])[row];
            const int64_t *offsets = i64(&v[1]);
            return buf_append(out, (const char *)v[2].buf + offsets[id], (size_t)(offsets[id + 1] - offsets[id]));
        }
        case P_SPLITS: {
            const int64_t *tasks = i64(&v[0]), *file = i64(&v[1]), *start = i64(&v[2]), *length = i64(&v[3]);
            if (buf_append(out, "[", 1) < 0) return -1;
            for (int64_t k = tasks[i]; k < tasks[i + 1]; k++) {
                if ((k > tasks[i] && buf_append(out, ",", 1) < 0) || buf_append(out, "[", 1) < 0 ||
                    put_int(out, file[k]) < 0 || buf_append(out, ",", 1) < 0 || put_int(out, start[k]) < 0 ||
                    buf_append(out, ",", 1) < 0 || put_int(out, length[k]) < 0 || buf_append(out, "]", 1) < 0)
                    return -1;
            }
            return buf_append(out, "]", 1);
        }
        default:
            return -1;
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
        case P_STRING:
        case P_INTS: {
            if (!bitmap_ok || count64(&v[1]) < last + 1) return "a column shorter than the rows";
            int64_t limit = part->kind == P_STRING ? (int64_t)v[2].len : count64(&v[2]);
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

static const char *FORMATS[] = {"iy*", "iz*y*L", "iz*y*y*L", "iz*y*y*L", "iy*y*y*", "iy*y*y*y*L"};

PyObject *kernels_render_rows(PyObject *self, PyObject *args) {
    long long length;
    PyObject *spec, *result = NULL;
    if (!PyArg_ParseTuple(args, "LO!", &length, &PyList_Type, &spec)) return NULL;
    Py_ssize_t n_parts = PyList_GET_SIZE(spec), parsed = 0;
    Part *parts = PyMem_Calloc((size_t)n_parts + 1, sizeof(Part));
    Buf out = {NULL, 0, 0};
    const char *bad = length < 0 ? "a negative length" : NULL;
    if (parts == NULL) return PyErr_NoMemory();
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
        if (kind < P_LITERAL || kind > P_SPLITS) {
            bad = "an unknown part kind";
            break;
        }
        Py_buffer *w = p->views;
        long long offset = 0;
        int ok;
        switch (kind) {
            case P_LITERAL: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0]); break;
            case P_INT: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &offset); break;
            case P_STRING:
            case P_INTS: ok = PyArg_ParseTuple(item, FORMATS[kind], &kind, &w[0], &w[1], &w[2], &offset); break;
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
    int failed = buf_reserve(&out, (size_t)length * 64) < 0;  /* most rows are longer: fewer copies growing */
    Py_BEGIN_ALLOW_THREADS
    for (int64_t row = 0; row < length && !failed; row++) {
        if (row > 0 && buf_append(&out, ",", 1) < 0) failed = 1;
        for (Py_ssize_t k = 0; k < n_parts && !failed; k++) failed = render_part(&out, &parts[k], row) < 0;
    }
    Py_END_ALLOW_THREADS
    if (failed) PyErr_NoMemory();
    else result = PyBytes_FromStringAndSize(out.p ? out.p : "", (Py_ssize_t)out.len);
fail:
    for (Py_ssize_t i = 0; i < parsed; i++)
        for (int k = 0; k < MAX_BUFFERS; k++) PyBuffer_Release(&parts[i].views[k]);  /* (a no-op if unused) */
    PyMem_Free(parts);
    free(out.p);
    return result;
}
