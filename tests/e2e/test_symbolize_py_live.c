/* SPDX-License-Identifier: MIT */
/*
 * Symbolizing live Python frames: every interpreter on the machine runs
 * tests/scripts/linetable_target.py, parked in Outer.inner; the test finds
 * the innermost frames from the thread state as BPF would (py_discover's
 * config), and checks file, qualified name, line and columns of what
 * symbolize_py_resolve returns, the -ESTALE refusal, bad addresses, and that
 * answers survive the process's exit from the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "symbolize/symbolize_py.h"
#include "python/py_discover.h"
#include "proc/target_mem.h"
#include "testlib.h"

#define TARGET_SCRIPT "linetable_target.py"
#define PARK_MARKER "# parked here"
#define WALK_MAX_FRAMES 32

/* Where the script parks: the marker's line, and the columns of the call on it. */
struct park_site {
	int line;
	int call_column, call_end_column;
};

static void find_park_site(struct park_site *site)
{
	char path[PATH_MAX + 64], line[512];
	FILE *file;
	int number = 0;

	snprintf(path, sizeof(path), "%s/tests/scripts/" TARGET_SCRIPT, test_source_dir());
	file = fopen(path, "r");
	assert_non_null(file);
	site->line = -1;
	while (fgets(line, sizeof(line), file)) {
		char *marker = strstr(line, PARK_MARKER), *call, *close;

		number++;
		if (!marker)
			continue;
		call = strstr(line, "sys.stdin.readline()");
		assert_non_null(call);
		close = strchr(call, ')');
		site->line = number;
		site->call_column = (int)(call - line);
		site->call_end_column = (int)(close + 1 - line);
		break;
	}
	fclose(file);
	assert_true(site->line > 0);
}

struct target_process {
	pid_t pid;
	FILE *to_stdin;
	FILE *from_stdout;
	uint64_t inner_code_addr; /* id() of Outer.inner's code object, as the script says */
};

/* `command SCRIPT` with pipes on stdin and stdout; exec keeps the pid Python's. */
static void start_target(const char *command, struct target_process *target)
{
	char shell_command[PATH_MAX + 1200], line[256];
	int in_pipe[2], out_pipe[2];
	unsigned long long code_id = 0;

	snprintf(shell_command, sizeof(shell_command), "exec %s %s/tests/scripts/" TARGET_SCRIPT, command,
		 test_source_dir());
	/* Close-on-exec, so that later targets do not hold this one's stdin open past our exit. */
	assert_int_equal(pipe2(in_pipe, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out_pipe, O_CLOEXEC), 0);
	target->pid = fork();
	assert_true(target->pid >= 0);
	if (target->pid == 0) {
		dup2(in_pipe[0], 0);
		dup2(out_pipe[1], 1);
		close(in_pipe[0]);
		close(in_pipe[1]);
		close(out_pipe[0]);
		close(out_pipe[1]);
		execl("/bin/sh", "sh", "-c", shell_command, (char *)NULL);
		_exit(127);
	}
	close(in_pipe[0]);
	close(out_pipe[1]);
	target->to_stdin = fdopen(in_pipe[1], "w");
	target->from_stdout = fdopen(out_pipe[0], "r");
	assert_non_null(target->to_stdin);
	assert_non_null(target->from_stdout);
	assert_non_null(fgets(line, sizeof(line), target->from_stdout));
	assert_int_equal(sscanf(line, "ready %llu", &code_id), 1);
	target->inner_code_addr = code_id;
	/* From the write to the blocking readline() takes microseconds; leave plenty. */
	usleep(300 * 1000);
}

static void stop_target(struct target_process *target)
{
	int status;

	if (target->pid <= 0)
		return;
	kill(target->pid, SIGKILL);
	waitpid(target->pid, &status, 0);
	fclose(target->to_stdin);
	fclose(target->from_stdout);
	target->pid = 0;
}

/* What BPF would send for one frame. */
struct walked_frame {
	uint64_t code_addr;
	uint32_t instr_offset;
	uint32_t checksum;
};

static void read_checked_u64(pid_t pid, uint64_t addr, uint64_t *value)
{
	assert_int_equal(target_mem_read_u64(pid, addr, value), 0);
}

/* What BPF computes of a string for a code object's identity. */
static uint64_t live_string_identity(pid_t pid, const struct py_offsets *off, uint64_t string_addr)
{
	uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };

	assert_true(py_string_span(off) > 0);
	assert_true(target_mem_read(pid, string_addr + py_string_span_low(off), span, py_string_span(off)) >= 0);
	return py_string_identity(off, span);
}

static uint32_t live_checksum(pid_t pid, const struct py_offsets *off, uint64_t code_addr)
{
	int32_t firstlineno, argcount;
	uint64_t filename_addr, name_addr, filename_hash, name_hash;

	assert_int_equal(target_mem_read_s32(pid, code_addr + off->code_firstlineno, &firstlineno), 0);
	assert_int_equal(target_mem_read_s32(pid, code_addr + off->code_argcount, &argcount), 0);
	read_checked_u64(pid, code_addr + off->code_filename, &filename_addr);
	read_checked_u64(pid, code_addr + py_code_shown_name(off), &name_addr);
	filename_hash = live_string_identity(pid, off, filename_addr);
	name_hash = live_string_identity(pid, off, name_addr);
	return py_code_checksum(firstlineno, argcount, filename_addr, name_addr, filename_hash, name_hash);
}

static void read_frame_instruction(pid_t pid, const struct py_offsets *off, uint64_t frame, uint64_t code_addr,
				   struct walked_frame *out)
{
	if (off->lasti_kind == PY_LASTI_PTR) {
		uint64_t instr;

		read_checked_u64(pid, frame + off->frame_lasti, &instr);
		out->instr_offset = (uint32_t)(instr - code_addr);
	} else {
		int32_t lasti;

		assert_int_equal(target_mem_read_s32(pid, frame + off->frame_lasti, &lasti), 0);
		out->instr_offset = (uint32_t)lasti;
	}
}

/* The main (only) thread's Python frames, innermost first, the way the BPF walk goes. */
static size_t walk_main_thread(pid_t pid, const struct py_proc_config *config, struct walked_frame *frames,
			       size_t max)
{
	const struct py_offsets *off = &config->off;
	uint64_t interp, tstate, frame;
	size_t count = 0;

	read_checked_u64(pid, config->interp_head_addr, &interp);
	read_checked_u64(pid, interp + off->interp_threads_head, &tstate);
	read_checked_u64(pid, tstate + off->tstate_frame, &frame);
	if (off->frame_link == PY_FRAME_LINK_CFRAME)
		read_checked_u64(pid, frame + off->cframe_current_frame, &frame);
	for (int hops = 0; frame && count < max && hops < 256; hops++) {
		uint64_t code_addr;
		uint8_t owner = 0;

		if (off->frame_owner != PY_OFF_NONE)
			assert_int_equal(target_mem_read(pid, frame + off->frame_owner, &owner, 1), 0);
		read_checked_u64(pid, frame + off->frame_code, &code_addr);
		code_addr &= off->code_ptr_mask;
		if ((off->frame_owner == PY_OFF_NONE || owner < off->owner_boundary) && code_addr) {
			frames[count].code_addr = code_addr;
			frames[count].checksum = live_checksum(pid, off, code_addr);
			read_frame_instruction(pid, off, frame, code_addr, &frames[count]);
			count++;
		}
		read_checked_u64(pid, frame + off->frame_previous, &frame);
	}
	return count;
}

static bool ends_with(const char *text, const char *suffix)
{
	size_t text_len = strlen(text), suffix_len = strlen(suffix);

	return text_len >= suffix_len && strcmp(text + text_len - suffix_len, suffix) == 0;
}

/* The raw instruction offset of a frame that has not started: it must resolve to co_firstlineno. */
static uint32_t not_started_offset(const struct py_offsets *off)
{
	return off->lasti_kind == PY_LASTI_PTR ? off->code_code_adaptive - 2 : UINT32_MAX;
}

static void check_interpreter(const char *label)
{
	char command[1024], err[512];
	struct target_process target = { 0 };
	struct py_target discovered;
	struct walked_frame frames[WALK_MAX_FRAMES];
	struct pf_frame frame, again, first_line;
	struct symbolize_py_stats stats;
	struct park_site site;
	struct symbolize_py_cache *cache;
	size_t count;
	bool qualified, unicode_names;
	const char *const *level_names;
	static const char *const ascii_levels[] = { "level_a", "level_b", "level_c" };
	static const char *const unicode_levels[] = { "level_\xc3\xa9", "level_\xe5\x90\x8d",
						      "level_\xf0\xa0\x80\x80" };
	int rc;

	if (!test_python_command(label, command, sizeof(command))) {
		print_message("python %s is not installed\n", label);
		skip();
	}
	find_park_site(&site);
	start_target(command, &target);
	rc = py_discover_runtime(target.pid, &discovered, err, sizeof(err));
	if (rc != 0) {
		stop_target(&target);
		fail_msg("py_discover_runtime(%s): %d %s", label, rc, err);
	}
	qualified = discovered.config.off.code_qualname != PY_OFF_NONE;
	unicode_names = discovered.major >= 3;
	level_names = unicode_names ? unicode_levels : ascii_levels;

	count = walk_main_thread(target.pid, &discovered.config, frames, WALK_MAX_FRAMES);
	assert_true(count >= 5); /* inner, three levels, <module> */
	assert_int_equal(frames[0].code_addr, target.inner_code_addr);

	cache = symbolize_py_cache_new();
	assert_non_null(cache);

	/* The parked frame: file, qualified name, line, and columns where the version has them. */
	rc = symbolize_py_resolve(cache, target.pid, &discovered.config, frames[0].code_addr, frames[0].checksum,
			   frames[0].instr_offset, &frame);
	assert_int_equal(rc, 0);
	assert_int_equal(frame.kind, PF_FRAME_PYTHON);
	assert_true(ends_with(frame.file, "/" TARGET_SCRIPT));
	assert_string_equal(frame.name, qualified ? "Outer.inner" : "inner");
	assert_int_equal(frame.line, site.line);
	assert_int_equal(frame.end_line, site.line);
	if (qualified) { /* 3.11+: the call expression's span */
		assert_int_equal(frame.column, site.call_column);
		assert_int_equal(frame.end_column, site.call_end_column);
	} else {
		assert_int_equal(frame.column, -1);
		assert_int_equal(frame.end_column, -1);
	}
	assert_int_equal(frame.opcode, -1);

	/* The callers, whose names take 1, 2 and 4 bytes a character on Python 3. */
	for (size_t level = 0; level < 3; level++) {
		struct pf_frame caller;
		const struct walked_frame *walked = &frames[1 + level];

		assert_int_equal(symbolize_py_resolve(cache, target.pid, &discovered.config, walked->code_addr,
					       walked->checksum, walked->instr_offset, &caller),
				 0);
		assert_string_equal(caller.name, level_names[level]);
		assert_string_equal(caller.file, "<string>");
		assert_int_equal(caller.line, 2 * (int)level + 2); /* each "return ..." line of CHAIN */
	}

	/* A frame that has not started yet is on the def line. */
	assert_int_equal(symbolize_py_resolve(cache, target.pid, &discovered.config, frames[0].code_addr, frames[0].checksum,
				       not_started_offset(&discovered.config.off), &first_line),
			 0);
	assert_int_equal(first_line.line, site.line - 3); /* "def inner(self):" */
	assert_ptr_equal(first_line.name, frame.name);    /* the same cached code object */

	/* A checksum that is not the live object's: the address was reused. Remembered, still refused. */
	assert_int_equal(symbolize_py_resolve(cache, target.pid, &discovered.config, frames[0].code_addr,
				       frames[0].checksum ^ 1, frames[0].instr_offset, &again),
			 -ESTALE);
	assert_int_equal(symbolize_py_resolve(cache, target.pid, &discovered.config, frames[0].code_addr,
				       frames[0].checksum ^ 1, frames[0].instr_offset, &again),
			 -ESTALE);
	/* Addresses that hold no code object: an error, never a crash. */
	rc = symbolize_py_resolve(cache, target.pid, &discovered.config, 0x10, frames[0].checksum, 0, &again);
	assert_true(rc < 0 && rc != -ESTALE);
	rc = symbolize_py_resolve(cache, target.pid, &discovered.config, 0xfffffffffffff000ull, frames[0].checksum, 0,
			   &again);
	assert_true(rc < 0 && rc != -ESTALE);
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.stale, 2);
	assert_int_equal(stats.read_errors, 2);
	assert_int_equal(stats.hits, 0);

	/* Gone: the cache still answers, from memory only. */
	stop_target(&target);
	assert_int_equal(symbolize_py_resolve(cache, discovered.pid, &discovered.config, frames[0].code_addr,
				       frames[0].checksum, frames[0].instr_offset, &again),
			 0);
	assert_ptr_equal(again.file, frame.file);
	assert_ptr_equal(again.name, frame.name);
	assert_int_equal(again.line, frame.line);
	assert_int_equal(again.column, frame.column);
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.hits, 1);

	/* Forgotten: it has to be read again, and cannot be. The frame filled earlier stays valid. */
	symbolize_py_forget_pid(cache, discovered.pid);
	rc = symbolize_py_resolve(cache, discovered.pid, &discovered.config, frames[0].code_addr, frames[0].checksum,
			   frames[0].instr_offset, &again);
	assert_true(rc < 0 && rc != -ESTALE);
	assert_string_equal(frame.name, qualified ? "Outer.inner" : "inner");
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.read_errors, 3);
	print_message("python %s: %s %s:%d:%d\n", label, frame.name, frame.file, frame.line, frame.column);
	symbolize_py_cache_free(cache);
}

#define INTERPRETER_TEST(fn, label)                                                                   \
	static void fn(void **state)                                                                  \
	{                                                                                             \
		(void)state;                                                                          \
		check_interpreter(label);                                                             \
	}

INTERPRETER_TEST(test_live_2_7, "2.7")
INTERPRETER_TEST(test_live_3_6, "3.6")
INTERPRETER_TEST(test_live_3_7, "3.7")
INTERPRETER_TEST(test_live_3_8, "3.8")
INTERPRETER_TEST(test_live_3_9, "3.9")
INTERPRETER_TEST(test_live_3_10, "3.10")
INTERPRETER_TEST(test_live_3_11, "3.11")
INTERPRETER_TEST(test_live_3_11_static, "3.11-static")
INTERPRETER_TEST(test_live_3_12, "3.12")
INTERPRETER_TEST(test_live_3_13, "3.13")
INTERPRETER_TEST(test_live_3_14, "3.14")
INTERPRETER_TEST(test_live_3_15, "3.15")

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_2_7),
		cmocka_unit_test(test_live_3_6),
		cmocka_unit_test(test_live_3_7),
		cmocka_unit_test(test_live_3_8),
		cmocka_unit_test(test_live_3_9),
		cmocka_unit_test(test_live_3_10),
		cmocka_unit_test(test_live_3_11),
		cmocka_unit_test(test_live_3_11_static),
		cmocka_unit_test(test_live_3_12),
		cmocka_unit_test(test_live_3_13),
		cmocka_unit_test(test_live_3_14),
		cmocka_unit_test(test_live_3_15),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
