/* First-fit bin packing with a lookback of open bins: Iceberg Java's BinPacking.PackingIterable (1.10).
 * The rules are documented on planner_service/splitting/bin_packing.py:pack_bins.
 *
 * Java scans its open bins for each item, O(items x lookback). A short lookback (Iceberg's default is 10)
 * does the same here; a long one (up to Java's int range: `lookback` is a read option) keeps the open bins in
 * a window of slots in creation order under a tournament tree of their lightest and heaviest weights, so
 * finding the oldest bin an item fits in, the heaviest bin and the oldest bin are O(log lookback) each and
 * the whole packing O(items log lookback), whatever the option says. */
#include "kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LINEAR_LOOKBACK 32 /* up to this many open bins, a scan beats the tree */
#define NO_BIN INT64_MIN

/* What every packing records: the bin each item went to (by creation), each bin's place in the output. */
typedef struct {
    int64_t *created, *ordinal, n_created, n_out;
} Bins;

static int64_t new_bin(Bins *b, Py_ssize_t item) {
    b->created[item] = b->n_created;
    return b->n_created++;
}

static int pack_linear(const int64_t *weights, const uint8_t *breaks, Py_ssize_t n, int64_t target, int64_t lookback,
                       int largest_first, Bins *b, int64_t *open_id, int64_t *open_weight, const Stop *stop) {
    Py_ssize_t n_open = 0;
    for (Py_ssize_t item = 0; item < n; item++) {
        if (stop_at(stop, item)) return -1;
        int64_t w = weights[item], room = target - w;
        Py_ssize_t i;
        if (breaks != NULL && breaks[item]) { /* a new group: its items pack apart, as if the input ended here */
            for (i = 0; i < n_open; i++) b->ordinal[open_id[i]] = b->n_out++;
            n_open = 0;
        }
        for (i = 0; i < n_open; i++) {
            if (open_weight[i] <= room) break; /* the oldest open bin it fits in */
        }
        if (i < n_open) {
            open_weight[i] += w;
            b->created[item] = open_id[i];
            continue;
        }
        open_id[n_open] = new_bin(b, item);
        open_weight[n_open] = w;
        n_open++;
        if (n_open > lookback) { /* close one: the heaviest (first of equals), or the oldest */
            Py_ssize_t j = 0;
            if (largest_first) {
                for (i = 1; i < n_open; i++) {
                    if (open_weight[i] > open_weight[j]) j = i;
                }
            }
            b->ordinal[open_id[j]] = b->n_out++;
            memmove(open_id + j, open_id + j + 1, (size_t)(n_open - j - 1) * sizeof(int64_t));
            memmove(open_weight + j, open_weight + j + 1, (size_t)(n_open - j - 1) * sizeof(int64_t));
            n_open--;
        }
    }
    for (Py_ssize_t i = 0; i < n_open; i++) b->ordinal[open_id[i]] = b->n_out++;
    return 0;
}

/* The open bins of a long lookback: slots [0, end) in creation order, closed ones left as holes (the window is
 * compacted when it fills), under a tree whose node k holds the least weight (lo) and the greatest (hi) of its
 * open slots; a hole is lo = INT64_MAX, hi = NO_BIN. Leaves are nodes size .. 2 size - 1. */
typedef struct {
    Py_ssize_t size, cap, end, n_open;
    int64_t *lo, *hi, *id;
} Window;

static void window_set(Window *w, Py_ssize_t slot, int64_t lo, int64_t hi) {
    Py_ssize_t k = w->size + slot;
    w->lo[k] = lo;
    w->hi[k] = hi;
    for (k /= 2; k >= 1; k /= 2) {
        w->lo[k] = w->lo[2 * k] < w->lo[2 * k + 1] ? w->lo[2 * k] : w->lo[2 * k + 1];
        w->hi[k] = w->hi[2 * k] > w->hi[2 * k + 1] ? w->hi[2 * k] : w->hi[2 * k + 1];
    }
}

static void window_open(Window *w, Py_ssize_t slot, int64_t bin, int64_t weight) {
    w->id[slot] = bin;
    /* an open bin never weighs INT64_MAX in the lo tree, so that it is never taken for a hole */
    window_set(w, slot, weight < INT64_MAX ? weight : INT64_MAX - 1, weight);
    w->n_open++;
}

static void window_close(Window *w, Py_ssize_t slot) {
    window_set(w, slot, INT64_MAX, NO_BIN);
    w->n_open--;
}

/* The first slot (the oldest bin) whose weight is at most `room`, or -1. */
static Py_ssize_t window_first_fit(const Window *w, int64_t room) {
    if (w->lo[1] > room) return -1;
    Py_ssize_t k = 1;
    while (k < w->size) k = w->lo[2 * k] <= room ? 2 * k : 2 * k + 1;
    return k - w->size;
}

/* The first slot whose weight is the greatest (the heaviest bin, the oldest of equals), or the oldest bin. */
static Py_ssize_t window_pick(const Window *w, int heaviest) {
    int64_t want = w->hi[1];
    Py_ssize_t k = 1;
    while (k < w->size) k = (heaviest ? w->hi[2 * k] == want : w->hi[2 * k] != NO_BIN) ? 2 * k : 2 * k + 1;
    return k - w->size;
}

/* Every open bin out, oldest first, and the window empty. */
static void window_flush(Window *w, Bins *b) {
    for (Py_ssize_t slot = 0; slot < w->end; slot++) {
        if (w->hi[w->size + slot] == NO_BIN) continue;
        b->ordinal[w->id[slot]] = b->n_out++;
        window_close(w, slot);
    }
    w->end = 0;
}

/* The open bins moved to the front of the window, in order, and the tree rebuilt. */
static void window_compact(Window *w) {
    Py_ssize_t kept = 0;
    for (Py_ssize_t slot = 0; slot < w->end; slot++) {
        Py_ssize_t leaf = w->size + slot;
        if (w->hi[leaf] == NO_BIN) continue;
        w->id[kept] = w->id[slot];
        w->lo[w->size + kept] = w->lo[leaf];
        w->hi[w->size + kept] = w->hi[leaf];
        kept++;
    }
    for (Py_ssize_t slot = kept; slot < w->end; slot++) {
        w->lo[w->size + slot] = INT64_MAX;
        w->hi[w->size + slot] = NO_BIN;
    }
    for (Py_ssize_t k = w->size - 1; k >= 1; k--) {
        w->lo[k] = w->lo[2 * k] < w->lo[2 * k + 1] ? w->lo[2 * k] : w->lo[2 * k + 1];
        w->hi[k] = w->hi[2 * k] > w->hi[2 * k + 1] ? w->hi[2 * k] : w->hi[2 * k + 1];
    }
    w->end = kept;
}

static int pack_window(const int64_t *weights, const uint8_t *breaks, Py_ssize_t n, int64_t target, int64_t lookback,
                       int largest_first, Bins *b, Window *w, const Stop *stop) {
    for (Py_ssize_t item = 0; item < n; item++) {
        if (stop_at(stop, item)) return -1;
        int64_t weight = weights[item], room = target - weight;
        if (breaks != NULL && breaks[item]) window_flush(w, b);
        Py_ssize_t slot = window_first_fit(w, room < INT64_MAX ? room : INT64_MAX - 1); /* (holes are MAX) */
        if (slot >= 0) {
            int64_t sum = w->hi[w->size + slot] + weight;
            window_set(w, slot, sum < INT64_MAX ? sum : INT64_MAX - 1, sum);
            b->created[item] = w->id[slot];
            continue;
        }
        if (w->end == w->cap) window_compact(w); /* at most lookback open: at least half the window is free */
        window_open(w, w->end++, new_bin(b, item), weight);
        if (w->n_open > lookback) {
            Py_ssize_t out = window_pick(w, largest_first);
            b->ordinal[w->id[out]] = b->n_out++;
            window_close(w, out);
        }
    }
    window_flush(w, b);
    return 0;
}

PyObject *kernels_pack_bins(PyObject *self, PyObject *args) {
    Py_buffer weights, flag = {0}, breaks = {0};
    long long target, lookback;
    int largest_first;
    Stop stop = {NULL, 0};
    if (!PyArg_ParseTuple(args, "y*LLpy*d|y*", &weights, &target, &lookback, &largest_first, &flag, &stop.deadline,
                          &breaks))
        return NULL;
    Py_ssize_t n = weights.len / (Py_ssize_t)sizeof(int64_t);
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    if (weights.len % (Py_ssize_t)sizeof(int64_t) != 0 || lookback <= 0 || flag.len < 1 ||
        (breaks.buf != NULL && breaks.len != n)) {
        PyErr_SetString(PyExc_ValueError,
                        "pack_bins: weights must be int64, lookback > 0, a stop flag, one break flag an item");
        goto done;
    }
    stop.flag = flag.buf;
    int64_t open = lookback < n ? (int64_t)lookback : (int64_t)n; /* the most bins ever open, less one */
    int linear = open <= LINEAR_LOOKBACK;
    Window w = {0};
    size_t words = (size_t)n * 2; /* created, ordinal */
    if (linear) {
        words += (size_t)(open + 1) * 2;
    } else {
        w.cap = 2 * (Py_ssize_t)(open + 1);
        for (w.size = 1; w.size < w.cap; w.size *= 2) {
        }
        words += (size_t)w.size * 4 + (size_t)w.cap;
    }
    result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    scratch = malloc((words + 1) * sizeof(int64_t));
    if (result == NULL || scratch == NULL) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    Bins b = {scratch, scratch + n, 0, 0};
    int64_t *rest = scratch + 2 * n, *out = (int64_t *)PyBytes_AS_STRING(result);
    const int64_t *items = weights.buf;
    const uint8_t *starts = breaks.buf;
    int status;
    if (!linear) {
        w.lo = rest;
        w.hi = rest + 2 * w.size;
        w.id = rest + 4 * w.size;
        for (Py_ssize_t k = 0; k < 2 * w.size; k++) {
            w.lo[k] = INT64_MAX;
            w.hi[k] = NO_BIN;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    status = linear ? pack_linear(items, starts, n, target, lookback, largest_first, &b, rest, rest + open + 1, &stop)
                    : pack_window(items, starts, n, target, lookback, largest_first, &b, &w, &stop);
    if (status == 0) {
        for (Py_ssize_t item = 0; item < n; item++) out[item] = b.ordinal[b.created[item]];
    }
    Py_END_ALLOW_THREADS
    if (status != 0) { /* stopped: the caller says why */
        Py_CLEAR(result);
        result = Py_NewRef(Py_None);
    }
done:
    free(scratch);
    PyBuffer_Release(&weights);
    if (flag.buf != NULL) PyBuffer_Release(&flag);
    if (breaks.buf != NULL) PyBuffer_Release(&breaks);
    return result;
}
