/* File paths split into their directory (interned) and their name: the paths of a table's files share a few
 * directories (a partition's), so an index holds each directory once and a name per file.
 *
 * split_paths(offsets, data, directories) takes a string column (int64 offsets, UTF-8 data) and a dict of
 * the directories seen so far (bytes -> id, extended in place) and returns (directory ids as int32 bytes,
 * name offsets as int64 bytes, name data as bytes). A directory is everything up to and including the last
 * '/' (empty for a path without one). The RECENT directories last seen are compared first (a table's files
 * come a partition or a few at a time), so that most paths cost a memcmp, not a dict lookup. */
#include "kernels.h"

#define RECENT 16

typedef struct {
    const char *dir;
    Py_ssize_t len;
    uint64_t tail;  /* the directory's last 8 bytes (fewer: zero-padded): most mismatches end there */
    int32_t id;
} Recent;

static inline uint64_t tail_of(const char *dir, Py_ssize_t len) {
    uint64_t tail = 0;
    Py_ssize_t n = len < 8 ? len : 8;
    memcpy(&tail, dir + len - n, (size_t)n);
    return tail;
}

PyObject *kernels_split_paths(PyObject *self, PyObject *args) {
    Py_buffer offsets_view = {0}, data_view = {0};
    PyObject *directories, *ids = NULL, *name_offsets = NULL, *names = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*O!", &offsets_view, &data_view, &PyDict_Type, &directories)) return NULL;
    const int64_t *offsets = offsets_view.buf;
    const char *data = data_view.buf;
    Py_ssize_t n = offsets_view.len / (Py_ssize_t)sizeof(int64_t) - 1;
    if (n < 0 || offsets[0] < 0 || offsets[n] > data_view.len) {
        PyErr_SetString(PyExc_ValueError, "split_paths: offsets out of the data");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (offsets[i] > offsets[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "split_paths: offsets descend");
            goto done;
        }
    ids = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    name_offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    if (ids == NULL || name_offsets == NULL) goto done;
    int32_t *id = (int32_t *)PyBytes_AS_STRING(ids);
    int64_t *name_at = (int64_t *)PyBytes_AS_STRING(name_offsets);
    /* the names' bytes: at most the paths' */
    names = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(offsets[n] - offsets[0]));
    if (names == NULL) goto done;
    char *out = PyBytes_AS_STRING(names);
    int64_t written = 0;
    Recent recent[RECENT];
    int n_recent = 0, next_slot = 0;
    name_at[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *path = data + offsets[i];
        Py_ssize_t len = (Py_ssize_t)(offsets[i + 1] - offsets[i]), cut = len;
        while (cut > 0 && path[cut - 1] != '/') cut--;
        int32_t found = -1;
        uint64_t tail = tail_of(path, cut);
        for (int r = 0; r < n_recent; r++)
            if (recent[r].len == cut && recent[r].tail == tail && memcmp(recent[r].dir, path, (size_t)cut) == 0) {
                found = recent[r].id;
                break;
            }
        if (found < 0) {
            PyObject *key = PyBytes_FromStringAndSize(path, cut);
            if (key == NULL) goto done;
            PyObject *known = PyDict_GetItemWithError(directories, key);
            long value;
            if (known != NULL) {
                value = PyLong_AsLong(known);
            } else if (PyErr_Occurred()) {
                Py_DECREF(key);
                goto done;
            } else {
                value = (long)PyDict_GET_SIZE(directories);
                PyObject *number = PyLong_FromLong(value);
                int failed = number == NULL || PyDict_SetItem(directories, key, number) < 0;
                Py_XDECREF(number);
                if (failed) {
                    Py_DECREF(key);
                    goto done;
                }
            }
            Py_DECREF(key);
            if (value < 0 || value > INT32_MAX) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "split_paths: a bad directory id");
                goto done;
            }
            found = (int32_t)value;
            recent[next_slot] = (Recent){path, cut, tail, found};  /* the path's bytes outlive the loop */
            next_slot = (next_slot + 1) % RECENT;
            if (n_recent < RECENT) n_recent++;
        }
        id[i] = found;
        memcpy(out + written, path + cut, (size_t)(len - cut));
        written += len - cut;
        name_at[i + 1] = written;
    }
    if (_PyBytes_Resize(&names, (Py_ssize_t)written) < 0) goto done;
    result = Py_BuildValue("(OOO)", ids, name_offsets, names);
done:
    Py_XDECREF(ids);
    Py_XDECREF(name_offsets);
    Py_XDECREF(names);
    PyBuffer_Release(&offsets_view);
    PyBuffer_Release(&data_view);
    return result;
}
