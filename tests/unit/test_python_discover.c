// SPDX-License-Identifier: MIT
/*
 * target/py_discover and target/py_offsets in process: /proc/PID/maps parsed, the offsets table
 * and the _Py_DebugOffsets of 3.13-3.15 (tests/data/cpython-debug-offsets/) decoded, and the
 * refusals of a process that is gone or is not Python.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "child_procs.h"

#include "proc/proc_maps.h"
#include "python/py_discover.h"
#include "python/py_runtime_file.h"
#include "proc/target_mem.h"

/* Guards against a hung child, not a measurement. */
#define DISCOVER_RETRIES 500

/* ---------------------------------------------------------------- children */

/* ----------------------------------------------------------------- errors */

static void test_no_such_process(void **state)
{
	char err[256];
	struct py_target target;
	pid_t pid = fork();

	(void)state;
	if (pid == 0)
		_exit(0);
	assert_true(pid > 0);
	waitpid(pid, NULL, 0);
	assert_int_equal(py_discover_runtime(pid, &target, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "no such process"));
}

/* Whether some mapping of pid has a path containing name. */
static int maps_name(pid_t pid, const char *name)
{
	struct proc_maps maps;
	int found = 0;

	if (proc_maps_read(pid, &maps))
		return 0;
	for (size_t i = 0; i < maps.count && !found; i++)
		found = strstr(maps.maps[i].path, name) != NULL;
	proc_maps_free(&maps);
	return found;
}

static void test_not_python(void **state)
{
	char exe_link[64], exe[4096] = "", err[2048];
	struct py_target target;
	int fd;
	pid_t pid = spawn((char *const[]){ "/bin/sleep", "10", NULL }, &fd);

	(void)state;
	assert_true(pid > 0);
	close(fd);
	/* until exec and the dynamic loader are done the child's maps are still this test binary's */
	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", (int)pid);
	for (int attempt = 0; attempt < DISCOVER_RETRIES && !(strstr(exe, "sleep") && maps_name(pid, "libc.so"));
	     attempt++) {
		ssize_t len = readlink(exe_link, exe, sizeof(exe) - 1);

		exe[len > 0 ? len : 0] = 0;
		sleep_ms(10);
	}
	assert_non_null(strstr(exe, "sleep"));

	assert_int_equal(py_discover_runtime(pid, &target, err, sizeof(err)), -ENOEXEC);
	assert_non_null(strstr(err, "not a Python process"));
	assert_non_null(strstr(err, "searched"));
	assert_non_null(strstr(err, "sleep"));
	assert_non_null(strstr(err, "libc.so"));
	kill_children();
}

/* ---- a process mapping thousands of tiny ELF files ---- */

/* -------------------------------------------------------------- unit parts */

static void test_proc_maps_parse(void **state)
{
	static const char text[] =
		"00400000-00420000 r--p 00000000 08:01 1234 /usr/bin/python3.11\n"
		"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
		"7f1000000000-7f1000100000 r-xp 00010000 08:01 99 /opt/my dir/libpython3.9.so.1.0 (deleted)\n"
		"7f2000000000-7f2000001000 r--p 00000000 08:01 99 /opt/my dir/libpython3.9.so.1.0\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";
	FILE *stream = fmemopen((void *)text, sizeof(text) - 1, "r");
	struct proc_maps maps;
	const struct proc_map *first;

	(void)state;
	assert_non_null(stream);
	assert_int_equal(proc_maps_parse(stream, &maps), 0);
	fclose(stream);
	assert_int_equal(maps.count, 5);
	assert_int_equal(maps.maps[0].start, 0x400000);
	assert_int_equal(maps.maps[0].end, 0x420000);
	assert_string_equal(maps.maps[0].perms, "r--p");
	assert_string_equal(maps.maps[1].path, "");
	assert_string_equal(maps.maps[2].path, "/opt/my dir/libpython3.9.so.1.0");
	assert_int_equal(maps.maps[2].offset, 0x10000);
	assert_string_equal(maps.maps[4].path, "[stack]");
	first = proc_maps_first_of(&maps, "/opt/my dir/libpython3.9.so.1.0");
	assert_non_null(first);
	assert_int_equal(first->start, 0x7f1000000000);
	assert_string_equal(proc_maps_basename(first->path), "libpython3.9.so.1.0");
	proc_maps_free(&maps);
}

static void test_offsets_table(void **state)
{
	const struct py_offsets *off;

	(void)state;
	assert_null(py_offsets_for_version(3, 5));
	assert_null(py_offsets_for_version(3, 13)); /* read from the target instead */
	off = py_offsets_for_version(2, 7);
	assert_non_null(off);
	assert_int_equal(off->string_kind, PY_STRING_BYTES);
	assert_int_equal(off->runtime_interpreters_head, PY_OFF_NONE);
	off = py_offsets_for_version(3, 10);
	assert_non_null(off);
	assert_int_equal(off->lasti_kind, PY_LASTI_INT_UNITS);
	off = py_offsets_for_version(3, 11);
	assert_non_null(off);
	assert_int_equal(off->frame_link, PY_FRAME_LINK_CFRAME);
	assert_int_equal(off->owner_boundary, 255);
	off = py_offsets_for_version(3, 12);
	assert_non_null(off);
	assert_int_equal(off->owner_boundary, 3);
	assert_int_equal(off->unicode_ascii_data, 40);
	/* _status, whose bound_gilstate tells a thread's thread states apart, from 3.12 (0: none) */
	assert_int_equal(off->tstate_status, 24);
	for (unsigned minor = 6; minor <= 12; minor++) {
		off = py_offsets_for_version(3, minor);
		assert_non_null(off);
		if (minor < 12)
			assert_int_equal(off->tstate_status, 0);
		assert_int_equal(off->string_kind, PY_STRING_UNICODE);
		assert_true(off->frame_read_size > off->frame_previous && off->frame_read_size > off->frame_code);
		assert_non_null(py_gil_layout_for_version(3, minor));
		/* the collector's flag: gcmodule.c's static before 3.7, _PyRuntime's in 3.7-3.8, the interpreter's after */
		assert_int_equal(py_gc_layout_for_version(3, minor)->where,
				 minor < 7 ? PY_GC_STATIC_SYMBOL : minor < 9 ? PY_GC_IN_RUNTIME : PY_GC_IN_INTERP);
	}
	assert_int_equal(py_gc_layout_for_version(2, 7)->where, PY_GC_STATIC_SYMBOL);
}

/* Rebuilds the _Py_DebugOffsets blob from a decoded dump in tests/data. */
static int blob_from_dump(const char *name, uint8_t *blob, size_t bloblen, size_t *len)
{
	char path[1024], line[256];
	FILE *dump;

	snprintf(path, sizeof(path), "%s/cpython-debug-offsets/%s", testdata_dir(), name);
	dump = fopen(path, "r");
	if (!dump)
		return -1;
	memset(blob, 0, bloblen);
	*len = 0;
	while (fgets(line, sizeof(line), dump)) {
		unsigned at;
		char field[128], value[64];
		unsigned long long number;

		if (sscanf(line, "# sizeof(_Py_DebugOffsets) = %zu", len) == 1)
			continue;
		if (sscanf(line, " %u %127s %63s", &at, field, value) != 3 || at + 8 > bloblen)
			continue;
		if (!strcmp(field, "cookie"))
			memcpy(blob + at, "xdebugpy", 8);
		else if (sscanf(value, "%lli", &number) == 1)
			memcpy(blob + at, &number, 8);
	}
	fclose(dump);
	return *len ? 0 : -1;
}

struct debug_case {
	const char *dump;
	uint32_t version_hex;
	uint32_t thread_id, frame_owner, frame_code, compact_data;
	uint64_t code_ptr_mask;
	uint32_t gc_collecting; /* interpreter_state.gc + gc.collecting */
};

static void test_debug_offsets(void **state)
{
	const struct debug_case *c = *state;
	uint8_t blob[2048];
	size_t len;
	struct py_offsets off;
	struct py_gil_layout gil;
	struct py_gc_layout gc;
	uint32_t version_hex = 0;
	char err[256];

	if (blob_from_dump(c->dump, blob, sizeof(blob), &len))
		fail_msg("no readable %s in tests/data/cpython-debug-offsets", c->dump);
	assert_int_equal(py_offsets_from_debug(blob, len, &off, &version_hex, err, sizeof(err)), 0);
	assert_int_equal(version_hex, c->version_hex);
	assert_int_equal(off.tstate_thread_id, c->thread_id);
	assert_int_equal(off.tstate_status, 32);
	assert_int_equal(off.frame_owner, c->frame_owner);
	assert_int_equal(off.frame_code, c->frame_code);
	assert_int_equal(off.unicode_compact_data, c->compact_data);
	assert_int_equal(off.code_ptr_mask, c->code_ptr_mask);
	assert_int_equal(off.frame_link, PY_FRAME_LINK_DIRECT);
	assert_int_equal(off.lasti_kind, PY_LASTI_PTR);
	assert_int_equal(off.owner_boundary, 3);
	assert_true(off.frame_read_size > off.frame_owner);
	assert_int_equal(py_gil_layout_from_debug(blob, len, &gil, err, sizeof(err)), 0);
	assert_int_equal(gil.where, PY_GIL_VIA_INTERP_POINTER);
	assert_int_equal(gil.holder, 8);
	assert_int_equal(gil.locked, 16);
	/* only 3.15 says where a thread asks for the GIL */
	assert_int_equal(gil.requested, c->version_hex >= 0x30f0000 ? 40 : 0);
	assert_int_equal(py_gc_layout_from_debug(blob, len, &gc, err, sizeof(err)), 0);
	assert_int_equal(gc.where, PY_GC_IN_INTERP);
	assert_int_equal(gc.collecting, c->gc_collecting);

	/* too short for its own layout */
	assert_int_equal(py_offsets_from_debug(blob, len - 8, &off, NULL, err, sizeof(err)), -EINVAL);
	/* a future minor needs its layout added */
	blob[10] = 16;
	assert_int_equal(py_offsets_from_debug(blob, len, &off, NULL, err, sizeof(err)), -ENOTSUP);
	assert_non_null(strstr(err, "3.16"));
	/* not a debug-offsets blob at all */
	blob[0] = 'X';
	assert_int_equal(py_offsets_from_debug(blob, len, &off, NULL, err, sizeof(err)), -EINVAL);
}

static const struct debug_case debug_313 = { "py3.13.0.txt", 0x30d00f0, 152, 70, 0, 56, ~0ull, 7400 + 200 };
static const struct debug_case debug_314 = { "py3.14.10.txt", 0x30e0af0, 152, 74, 0, 56, ~3ull, 7408 + 192 };
static const struct debug_case debug_315 = { "py3.15.2.txt", 0x30f02f0, 176, 74, 0, 56, ~3ull, 7400 + 112 };

static int teardown_children(void **state)
{
	(void)state;
	kill_children();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_maps_parse),
		cmocka_unit_test(test_offsets_table),
		{ "debug offsets 3.13", test_debug_offsets, NULL, NULL, (void *)&debug_313 },
		{ "debug offsets 3.14", test_debug_offsets, NULL, NULL, (void *)&debug_314 },
		{ "debug offsets 3.15", test_debug_offsets, NULL, NULL, (void *)&debug_315 },
		cmocka_unit_test(test_no_such_process),
		cmocka_unit_test_teardown(test_not_python, teardown_children),
	};
	int failed = cmocka_run_group_tests_name("py_discover", tests, NULL, NULL);

	kill_children();
	return failed;
}
