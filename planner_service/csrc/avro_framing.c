/* An Avro object container's framing (the Avro 1.11 spec, "Object Container Files"): the magic bytes, the
 * header's metadata map, the sync marker, then blocks of (record count, byte size, bytes, sync marker).
 * Only the framing is read here, every length checked against the file's end; the blocks' bytes are
 * decompressed and decoded by the caller (planner_service/metadata/avro_columns.py). */
#include "kernels.h"

typedef struct {
    const uint8_t *p, *end;
    const char *error;
} Cursor;

static int cursor_fail(Cursor *c, const char *message) {
    if (c->error == NULL) c->error = message;
    return -1;
}

static int cursor_long(Cursor *c, int64_t *out) {
    int status = avro_long(&c->p, c->end, out);
    if (status == AVRO_LONG_OK) return 0;
    return cursor_fail(c, status == AVRO_LONG_ENDS_EARLY ? "the file ends early"
                                                         : "a variable-length integer is longer than 10 bytes");
}

/* n bytes from the cursor: their start, or NULL (an error set) when they run past the end. */
static const uint8_t *cursor_take(Cursor *c, int64_t n) {
    if (n < 0 || n > c->end - c->p) {
        cursor_fail(c, "the file ends early");
        return NULL;
    }
    const uint8_t *at = c->p;
    c->p += n;
    return at;
}

static PyObject *header_map(Cursor *c) {
    PyObject *items = PyList_New(0);
    int64_t count;
    if (items == NULL) return NULL;
    while (cursor_long(c, &count) == 0 && count != 0) {
        int64_t ignored;
        if (count < 0) {
            count = -count;
            if (cursor_long(c, &ignored) < 0) break;  /* the block's size in bytes */
        }
        for (int64_t i = 0; i < count && c->error == NULL; i++) {
            int64_t key_size, value_size;
            const uint8_t *key = cursor_long(c, &key_size) == 0 ? cursor_take(c, key_size) : NULL;
            const uint8_t *value = key != NULL && cursor_long(c, &value_size) == 0 ? cursor_take(c, value_size) : NULL;
            if (value == NULL) break;
            PyObject *pair = Py_BuildValue("(y#y#)", key, (Py_ssize_t)key_size, value, (Py_ssize_t)value_size);
            if (pair == NULL || PyList_Append(items, pair) < 0) {
                Py_XDECREF(pair);
                Py_DECREF(items);
                return NULL;
            }
            Py_DECREF(pair);
        }
        if (c->error != NULL) break;
    }
    if (c->error != NULL) {
        Py_DECREF(items);
        PyErr_SetString(PyExc_ValueError, c->error);
        return NULL;
    }
    return items;
}

PyObject *kernels_avro_framing(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    Cursor c = {(const uint8_t *)data.buf, (const uint8_t *)data.buf + data.len, NULL};
    PyObject *meta = NULL, *blocks = NULL, *result = NULL;
    const uint8_t *magic = cursor_take(&c, 4), *sync;
    if (magic == NULL || memcmp(magic, "Obj\x01", 4) != 0) {
        PyErr_SetString(PyExc_ValueError, "not an Avro file (bad magic bytes)");
        goto done;
    }
    if ((meta = header_map(&c)) == NULL) goto done;
    if ((sync = cursor_take(&c, 16)) == NULL || (blocks = PyList_New(0)) == NULL) goto fail;
    while (c.p < c.end) {
        int64_t count, size;
        if (cursor_long(&c, &count) < 0 || cursor_long(&c, &size) < 0) goto fail;
        if (count < 0 || size < 0) {
            cursor_fail(&c, "a block with a negative record count or size");
            goto fail;
        }
        const uint8_t *start = cursor_take(&c, size), *marker = start ? cursor_take(&c, 16) : NULL;
        if (marker == NULL) goto fail;
        if (memcmp(marker, sync, 16) != 0) {
            cursor_fail(&c, "a block does not end with the file's sync marker");
            goto fail;
        }
        PyObject *block = Py_BuildValue("(LnL)", (long long)count, (Py_ssize_t)(start - (const uint8_t *)data.buf),
                                        (long long)size);
        if (block == NULL || PyList_Append(blocks, block) < 0) {
            Py_XDECREF(block);
            goto done;
        }
        Py_DECREF(block);
    }
    result = Py_BuildValue("(Ny#N)", meta, sync, (Py_ssize_t)16, blocks);
    meta = blocks = NULL;
    goto done;
fail:
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, c.error ? c.error : "a bad container");
done:
    Py_XDECREF(meta);
    Py_XDECREF(blocks);
    PyBuffer_Release(&data);
    return result;
}
