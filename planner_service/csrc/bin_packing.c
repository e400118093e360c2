/* First-fit bin packing with a lookback of open bins: Iceberg Java's BinPacking.PackingIterable (1.10).
 * The rules are documented on planner_service/splitting/bin_packing.py:pack_bins. */
#include "kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void pack(const int64_t *weights, const uint8_t *breaks, Py_ssize_t n, int64_t target, int64_t lookback,
                 Py_ssize_t slots, int largest_first, int64_t *created, int64_t *ordinal, int64_t *open_id,
                 int64_t *open_weight, int64_t *out) {
    Py_ssize_t n_open = 0;
    int64_t n_created = 0, n_out = 0;
    for (Py_ssize_t item = 0; item < n; item++) {
        int64_t w = weights[item], room = target - w;
        Py_ssize_t i;
        if (breaks != NULL && breaks[item]) {  /* a new group: its items pack apart, as if the input ended here */
            for (i = 0; i < n_open; i++) ordinal[open_id[i]] = n_out++;
            n_open = 0;
        }
        for (i = 0; i < n_open; i++) {
            if (open_weight[i] <= room) break;  /* the oldest open bin it fits in */
        }
        if (i < n_open) {
            open_weight[i] += w;
            created[item] = open_id[i];
            continue;
        }
        open_id[n_open] = n_created;  /* a new bin */
        open_weight[n_open] = w;
        created[item] = n_created;
        n_open++;
        n_created++;
        if (n_open > lookback) {  /* close one: the heaviest (first of equals), or the oldest */
            Py_ssize_t j = 0;
            if (largest_first) {
                for (i = 1; i < n_open; i++) {
                    if (open_weight[i] > open_weight[j]) j = i;
                }
            }
            ordinal[open_id[j]] = n_out++;
            memmove(open_id + j, open_id + j + 1, (size_t)(n_open - j - 1) * sizeof(int64_t));
            memmove(open_weight + j, open_weight + j + 1, (size_t)(n_open - j - 1) * sizeof(int64_t));
            n_open--;
        }
    }
    for (Py_ssize_t i = 0; i < n_open; i++) ordinal[open_id[i]] = n_out++;
    for (Py_ssize_t item = 0; item < n; item++) out[item] = ordinal[created[item]];
}

PyObject *kernels_pack_bins(PyObject *self, PyObject *args) {
    Py_buffer weights, breaks = {0};
    long long target, lookback;
    int largest_first;
    if (!PyArg_ParseTuple(args, "y*LLp|y*", &weights, &target, &lookback, &largest_first, &breaks)) return NULL;
    Py_ssize_t n = weights.len / (Py_ssize_t)sizeof(int64_t);
    if (weights.len % (Py_ssize_t)sizeof(int64_t) != 0 || lookback <= 0 || (breaks.buf != NULL && breaks.len != n)) {
        PyBuffer_Release(&weights);
        if (breaks.buf != NULL) PyBuffer_Release(&breaks);
        PyErr_SetString(PyExc_ValueError, "pack_bins: weights must be int64, lookback > 0, one break flag an item");
        return NULL;
    }
    Py_ssize_t slots = (lookback < n ? (Py_ssize_t)lookback : n) + 1;
    PyObject *result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    int64_t *scratch = malloc(((size_t)n * 2 + (size_t)slots * 2 + 1) * sizeof(int64_t));
    if (result == NULL || scratch == NULL) {
        PyBuffer_Release(&weights);
        if (breaks.buf != NULL) PyBuffer_Release(&breaks);
        Py_XDECREF(result);
        free(scratch);
        return PyErr_NoMemory();
    }
    int64_t *out = (int64_t *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    pack((const int64_t *)weights.buf, (const uint8_t *)breaks.buf, n, target, lookback, slots, largest_first,
         scratch, scratch + n, scratch + 2 * n, scratch + 2 * n + slots, out);
    Py_END_ALLOW_THREADS
    free(scratch);
    PyBuffer_Release(&weights);
    if (breaks.buf != NULL) PyBuffer_Release(&breaks);
    return result;
}
