/* The service's compiled loops (planner_service._kernels): Avro blocks decoded into Arrow-style columns
 * (avro_columns.c), first-fit bin packing with lookback (bin_packing.c), files split into ranges and
 * ranges merged into tasks (splitting.c), rows of columns rendered as JSON (json_rows.c) and JSON indented
 * as it streams (json_indent.c), and file paths split into interned directories and names (paths.c). All run
 * without the GIL, so they use every core. */
#ifndef SCAN_PLANNER_KERNELS_H
#define SCAN_PLANNER_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

PyObject *kernels_avro_framing(PyObject *self, PyObject *args);
PyObject *kernels_decode_avro(PyObject *self, PyObject *args);
PyObject *kernels_pack_bins(PyObject *self, PyObject *args);
PyObject *kernels_render_rows(PyObject *self, PyObject *args);
PyObject *kernels_json_indent(PyObject *self, PyObject *args);
PyObject *kernels_count_ranges(PyObject *self, PyObject *args);
PyObject *kernels_split_files(PyObject *self, PyObject *args);
PyObject *kernels_split_weights(PyObject *self, PyObject *args);
PyObject *kernels_merge_bins(PyObject *self, PyObject *args);
PyObject *kernels_split_paths(PyObject *self, PyObject *args);

/* What stops a long compiled loop early: a flag another thread sets (a byte of a bytearray: the plan was
 * cancelled) and a deadline on CLOCK_MONOTONIC, Python's time.monotonic() (0: none). Loops look every
 * STOP_EVERY steps; a stopped kernel returns None and the caller says why (planner_service/splitting/stop.py). */
typedef struct {
    const volatile uint8_t *flag;
    double deadline;
} Stop;

#define STOP_EVERY 65536

static inline int stop_now(const Stop *stop) {
    if (stop->flag != NULL && *stop->flag) return 1;
    if (stop->deadline > 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)now.tv_sec + (double)now.tv_nsec * 1e-9 > stop->deadline) return 1;
    }
    return 0;
}

/* Whether loop step `step` should stop: it looks only every STOP_EVERY steps. */
static inline int stop_at(const Stop *stop, int64_t step) { return (step & (STOP_EVERY - 1)) == 0 && stop_now(stop); }

/* A growing byte buffer (malloc'd). */
typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static inline int buf_grow(Buf *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, size_t extra) { return b->len + extra <= b->cap ? 0 : buf_grow(b, extra); }

/* An Avro long (a zig-zag varint) at *p, read no further than `end`: AVRO_LONG_OK with *p past it, or why
not (the caller names the error). */
enum { AVRO_LONG_OK = 0, AVRO_LONG_ENDS_EARLY = -1, AVRO_LONG_TOO_LONG = -2 };

static inline int avro_long(const uint8_t **p, const uint8_t *end, int64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return AVRO_LONG_ENDS_EARLY;
        uint8_t byte = *(*p)++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
            return AVRO_LONG_OK;
        }
    }
    return AVRO_LONG_TOO_LONG;
}

static inline int buf_append(Buf *b, const void *data, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

#endif
