/* planner_service._kernels: the method table (see kernels.h). */
#include "kernels.h"

static PyMethodDef methods[] = {
    {"avro_framing", kernels_avro_framing, METH_VARARGS,
     "avro_framing(data) -> ([(key, value), ...], sync, [(record count, offset, size), ...])\n"
     "An Avro container file's header metadata, sync marker and blocks (offsets into data); ValueError\n"
     "when the framing is bad (planner_service/metadata/avro_columns.py)."},
    {"decode_avro", kernels_decode_avro, METH_VARARGS,
     "decode_avro(nodes, children, kinds, blocks) -> [(validity, values, offsets, length, nulls), ...]\n"
     "Decode Avro datum blocks [(bytes, record count), ...] by a compiled schema program into one column\n"
     "per output slot (planner_service/metadata/avro_columns.py builds the program)."},
    {"pack_bins", kernels_pack_bins, METH_VARARGS,
     "pack_bins(weights, target, lookback, largest_first, stop_flag, deadline, breaks=None) -> bytes of int64 bin\n"
     "numbers, one per item, or None when stopped; breaks (a byte per item) marks the items that start a group\n"
     "packed apart (planner_service/splitting/bin_packing.py)."},
    {"count_ranges", kernels_count_ranges, METH_VARARGS,
     "count_ranges(sizes, splittable, offset_counts, flat_offsets, target) -> how many ranges split_files makes\n"
     "(planner_service/splitting/splits.py)."},
    {"json_indent", kernels_json_indent, METH_VARARGS,
     "json_indent(chunk, state) -> bytes: the next chunk of a compact JSON text, indented as orjson's\n"
     "OPT_INDENT_2 writes it; `state` (a bytearray of 8 zero bytes at first) carries on to the next chunk\n"
     "(planner_service/wire/json_indent.py)."},
    {"render_rows", kernels_render_rows, METH_VARARGS,
     "render_rows(length, parts, prefix=b'') -> bytes: prefix, then `length` rows rendered by `parts`\n"
     "(literals and columns) joined by commas (planner_service/wire/json_rows.py describes the parts)."},
    {"split_files", kernels_split_files, METH_VARARGS,
     "split_files(sizes, splittable, offset_counts, flat_offsets, target, delete_bytes, delete_counts,\n"
     "open_file_cost, stop_flag, deadline) -> (owner, start, length, is_split, weight) as bytes of int64\n"
     "(is_split: uint8), or None when stopped (planner_service/splitting/splits.py)."},
    {"split_weights", kernels_split_weights, METH_VARARGS,
     "split_weights(lengths, delete_bytes, delete_counts, open_file_cost) -> bytes of int64: each range's weight\n"
     "for packing, as split_files weighs it (planner_service/splitting/splits.py)."},
    {"merge_bins", kernels_merge_bins, METH_VARARGS,
     "merge_bins(bins, owner, start, length, is_split, n_bins, file_sizes, record_counts, delete_bytes,\n"
     "stop_flag, deadline) -> (task offsets, file, start, length, is_split, task size bytes, task estimated\n"
     "rows) of the merged ranges, or None when stopped (planner_service/splitting/combine.py)."},
    {"split_paths", kernels_split_paths, METH_VARARGS,
     "split_paths(offsets, data, directories) -> (directory ids, name offsets, name data) as bytes (int32,\n"
     "int64, UTF-8); `directories` (bytes -> id) is extended with new ones (planner_service/metadata/paths.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT, .m_name = "_kernels", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
