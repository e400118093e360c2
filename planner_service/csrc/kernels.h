/* The service's two compiled loops (planner_service._kernels): Avro blocks decoded into Arrow-style
 * columns (avro_columns.c) and first-fit bin packing with lookback (bin_packing.c). Both run without
 * the GIL, so manifests decode on every core. */
#ifndef SCAN_PLANNER_KERNELS_H
#define SCAN_PLANNER_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *kernels_decode_avro(PyObject *self, PyObject *args);
PyObject *kernels_pack_bins(PyObject *self, PyObject *args);

#endif
