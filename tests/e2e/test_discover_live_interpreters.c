// SPDX-License-Identifier: MIT
/*
 * Discovery of CPython in live processes: for every interpreter on the
 * machine, start tests/scripts/marker_threads.py, discover it, and check the
 * discovered config by walking the target's own memory the way BPF will:
 * interpreters -> thread states -> frames -> code objects -> names.
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

#define SCRIPT "tests/scripts/marker_threads.py"
/* The sid chroot, where tests/pythons/provision-sid.sh puts it (PYBPFPROF_SID_DIR, as there). */
static const char *sid_root(void)
{
	const char *dir = getenv("PYBPFPROF_SID_DIR");

	return dir && *dir ? dir : "/var/cache/pybpfprof/sid";
}
#define RUN_IN_SID "tests/pythons/run-python.sh"
/* Bounds on walks of target memory: far above what the script creates. */
#define MAX_INTERPS 16
#define MAX_TSTATES 256
#define MAX_FRAMES 128
#define MAX_NAME 256
/* Guards against a hung child, not a measurement. */
#define READY_WAIT_MS 60000
#define DISCOVER_RETRIES 500

/* ---------------------------------------------------------------- children */

/* The script's report: "main <ident>", "thread <ident>", "ready". */
struct report {
	unsigned long long main_ident, thread_ident;
};

static int read_report(int fd, struct report *report)
{
	char buf[512];
	size_t used = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (used < sizeof(buf) - 1) {
		ssize_t got;

		if (poll(&pfd, 1, READY_WAIT_MS) <= 0)
			return -1;
		got = read(fd, buf + used, sizeof(buf) - 1 - used);
		if (got <= 0)
			return -1;
		used += (size_t)got;
		buf[used] = 0;
		if (strstr(buf, "ready\n"))
			break;
	}
	if (sscanf(buf, "main %llu\nthread %llu\nready", &report->main_ident, &report->thread_ident) != 2)
		return -1;
	return 0;
}

/* --------------------------------------------------------- the interpreters */

enum launch { LAUNCH_DIRECT, LAUNCH_PYENV, LAUNCH_SID_CHROOT };

struct interpreter {
	const char *label;
	const char *path_glob;   /* on the host, under pyenv's versions, or inside the sid chroot */
	enum launch launch;
	unsigned major, minor;
};

static const struct interpreter interpreters[] = {
	{ "2.7", "/2.7.*/bin/python2.7", LAUNCH_PYENV, 2, 7 },
	{ "3.6", "/3.6.*/bin/python3.6", LAUNCH_PYENV, 3, 6 },
	{ "3.7", "/3.7.*/bin/python3.7", LAUNCH_PYENV, 3, 7 },
	{ "3.8", "/3.8.*/bin/python3.8", LAUNCH_PYENV, 3, 8 },
	{ "3.9", "/3.9.*/bin/python3.9", LAUNCH_PYENV, 3, 9 },
	{ "3.10", "/3.10.*/bin/python3.10", LAUNCH_PYENV, 3, 10 },
	{ "3.11", "/3.11.*/bin/python3.11", LAUNCH_PYENV, 3, 11 },
	{ "3.12", "/3.12.*/bin/python3.12", LAUNCH_PYENV, 3, 12 },
	{ "3.13", "/3.13.*/bin/python3.13", LAUNCH_PYENV, 3, 13 },
	{ "3.11 static (Debian)", "/usr/bin/python3.11", LAUNCH_DIRECT, 3, 11 },
	{ "3.14 (sid chroot)", "/usr/bin/python3.14", LAUNCH_SID_CHROOT, 3, 14 },
	{ "3.15 (sid chroot)", "/usr/bin/python3.15", LAUNCH_SID_CHROOT, 3, 15 },
	{ "3.13 (sid chroot)", "/usr/bin/python3.13", LAUNCH_SID_CHROOT, 3, 13 },
};

/* The interpreter's path, or 0 if it is not on this machine. */
static int find_interpreter(const struct interpreter *interp, char *path, size_t pathlen)
{
	char pattern[512], stamp[512];
	glob_t found;
	int ok;

	snprintf(pattern, sizeof(pattern), "%s%s",
		 interp->launch == LAUNCH_SID_CHROOT ? sid_root()
		 : interp->launch == LAUNCH_PYENV    ? test_pyenv_versions()
						     : "",
		 interp->path_glob);
	if (glob(pattern, 0, NULL, &found))
		return 0;
	ok = found.gl_pathc > 0 && access(found.gl_pathv[0], X_OK) == 0;
	if (ok)
		snprintf(path, pathlen, "%s", found.gl_pathv[0]);
	globfree(&found);
	snprintf(stamp, sizeof(stamp), "%s.stamp", sid_root());
	if (ok && interp->launch == LAUNCH_SID_CHROOT)
		ok = access(stamp, F_OK) == 0 && access(RUN_IN_SID, X_OK) == 0;
	return ok;
}

static pid_t start_script(const struct interpreter *interp, const char *path, int *stdout_fd)
{
	char version[16];

	if (interp->launch == LAUNCH_SID_CHROOT) {
		snprintf(version, sizeof(version), "%u.%u", interp->major, interp->minor);
		/* run-python.sh copies the script into the chroot and execs chroot, which execs python:
		 * the pid stays the Python process's */
		return spawn((char *const[]){ RUN_IN_SID, version, SCRIPT, NULL }, stdout_fd);
	}
	return spawn((char *const[]){ (char *)path, SCRIPT, NULL }, stdout_fd);
}

/* The line of "def NAME(" in the script, 1-based; what co_firstlineno must say. */
static int def_line(const char *function)
{
	size_t len;
	char *text = (char *)read_whole_file(SCRIPT, &len);
	char needle[64];
	int line = 1, found = -1;

	assert_non_null(text);
	snprintf(needle, sizeof(needle), "def %s(", function);
	for (char *at = text; *at; at++) {
		if (!strncmp(at, needle, strlen(needle)) && (at == text || at[-1] == '\n')) {
			found = line;
			break;
		}
		if (*at == '\n')
			line++;
	}
	free(text);
	return found;
}

/* ------------------------------------------ walking the target with the config */

static uint64_t read_ptr(pid_t pid, uint64_t addr)
{
	uint64_t value = 0;

	assert_int_equal(target_mem_read_u64(pid, addr, &value), 0);
	return value;
}

/* A code object's name: PEP 393 compact ASCII (3.x) or PyStringObject (2.7). */
static void read_name(pid_t pid, const struct py_offsets *off, uint64_t str, char *out, size_t outlen)
{
	int64_t length = 0;
	uint64_t data;

	if (off->string_kind == PY_STRING_BYTES) {
		assert_int_equal(target_mem_read(pid, str + off->bytes_size, &length, sizeof(length)), 0);
		data = str + off->bytes_data;
	} else {
		uint32_t state = 0;

		assert_int_equal(target_mem_read(pid, str + off->unicode_state, &state, sizeof(state)), 0);
		assert_int_equal(target_mem_read(pid, str + off->unicode_length, &length, sizeof(length)), 0);
		/* compact (bit 5) and ascii (bit 6): our names are plain identifiers */
		assert_true((state >> 5 & 1) && (state >> 6 & 1));
		data = str + off->unicode_ascii_data;
	}
	assert_true(length > 0 && (size_t)length < outlen);
	assert_int_equal(target_mem_read(pid, data, out, (size_t)length), 0);
	out[length] = 0;
}

static uint64_t innermost_frame(pid_t pid, const struct py_offsets *off, uint64_t tstate)
{
	uint64_t link = read_ptr(pid, tstate + off->tstate_frame);

	if (off->frame_link == PY_FRAME_LINK_CFRAME)
		return link ? read_ptr(pid, link + off->cframe_current_frame) : 0;
	return link;
}

struct found_function {
	const char *name;
	int firstlineno, argcount;
	uint32_t version; /* co_version where config->code_version is known, else 0 */
	int found;
};

/* Walks the thread's frames from the innermost; records the frame named want->name. */
static void find_function(pid_t pid, const struct py_proc_config *config, uint64_t tstate,
			  struct found_function *want)
{
	const struct py_offsets *off = &config->off;
	uint64_t frame = innermost_frame(pid, off, tstate);

	for (int depth = 0; frame && depth < MAX_FRAMES && !want->found; depth++) {
		uint64_t code;
		char name[MAX_NAME];

		if (off->frame_owner != PY_OFF_NONE) {
			uint8_t owner = 0;

			assert_int_equal(target_mem_read(pid, frame + off->frame_owner, &owner, 1), 0);
			if (owner >= off->owner_boundary) {
				frame = read_ptr(pid, frame + off->frame_previous);
				continue;
			}
		}
		code = read_ptr(pid, frame + off->frame_code) & off->code_ptr_mask;
		assert_true(code != 0);
		read_name(pid, off, read_ptr(pid, code + off->code_name), name, sizeof(name));
		if (!strcmp(name, want->name)) {
			int32_t firstlineno = 0, argcount = 0;

			assert_int_equal(target_mem_read_s32(pid, code + off->code_firstlineno, &firstlineno), 0);
			assert_int_equal(target_mem_read_s32(pid, code + off->code_argcount, &argcount), 0);
			if (config->code_version != PY_OFF_NONE)
				assert_int_equal(target_mem_read(pid, code + config->code_version, &want->version,
								 sizeof(want->version)),
						 0);
			want->firstlineno = firstlineno;
			want->argcount = argcount;
			want->found = 1;
		}
		frame = read_ptr(pid, frame + off->frame_previous);
	}
}

/* The thread state whose thread_id is ident, searched in every interpreter; 0 if none. */
static uint64_t find_tstate(pid_t pid, const struct py_proc_config *config, unsigned long long ident)
{
	const struct py_offsets *off = &config->off;
	uint64_t interp = read_ptr(pid, config->interp_head_addr);

	for (int i = 0; interp && i < MAX_INTERPS; i++) {
		uint64_t tstate = read_ptr(pid, interp + off->interp_threads_head);

		for (int t = 0; tstate && t < MAX_TSTATES; t++) {
			if (read_ptr(pid, tstate + off->tstate_thread_id) == ident)
				return tstate;
			tstate = read_ptr(pid, tstate + off->tstate_next);
		}
		interp = read_ptr(pid, interp + off->interp_next);
	}
	return 0;
}

static int discover_with_retries(pid_t pid, struct py_target *target, char *err, size_t errlen)
{
	int rc = -EAGAIN;

	for (int attempt = 0; attempt < DISCOVER_RETRIES && rc == -EAGAIN; attempt++) {
		rc = py_discover_runtime(pid, target, err, errlen);
		if (rc == -EAGAIN)
			sleep_ms(20);
	}
	return rc;
}

/* Its code object's co_version (0 where the version has none). */
static uint32_t assert_function_in_thread(pid_t pid, const struct py_proc_config *config, uint64_t tstate,
					  const char *name, int argcount)
{
	struct found_function want = { .name = name };
	int line = def_line(name);

	find_function(pid, config, tstate, &want);
	if (!want.found)
		fail_msg("%s not found in its thread's frames", name);
	assert_int_equal(want.firstlineno, line);
	assert_int_equal(want.argcount, argcount);
	return want.version;
}

/*
 * co_version (3.12+) is where BPF's cache of verified code objects reads it: a counter the
 * interpreter stamps on each code object it makes, so the two functions' (compiled with their
 * module, one after the other) are not 0, differ, and lie close together; other ints there
 * (co_nlocals, co_framesize, co_nfreevars) would be small, equal or 0.
 */
static void assert_code_versions(const struct interpreter *interp, const struct py_proc_config *config,
				 uint32_t main_version, uint32_t thread_version)
{
	uint32_t gap = main_version > thread_version ? main_version - thread_version : thread_version - main_version;

	if (interp->major == 3 && interp->minor >= 12) {
		assert_true(config->code_version != PY_OFF_NONE);
		print_message("%s: co_version %u and %u\n", interp->label, main_version, thread_version);
		assert_true(main_version != 0 && thread_version != 0);
		assert_true(gap != 0 && gap < 64);
		assert_true(main_version > 100 && thread_version > 100); /* the imports before made many */
	} else {
		assert_int_equal(config->code_version, PY_OFF_NONE);
	}
}

/*
 * 3.12 (pyenv's, with its .symtab) and 3.13: code_stamp_addr is the counter every new code object's co_version is taken from (BPF
 * trusts a code object's identity unread while it stands still): it is past both functions'
 * co_versions (they were made from it) and not far past (the script made few code objects
 * since). Another word of the interpreter state would hardly sit in that window.
 */
static void assert_code_stamp(pid_t pid, const struct interpreter *interp, const struct py_proc_config *config,
			      uint32_t main_version, uint32_t thread_version)
{
	uint32_t newest = main_version > thread_version ? main_version : thread_version, counter = 0;

	if (interp->major != 3 || (interp->minor != 12 && interp->minor != 13)) {
		assert_true(config->code_stamp_addr == 0);
		return;
	}
	assert_true(config->code_stamp_addr != 0);
	assert_int_equal(target_mem_read(pid, config->code_stamp_addr, &counter, sizeof(counter)), 0);
	print_message("%s: code-object counter %u, newest marker co_version %u\n", interp->label, counter, newest);
	assert_true(counter > newest);
	assert_true(counter - newest < 20000);
}

static void assert_gil_plausible(pid_t pid, const struct py_target *target, uint64_t main_tstate,
				 uint64_t thread_tstate)
{
	uint64_t holder;
	int32_t locked = -1;

	assert_true(target->config.flags & PY_PROC_HAS_GIL_HOLDER);
	holder = read_ptr(pid, target->config.gil_holder_addr);
	if (target->major == 2) {
		/* 2.7's holder is the current thread state, cleared while the GIL is free
		 * (as now: both threads sleep) */
		assert_int_equal(target->config.gil_locked_addr, target->config.gil_holder_addr);
		assert_true(holder == 0 || holder == main_tstate || holder == thread_tstate);
		return;
	}
	/* only two threads ever ran Python, so the last holder is one of them */
	assert_true(holder == main_tstate || holder == thread_tstate);
	assert_int_equal(target_mem_read_s32(pid, target->config.gil_locked_addr, &locked), 0);
	assert_true(locked == 0 || locked == 1);
}

/* Whether one of pid's mappings of file has "python" in its name. */
static bool maps_file_named_python(pid_t pid, const struct proc_file_id *file)
{
	struct proc_maps maps;
	bool named = false;

	assert_int_equal(proc_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps.count; i++)
		named |= proc_map_is_file(&maps.maps[i], file) && strstr(maps.maps[i].path, "python") != NULL;
	proc_maps_free(&maps);
	return named;
}

static void test_interpreter(void **state)
{
	const struct interpreter *interp = *state;
	char path[4096], err[1024];
	struct py_target target;
	struct report report;
	uint64_t main_tstate, thread_tstate;
	uint32_t main_version, thread_version;
	unsigned expected_micro;
	int fd, rc;
	pid_t pid;

	if (!find_interpreter(interp, path, sizeof(path))) {
		print_message("CPython %s not installed here\n", interp->label);
		skip();
	}
	pid = start_script(interp, path, &fd);
	assert_true(pid > 0);
	rc = read_report(fd, &report);
	close(fd);
	assert_int_equal(rc, 0);

	rc = discover_with_retries(pid, &target, err, sizeof(err));
	if (rc)
		fail_msg("py_discover_runtime(%s): %d: %s", interp->label, rc, err);
	assert_int_equal(target.pid, pid);
	assert_int_equal(target.major, interp->major);
	assert_int_equal(target.minor, interp->minor);
	assert_int_equal(target.config.version_hex >> 16, interp->major << 8 | interp->minor);
	if (interp->launch == LAUNCH_PYENV &&
	    sscanf(path + strlen(test_pyenv_versions()), "/%*u.%*u.%u/", &expected_micro) == 1)
		assert_int_equal(target.micro, expected_micro);
	assert_true(maps_file_named_python(pid, &target.runtime_file));

	main_tstate = find_tstate(pid, &target.config, report.main_ident);
	thread_tstate = find_tstate(pid, &target.config, report.thread_ident);
	assert_true(main_tstate != 0);
	assert_true(thread_tstate != 0);
	assert_true(main_tstate != thread_tstate);
	main_version = assert_function_in_thread(pid, &target.config, main_tstate, "marker_main", 2);
	thread_version = assert_function_in_thread(pid, &target.config, thread_tstate, "marker_thread", 1);
	assert_code_versions(interp, &target.config, main_version, thread_version);
	assert_code_stamp(pid, interp, &target.config, main_version, thread_version);
	assert_gil_plausible(pid, &target, main_tstate, thread_tstate);
	kill_children();
}

/* ---- a process mapping thousands of tiny ELF files ---- */

#define TINY_FILES 2000

/* A process of nobody's mapping each of the TINY_FILES copies in dir executable. */
static pid_t spawn_tiny_mapper(const char *dir)
{
	const struct test_library_copies copies = { dir, 0, TINY_FILES };
	pid_t pid = test_fork_as_nobody(test_map_library_copies, &copies);

	add_child(pid);
	return pid;
}

/*
 * Each discovery of a process mapping 2,000 tiny ELF files reads a bounded share of
 * them (the rest the next time), however many it maps: the thread that drains the
 * ring does bounded work, and the other processes' verdicts stay cached.
 */
static void test_many_files_bounded_reads(void **state)
{
	char dir[64], library[128], copy[128], err[4096];
	char *build[] = { "cc", "-shared", "-nostdlib", "-Wl,--build-id=none", "-o", library, "-x", "c",
			  "/dev/null", NULL };
	struct py_runtime_file_cache *cache = NULL;
	struct py_runtime_file_stats first, second;
	struct py_target target;
	uint8_t *image;
	size_t len;
	pid_t pid;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/pybpfprof-tiny-elfs.%d", (int)getpid());
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(library, sizeof(library), "%s/tiny.so", dir);
	if (run_capture(build, err, sizeof(err)) != 0)
		fail_msg("building %s: %s", library, err);
	image = read_whole_file(library, &len);
	assert_non_null(image);
	for (size_t i = 0; i < TINY_FILES; i++) {
		snprintf(copy, sizeof(copy), "%s/lib%zu.so", dir, i);
		assert_int_equal(write_whole_file(copy, image, len), 0);
		chmod(copy, 0644);
	}
	free(image);
	pid = spawn_tiny_mapper(dir);
	assert_int_equal(py_runtime_file_cache_new(&cache, PY_RUNTIME_FILE_CACHE_DEFAULT), 0);
	assert_int_equal(py_discover_runtime_cached(cache, pid, &target, err, sizeof(err)), -ENOEXEC);
	py_runtime_file_cache_stats(cache, &first);
	assert_int_equal(py_discover_runtime_cached(cache, pid, &target, err, sizeof(err)), -ENOEXEC);
	py_runtime_file_cache_stats(cache, &second);
	kill_children();
	py_runtime_file_cache_free(cache);
	for (size_t i = 0; i < TINY_FILES; i++) {
		snprintf(copy, sizeof(copy), "%s/lib%zu.so", dir, i);
		unlink(copy);
	}
	unlink(library);
	rmdir(dir);
	print_message("files read: %" PRIu64 " then %" PRIu64 " more; %" PRIu64 " left unread\n", first.examined,
		      second.examined - first.examined, second.skipped);
	assert_true(first.examined <= 64);
	assert_true(second.examined - first.examined <= 64);
	assert_true(second.skipped > 0);
}

/*
 * A process stopped right at exec (PTRACE_TRACEME): the dynamic loader has not
 * mapped libpython yet, or, for a static build, the runtime is not initialised.
 * Either way the caller must be told to retry, not that this is not Python.
 */
static void test_fresh_exec_is_retry(void **state)
{
	const struct interpreter *interp = *state;
	char path[4096], err[1024];
	struct py_target target;
	int status = 0;
	pid_t pid;

	if (!find_interpreter(interp, path, sizeof(path))) {
		print_message("CPython %s not installed here\n", interp->label);
		skip();
	}
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(path, (char *const[]){ path, "-c", "pass", NULL });
		_exit(127);
	}
	assert_true(pid > 0);
	add_child(pid);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP);

	assert_int_equal(py_discover_runtime(pid, &target, err, sizeof(err)), -EAGAIN);
	assert_non_null(strstr(err, "retry"));
	kill_children();
}

struct debug_case {
	const char *dump;
	uint32_t version_hex;
	uint32_t thread_id, frame_owner, frame_code, compact_data;
	uint64_t code_ptr_mask;
	uint32_t gc_collecting; /* interpreter_state.gc + gc.collecting */
};

static int teardown_children(void **state)
{
	(void)state;
	kill_children();
	return 0;
}

/* Named after the interpreter, so a failure says which one. */
#define INTERPRETER_TEST(i, label) \
	{ "discover CPython " label, test_interpreter, NULL, teardown_children, (void *)&interpreters[i] }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_many_files_bounded_reads, teardown_children),
		{ "fresh exec: libpython not mapped yet", test_fresh_exec_is_retry, NULL, teardown_children,
		  (void *)&interpreters[7] },
		{ "fresh exec: static runtime not initialised", test_fresh_exec_is_retry, NULL, teardown_children,
		  (void *)&interpreters[9] },
		INTERPRETER_TEST(0, "2.7"), INTERPRETER_TEST(1, "3.6"), INTERPRETER_TEST(2, "3.7"),
		INTERPRETER_TEST(3, "3.8"), INTERPRETER_TEST(4, "3.9"), INTERPRETER_TEST(5, "3.10"),
		INTERPRETER_TEST(6, "3.11"), INTERPRETER_TEST(7, "3.12"), INTERPRETER_TEST(8, "3.13"),
		INTERPRETER_TEST(9, "3.11 static (Debian)"), INTERPRETER_TEST(10, "3.14 (sid chroot)"),
		INTERPRETER_TEST(11, "3.15 (sid chroot)"), INTERPRETER_TEST(12, "3.13 (sid chroot)"),
	};
	int failed = cmocka_run_group_tests_name("py_discover", tests, NULL, NULL);

	kill_children();
	return failed;
}
