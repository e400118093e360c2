/* Splitting files into byte ranges and merging packed ranges into tasks, without temporaries per split.
 * The rules are documented on planner_service/splitting/splits.py:split_files (Java
 * BaseContentScanTask.split) and planner_service/splitting/combine.py:combine (TableScanUtil.mergeTasks). */
#include "kernels.h"

/* Each of `n` objects released (NULL ones skipped) and set to NULL. */
static void clear_all(PyObject **objects, int n) {
    for (int i = 0; i < n; i++) Py_CLEAR(objects[i]);
}

static PyObject *new_bytes(Py_ssize_t n, void **data) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, n > 0 ? n : 0);
    if (out != NULL) *data = PyBytes_AS_STRING(out);
    return out;
}

/* Offsets are usable when present, the last one inside the file, and strictly ascending. */
static int usable_offsets(const int64_t *offsets, int64_t count, int64_t size) {
    if (count <= 0 || offsets[count - 1] >= size) return 0;
    for (int64_t k = 1; k < count; k++)
        if (offsets[k] <= offsets[k - 1]) return 0;
    return 1;
}

/* How a file is cut: 0 one unsplit range, 1 at its offsets, 2 in fixed-size ranges; and into how many. */
static int64_t ranges_of(int64_t size, uint8_t splittable, const int64_t *offsets, int64_t count, int64_t target,
                         int *how) {
    if (!splittable) {
        *how = 0;
        return 1;
    }
    if (usable_offsets(offsets, count, size)) {
        *how = 1;
        return count;
    }
    *how = 2;
    return size <= 0 ? 0 : size / target + (size % target != 0);
}

/* A range's weight for packing (TableScanUtil.planTasks): its length plus all of its file's delete bytes, and
 * at least one open per file it opens (the data file and each delete file). The one definition: split_files
 * weighs its ranges with it, and split_weights gives it to Python (the plan explorer shows it). */
static inline int64_t split_weight(int64_t length, int64_t delete_bytes, int64_t delete_files, int64_t open_cost) {
    int64_t opens = (1 + delete_files) * open_cost;
    return length + delete_bytes > opens ? length + delete_bytes : opens;
}

PyObject *kernels_split_weights(PyObject *self, PyObject *args) {
    Py_buffer lengths, deletes, delete_counts;
    long long open_cost;
    if (!PyArg_ParseTuple(args, "y*y*y*L", &lengths, &deletes, &delete_counts, &open_cost)) return NULL;
    Py_ssize_t n = lengths.len / 8;
    PyObject *result = NULL;
    if (deletes.len / 8 != n || delete_counts.len / 8 != n || open_cost < 0) {
        PyErr_SetString(PyExc_ValueError, "split_weights: columns of different lengths, or a file open cost < 0");
    } else {
        void *w;
        result = new_bytes(n * 8, &w);
        const int64_t *length = lengths.buf, *bytes = deletes.buf, *files = delete_counts.buf;
        for (Py_ssize_t i = 0; result != NULL && i < n; i++)
            ((int64_t *)w)[i] = split_weight(length[i], bytes[i], files[i], open_cost);
    }
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&deletes);
    PyBuffer_Release(&delete_counts);
    return result;
}

/* How many ranges n files make, saturating at INT64_MAX, into *total; or why the columns are not usable. */
static const char *total_ranges(const int64_t *size, const uint8_t *can, const int64_t *count, Py_ssize_t n,
                                Py_ssize_t n_flat, const int64_t *offsets, int64_t target, int64_t *total) {
    int64_t used = 0;
    *total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int how;
        if (count[i] < 0 || count[i] > n_flat - used) return "split offset counts past the offsets";
        int64_t ranges = ranges_of(size[i], can[i], offsets + used, count[i], target, &how);
        *total = ranges > INT64_MAX - *total ? INT64_MAX : *total + ranges;
        used += count[i];
    }
    return NULL;
}

/* How many ranges n files make (saturating at INT64_MAX): what splitting them would allocate, known first. */
PyObject *kernels_count_ranges(PyObject *self, PyObject *args) {
    Py_buffer sizes, splittable, counts, flat;
    long long target;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*L", &sizes, &splittable, &counts, &flat, &target)) return NULL;
    Py_ssize_t n = sizes.len / 8;
    int64_t total = 0;
    const char *bad = target <= 0 ? "a split size <= 0" : NULL;
    if (bad == NULL && (splittable.len != n || counts.len / 8 != n)) bad = "columns of different lengths";
    if (bad == NULL)
        bad = total_ranges(sizes.buf, splittable.buf, counts.buf, n, flat.len / 8, flat.buf, target, &total);
    if (bad != NULL) PyErr_Format(PyExc_ValueError, "count_ranges: %s", bad);
    else result = PyLong_FromLongLong(total);
    PyBuffer_Release(&sizes);
    PyBuffer_Release(&splittable);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&flat);
    return result;
}

/* Each file's ranges, weighed for packing (split_weight). The caller counts the ranges first (count_ranges)
 * and bounds them; this allocates them. None when stopped. */
PyObject *kernels_split_files(PyObject *self, PyObject *args) {
    Py_buffer sizes, splittable, counts, flat, deletes, delete_counts, flag;
    long long target, open_cost;
    Stop stop = {NULL, 0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*Ly*y*Ly*d", &sizes, &splittable, &counts, &flat, &target, &deletes,
                          &delete_counts, &open_cost, &flag, &stop.deadline))
        return NULL;
    stop.flag = flag.len > 0 ? flag.buf : NULL;
    Py_ssize_t n = sizes.len / 8, n_flat = flat.len / 8;
    const int64_t *size = sizes.buf, *count = counts.buf, *offsets = flat.buf, *delete_bytes = deletes.buf,
                  *delete_files = delete_counts.buf;
    const uint8_t *can = splittable.buf;
    int64_t total = 0, used = 0;
    const char *bad = target <= 0 ? "a split size <= 0" : open_cost < 0 ? "a file open cost < 0" : NULL;
    if (bad == NULL && (splittable.len != n || counts.len / 8 != n || deletes.len / 8 != n ||
                        delete_counts.len / 8 != n))
        bad = "columns of different lengths";
    if (bad == NULL) bad = total_ranges(size, can, count, n, n_flat, offsets, target, &total);
    if (bad == NULL && total > PY_SSIZE_T_MAX / 8) bad = "more ranges than memory holds (count_ranges first)";
    if (bad != NULL) {
        PyErr_Format(PyExc_ValueError, "split_files: %s", bad);
        goto done;
    }
    void *o, *s, *l, *f, *w;
    PyObject *owner = new_bytes(total * 8, &o), *start = new_bytes(total * 8, &s), *length = new_bytes(total * 8, &l),
             *is_split = new_bytes(total, &f), *weight = new_bytes(total * 8, &w);
    if (owner == NULL || start == NULL || length == NULL || is_split == NULL || weight == NULL) {
        PyObject *made[] = {owner, start, length, is_split, weight};
        clear_all(made, 5);
        goto done;
    }
    int stopped = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t *own = o, *begin = s, *len = l, *weigh = w, r = 0;
    uint8_t *split = f;
    used = 0;
    for (Py_ssize_t i = 0; i < n && !stopped; i++) {
        int how;
        const int64_t *at = offsets + used;
        int64_t k, ranges = ranges_of(size[i], can[i], at, count[i], target, &how);
        for (k = 0; k < ranges; k++, r++) {
            int64_t first, end;
            if (stop_at(&stop, r + 1)) {
                stopped = 1;
                break;
            }
            if (how == 1) {
                first = at[k];
                end = k == ranges - 1 ? size[i] : at[k + 1];
            } else if (how == 2) {
                first = k * target;
                end = size[i] - first < target ? size[i] : first + target;
            } else {
                first = 0;
                end = size[i];
            }
            own[r] = i;
            begin[r] = first;
            len[r] = end - first;
            split[r] = how != 0;
            weigh[r] = split_weight(len[r], delete_bytes[i], delete_files[i], open_cost);
        }
        used += count[i];
    }
    Py_END_ALLOW_THREADS
    if (stopped) {
        PyObject *made[] = {owner, start, length, is_split, weight};
        clear_all(made, 5);
        result = Py_NewRef(Py_None);
    } else {
        result = Py_BuildValue("(NNNNN)", owner, start, length, is_split, weight);
    }
done:
    PyBuffer_Release(&sizes);
    PyBuffer_Release(&splittable);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&flat);
    PyBuffer_Release(&deletes);
    PyBuffer_Release(&delete_counts);
    PyBuffer_Release(&flag);
    return result;
}

/* A run's share of its file's records (BaseScanTaskGroup / ScanTaskUtil: length / file size * records,
 * in doubles, truncated), and all of its file's delete bytes counted with its length. */
static inline int64_t run_rows(int64_t length, int64_t file_size, int64_t records) {
    return file_size > 0 ? (int64_t)(((double)length / (double)file_size) * (double)records) : records;
}

PyObject *kernels_merge_bins(PyObject *self, PyObject *args) {
    Py_buffer bins_view, owner_view, start_view, length_view, split_view, sizes_view, records_view, deletes_view, flag;
    long long n_bins;
    Stop stop = {NULL, 0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*Ly*y*y*y*d", &bins_view, &owner_view, &start_view, &length_view,
                          &split_view, &n_bins, &sizes_view, &records_view, &deletes_view, &flag, &stop.deadline))
        return NULL;
    stop.flag = flag.len > 0 ? flag.buf : NULL;
    Py_ssize_t n = bins_view.len / 8, n_files = sizes_view.len / 8;
    const int64_t *bins = bins_view.buf, *owner = owner_view.buf, *start = start_view.buf, *length = length_view.buf,
                  *file_size = sizes_view.buf, *file_records = records_view.buf, *delete_bytes = deletes_view.buf;
    const uint8_t *is_split = split_view.buf;
    const char *bad = NULL;
    if (owner_view.len / 8 != n || start_view.len / 8 != n || length_view.len / 8 != n || split_view.len != n ||
        n_bins < 0 || records_view.len / 8 != n_files || deletes_view.len / 8 != n_files)
        bad = "columns of different lengths";
    for (Py_ssize_t i = 0; bad == NULL && i < n; i++) {
        if (bins[i] < 0 || bins[i] >= n_bins) bad = "a bin out of range";
        else if (owner[i] < 0 || owner[i] >= n_files) bad = "a range of no file";
    }
    if (bad != NULL) {
        PyErr_Format(PyExc_ValueError, "merge_bins: %s", bad);
        goto done;
    }
    int64_t *first = calloc((size_t)n_bins + 1, 8), *order = malloc((size_t)(n ? n : 1) * 8);
    /* the outputs: task offsets, the runs' file, start, length and is_split, each task's bytes and rows */
    enum { TASKS, FILE_OF, START, LENGTH, SPLIT, BYTES, ROWS, OUTPUTS };
    const Py_ssize_t sizes[OUTPUTS] = {(Py_ssize_t)(n_bins + 1) * 8, n * 8, n * 8, n * 8, n,
                                       (Py_ssize_t)n_bins * 8, (Py_ssize_t)n_bins * 8};
    PyObject *out[OUTPUTS] = {NULL};
    void *buf[OUTPUTS] = {NULL};
    int made = first != NULL && order != NULL;
    for (int k = 0; made && k < OUTPUTS; k++) made = (out[k] = new_bytes(sizes[k], &buf[k])) != NULL;
    if (!made) {
        free(first);
        free(order);
        clear_all(out, OUTPUTS);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    void *t = buf[TASKS], *rf = buf[FILE_OF], *rs = buf[START], *rl = buf[LENGTH], *rx = buf[SPLIT],
         *tb = buf[BYTES], *tr = buf[ROWS];
    int64_t runs = 0;
    int stopped = 0;
    Py_BEGIN_ALLOW_THREADS
    /* a stable counting sort by bin: within a bin, ranges keep their order */
    for (Py_ssize_t i = 0; i < n; i++) first[bins[i] + 1]++;
    for (int64_t b = 0; b < n_bins; b++) first[b + 1] += first[b];
    int64_t *next = (int64_t *)t;  /* borrowed as each bin's fill position, then rewritten as task offsets */
    memcpy(next, first, (size_t)(n_bins + 1) * 8);
    for (Py_ssize_t i = 0; i < n; i++) order[next[bins[i]]++] = i;
    /* runs: a split continues the previous range when both are splits of one file in one bin and touch */
    int64_t *tasks_at = (int64_t *)t, *file = rf, *begin = rs, *len = rl;
    uint8_t *split = rx;
    for (int64_t b = 0; b <= n_bins; b++) tasks_at[b] = -1;
    int64_t bin = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (stop_at(&stop, k + 1)) {
            stopped = 1;
            break;
        }
        int64_t i = order[k];
        while (bin < n_bins && k >= first[bin + 1]) bin++;
        if (k == first[bin]) {
            tasks_at[bin] = runs;  /* a bin's first range always starts a run */
        } else if (is_split[i] && split[runs - 1] && owner[i] == file[runs - 1] &&
                   begin[runs - 1] + len[runs - 1] == start[i]) {
            len[runs - 1] += length[i];
            continue;
        }
        file[runs] = owner[i];
        begin[runs] = start[i];
        len[runs] = length[i];
        split[runs] = is_split[i];
        runs++;
    }
    tasks_at[n_bins] = runs;
    for (int64_t b = n_bins - 1; b >= 0; b--)
        if (tasks_at[b] < 0) tasks_at[b] = tasks_at[b + 1];  /* (an empty bin: no task has none, but be exact) */
    int64_t *bytes_of = tb, *rows_of = tr;
    for (int64_t b = 0; b < n_bins; b++) {  /* CombinedScanTask.sizeBytes and estimatedRowsCount */
        int64_t size = 0, rows = 0;
        for (int64_t k = tasks_at[b]; k < tasks_at[b + 1]; k++) {
            size += len[k] + delete_bytes[file[k]];
            rows += run_rows(len[k], file_size[file[k]], file_records[file[k]]);
        }
        bytes_of[b] = size;
        rows_of[b] = rows;
    }
    Py_END_ALLOW_THREADS
    free(first);
    free(order);
    if (stopped) {
        clear_all(out, OUTPUTS);
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (_PyBytes_Resize(&out[FILE_OF], runs * 8) < 0 || _PyBytes_Resize(&out[START], runs * 8) < 0 ||
        _PyBytes_Resize(&out[LENGTH], runs * 8) < 0 || _PyBytes_Resize(&out[SPLIT], runs) < 0) {
        clear_all(out, OUTPUTS);
        goto done;
    }
    result = Py_BuildValue("(NNNNNNN)", out[TASKS], out[FILE_OF], out[START], out[LENGTH], out[SPLIT], out[BYTES],
                           out[ROWS]);
done:
    PyBuffer_Release(&bins_view);
    PyBuffer_Release(&owner_view);
    PyBuffer_Release(&start_view);
    PyBuffer_Release(&length_view);
    PyBuffer_Release(&split_view);
    PyBuffer_Release(&sizes_view);
    PyBuffer_Release(&records_view);
    PyBuffer_Release(&deletes_view);
    PyBuffer_Release(&flag);
    return result;
}
