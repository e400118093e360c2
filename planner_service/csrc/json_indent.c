/* Compact JSON indented as it streams: the `?pretty` form of a body of any size, a chunk at a time, in the
 * layout orjson's OPT_INDENT_2 writes (a value per line, two spaces a level, ": " after a key, empty
 * arrays and objects as [] and {}).
 *
 * json_indent(chunk, state) -> bytes takes the next chunk of a JSON text (cut anywhere, even inside a string
 * or an escape) and a bytearray of STATE_SIZE bytes (zeros before the first chunk) that carries, from one
 * chunk to the next, whether the text is inside a string, after a backslash, just past an opening bracket
 * (whose line break waits for the next character: `[]` stays on its line), and the depth. Whitespace outside
 * strings is dropped, everything else copied, so a compact text comes out as orjson would indent it. */
#include "kernels.h"

#define STATE_SIZE 8

typedef struct {
    uint8_t in_string, escaped, pending; /* pending: the '[' or '{' whose line break is not written yet */
    uint8_t unused;
    int32_t depth;
} IndentState;

static inline int newline(Buf *out, int32_t depth) {
    size_t width = 1 + 2 * (size_t)(depth < 0 ? 0 : depth);
    if (buf_reserve(out, width) < 0) return -1;
    out->p[out->len] = '\n';
    memset(out->p + out->len + 1, ' ', width - 1);
    out->len += width;
    return 0;
}

static inline int put(Buf *out, const char *text, size_t n) {
    if (buf_reserve(out, n) < 0) return -1;
    memcpy(out->p + out->len, text, n);
    out->len += n;
    return 0;
}

static int indent(const uint8_t *in, Py_ssize_t n, IndentState *s, Buf *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t c = in[i];
        if (s->in_string) {
            Py_ssize_t run = i; /* copy the string's plain bytes at once */
            while (run < n && in[run] != '"' && in[run] != '\\' && !s->escaped) run++;
            if (run > i) {
                if (put(out, (const char *)in + i, (size_t)(run - i)) < 0) return -1;
                i = run - 1;
                continue;
            }
            if (put(out, (const char *)&c, 1) < 0) return -1;
            if (s->escaped) s->escaped = 0;
            else if (c == '\\') s->escaped = 1;
            else if (c == '"') s->in_string = 0;
            continue;
        }
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (s->pending) {
            int closes = (s->pending == '[' && c == ']') || (s->pending == '{' && c == '}');
            s->pending = 0;
            if (closes) {
                if (put(out, (const char *)&c, 1) < 0) return -1;
                continue;
            }
            s->depth++;
            if (newline(out, s->depth) < 0) return -1;
        }
        switch (c) {
        case '[':
        case '{':
            if (put(out, (const char *)&c, 1) < 0) return -1;
            s->pending = c;
            break;
        case ']':
        case '}':
            s->depth--;
            if (newline(out, s->depth) < 0 || put(out, (const char *)&c, 1) < 0) return -1;
            break;
        case ',':
            if (put(out, ",", 1) < 0 || newline(out, s->depth) < 0) return -1;
            break;
        case ':':
            if (put(out, ": ", 2) < 0) return -1;
            break;
        case '"':
            s->in_string = 1;
            /* fall through */
        default:
            if (put(out, (const char *)&c, 1) < 0) return -1;
        }
    }
    return 0;
}

PyObject *kernels_json_indent(PyObject *self, PyObject *args) {
    Py_buffer chunk = {0}, state_view = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*w*", &chunk, &state_view)) return NULL;
    if (state_view.len != STATE_SIZE) {
        PyErr_SetString(PyExc_ValueError, "json_indent: the state must be 8 bytes");
        goto done;
    }
    IndentState state;
    memcpy(&state, state_view.buf, sizeof state);
    Buf out = {0};
    int failed;
    Py_BEGIN_ALLOW_THREADS;
    failed = buf_reserve(&out, (size_t)chunk.len + chunk.len / 2 + 64) < 0 ||
             indent(chunk.buf, chunk.len, &state, &out) < 0;
    Py_END_ALLOW_THREADS;
    if (failed) {
        PyErr_NoMemory();
    } else {
        memcpy(state_view.buf, &state, sizeof state);
        result = PyBytes_FromStringAndSize(out.p ? out.p : "", (Py_ssize_t)out.len);
    }
    free(out.p);
done:
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&state_view);
    return result;
}
