# Run inside gdb (tools/gen_asyncio_layouts.sh): prints one C initializer row of
# py_asyncio_table.inc for the CPython whose libpython and _asyncio extension gdb has loaded,
# each field the first of its expressions that this version's debug information evaluates.
import gdb

FIELDS = [
    # _asyncio's TaskObj (Modules/_asynciomodule.c: FutureObj_HEAD then the task's own)
    ("task_size", ["sizeof(TaskObj)"]),
    ("task_callback0", ["&((TaskObj*)0)->task_callback0"]),
    ("task_callbacks", ["&((TaskObj*)0)->task_callbacks"]),
    ("task_coro", ["&((TaskObj*)0)->task_coro"]),
    ("task_name", ["&((TaskObj*)0)->task_name"]),
    ("ob_type", ["&((PyObject*)0)->ob_type"]),
    ("tp_flags", ["&((PyTypeObject*)0)->tp_flags"]),
    ("tp_base", ["&((PyTypeObject*)0)->tp_base"]),
    ("gen_iframe", ["&((PyGenObject*)0)->gi_iframe"]),
    ("gen_frame_state", ["&((PyGenObject*)0)->gi_frame_state"]),
    ("frame_executable", ["&((_PyInterpreterFrame*)0)->f_executable", "&((_PyInterpreterFrame*)0)->f_code"]),
    ("frame_instr_ptr", ["&((_PyInterpreterFrame*)0)->instr_ptr", "&((_PyInterpreterFrame*)0)->prev_instr"]),
    ("frame_stacktop", ["&((_PyInterpreterFrame*)0)->stacktop"]),
    ("frame_localsplus", ["&((_PyInterpreterFrame*)0)->localsplus"]),
    ("cfunction_ml", ["&((PyCFunctionObject*)0)->m_ml"]),
    ("methoddef_name", ["&((PyMethodDef*)0)->ml_name"]),
    ("cfunction_self", ["&((PyCFunctionObject*)0)->m_self"]),
    ("method_self", ["&((PyMethodObject*)0)->im_self"]),
    ("function_closure", ["&((PyFunctionObject*)0)->func_closure"]),
    ("cell_ref", ["&((PyCellObject*)0)->ob_ref"]),
    ("var_size", ["&((PyVarObject*)0)->ob_size"]),
    ("tuple_item", ["&((PyTupleObject*)0)->ob_item"]),
    ("list_item", ["&((PyListObject*)0)->ob_item"]),
    ("interp_modules", ["&((PyInterpreterState*)0)->imports.modules", "&((PyInterpreterState*)0)->modules"]),
    ("module_dict", ["&((PyModuleObject*)0)->md_dict"]),
    ("dict_keys", ["&((PyDictObject*)0)->ma_keys"]),
    ("dict_values", ["&((PyDictObject*)0)->ma_values"]),
    ("keys_log2_index_bytes", ["&((PyDictKeysObject*)0)->dk_log2_index_bytes"]),
    ("keys_kind", ["&((PyDictKeysObject*)0)->dk_kind"]),
    ("keys_nentries", ["&((PyDictKeysObject*)0)->dk_nentries"]),
    ("keys_indices", ["&((PyDictKeysObject*)0)->dk_indices"]),
    ("long_lv_tag", ["&((PyLongObject*)0)->long_value.lv_tag", "&((PyLongObject*)0)->ob_base.ob_size"]),
    ("long_ob_digit", ["&((PyLongObject*)0)->long_value.ob_digit", "&((PyLongObject*)0)->ob_digit"]),
    # listing a thread's tasks: the sets of all tasks (a WeakSet's set of weak references; 3.12+
    # also a plain set of eager ones), each task's loop, and the loop the thread runs (3.11,
    # 3.12: in its thread-state dict, 3.11 in a holder; 3.13: in the thread state). -1: none.
    ("task_loop", ["&((TaskObj*)0)->task_loop"]),
    ("set_mask", ["&((PySetObject*)0)->mask"]),
    ("set_table", ["&((PySetObject*)0)->table"]),
    ("weakref_object", ["&((PyWeakReference*)0)->wr_object"]),
    ("tstate_dict", ["&((PyThreadState*)0)->dict"]),
    ("tstate_running_loop", ["&((_PyThreadStateImpl*)0)->asyncio_running_loop", "-1"]),
    ("holder_loop", ["&((PyRunningLoopHolder*)0)->rl_loop", "-1"]),
    # gi_frame_state (pycore_frame.h): never started; suspended in an await (3.13:
    # FRAME_SUSPENDED_YIELD_FROM; 3.11, 3.12: FRAME_SUSPENDED, which a plain yield shares)
    ("owned_by_generator", ["(int)FRAME_OWNED_BY_GENERATOR"]),
    ("state_created", ["(int)FRAME_CREATED"]),
    ("state_yield_from", ["(int)FRAME_SUSPENDED_YIELD_FROM", "(int)FRAME_SUSPENDED"]),
]


def value(expressions):
    for expression in expressions:
        try:
            return int(gdb.parse_and_eval("(long)(%s)" % expression))
        except gdb.error:
            continue
    raise SystemExit("gen_asyncio_layouts: none of %s evaluates" % expressions)


minor = int(gdb.convenience_variable("minor"))
cells = ["{ .minor = %d" % minor] + [".%s = %d" % (name, value(exprs)) for name, exprs in FIELDS]
print(",\n\t  ".join(cells) + " },")
