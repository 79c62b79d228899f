// SPDX-License-Identifier: MIT
/*
 * symbolize/symbolize_py names a code object that is gone (its address taken by another, as a
 * module body's is by the next module's) from the note BPF saved of it (include/py_proc_config.h,
 * struct pbp_code_note): from the text BPF copied, or from the strings it points at while they
 * hold; never from a note of another object, never with a line. Fake 3.11 code objects in this
 * process (tests/lib/fake_python.h).
 */
#include <errno.h>

#include "fake_python.h"
#include "symbolize/symbolize_py.h"
#include "testlib.h"

/* What the note callback answers: one note for one (pid, address, checksum), or none. */
struct note_answer {
	bool have;
	pid_t pid;
	uint64_t code_addr;
	uint32_t checksum;
	struct pbp_code_note note;
	unsigned asked;
};

static int note_of(void *context, pid_t pid, uint64_t code_addr, uint32_t checksum, struct pbp_code_note *note)
{
	struct note_answer *answer = context;

	answer->asked++;
	if (!answer->have || answer->pid != pid || answer->code_addr != code_addr || answer->checksum != checksum)
		return -ENOENT;
	*note = answer->note;
	return 0;
}

/* The note BPF would have saved of fake code object index before it went (text copied when asked). */
static struct note_answer answer_for(const struct fake_python *fake, size_t index, bool text)
{
	const struct py_offsets *off = &fake->python.config.off;
	struct pbp_py_frame frame = fake_python_frame(fake, index, 0);
	struct note_answer answer = { .have = true, .pid = getpid(), .code_addr = frame.code_addr,
				      .checksum = frame.checksum };
	const char *file = (const char *)fake->files[index] + off->unicode_ascii_data;
	const char *name = (const char *)fake->names[index] + off->unicode_ascii_data;

	answer.note.filename_addr = (uint64_t)(uintptr_t)fake->files[index];
	answer.note.name_addr = (uint64_t)(uintptr_t)fake->names[index];
	answer.note.filename_identity = fake_python_string_identity(off, fake->files[index]);
	answer.note.name_identity = fake_python_string_identity(off, fake->names[index]);
	answer.note.firstlineno = (int32_t)index + 1;
	answer.note.argcount = 0;
	if (text) {
		answer.note.flags = PBP_NOTE_FILE_TEXT | PBP_NOTE_NAME_TEXT;
		answer.note.filename_len = (uint32_t)strlen(file);
		answer.note.name_len = (uint32_t)strlen(name);
		memcpy(answer.note.file_tail, file, strlen(file));
		memcpy(answer.note.name_head, name, strlen(name));
	}
	return answer;
}

/* Code object 0 taken over: its address now holds code object 1's fields. */
static void take_over_code_0(struct fake_python *fake)
{
	memcpy(fake->codes[0], fake->codes[1], 1024);
}

/* Resolves code object 0's frame (started: a line is looked for) with answer as the notes. */
static int resolve_code_0(struct fake_python *fake, struct pbp_py_frame frame, struct note_answer *answer,
			  struct pf_frame *out, struct symbolize_py_stats *stats)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	int err;

	assert_non_null(cache);
	symbolize_py_cache_set_notes(cache, note_of, answer);
	err = symbolize_py_resolve(cache, getpid(), &fake->python.config, frame.code_addr, frame.checksum,
				   frame.instr_offset, out);
	/* the names are the cache's: kept past it */
	if (err == 0) {
		static char file[PBP_NOTE_FILE_BYTES + 8], name[PBP_NOTE_NAME_BYTES + 8];

		snprintf(file, sizeof(file), "%s", out->file);
		snprintf(name, sizeof(name), "%s", out->name);
		out->file = file;
		out->name = name;
	}
	symbolize_py_cache_stats(cache, stats);
	symbolize_py_cache_free(cache);
	return err;
}

/* One test's code objects, code object 0's frame as BPF sent it, and the note BPF saved of it. */
struct noted_case {
	struct fake_python fake;
	struct pbp_py_frame code_0;
	struct note_answer answer;
	struct symbolize_py_stats stats;
	struct pf_frame frame;
};

static int set_up(void **state, bool text)
{
	struct noted_case *test = calloc(1, sizeof(*test));

	if (!test)
		return -1;
	fake_python_init(&test->fake, 2);
	/* started: a line is looked for */
	test->code_0 = fake_python_frame(&test->fake, 0, test->fake.python.config.off.code_code_adaptive + 4);
	test->answer = answer_for(&test->fake, 0, text);
	*state = test;
	return 0;
}

static int set_up_with_text(void **state)
{
	return set_up(state, true);
}

static int set_up_without_text(void **state)
{
	return set_up(state, false);
}

static int tear_down(void **state)
{
	struct noted_case *test = *state;

	fake_python_free(&test->fake);
	free(test);
	return 0;
}

static int resolve(struct noted_case *test)
{
	return resolve_code_0(&test->fake, test->code_0, &test->answer, &test->frame, &test->stats);
}

static void a_live_object_needs_no_note(void **state)
{
	struct noted_case *test = *state;

	assert_int_equal(resolve(test), 0);
	assert_string_equal(test->frame.file, "fake_0.py");
	assert_int_equal(test->answer.asked, 0);
	assert_int_equal(test->stats.noted, 0);
}

static void a_gone_object_is_named_from_its_text(void **state)
{
	struct noted_case *test = *state;
	uint32_t header = test->fake.python.config.off.unicode_ascii_data;

	take_over_code_0(&test->fake);
	/* the strings are gone too (2.7 frees a code object's file name with it): the text is enough */
	memset(test->fake.files[0], 0, header);
	memset(test->fake.names[0], 0, header);
	assert_int_equal(resolve(test), 0);
	assert_string_equal(test->frame.file, "fake_0.py");
	assert_string_equal(test->frame.name, "function_0");
	assert_int_equal(test->frame.line, -1);
	assert_int_equal(test->frame.function_line, 1);
	assert_int_equal(test->stats.noted, 1);
}

static void a_long_file_name_keeps_its_end(void **state)
{
	struct noted_case *test = *state;
	char path[400], shown[PBP_NOTE_FILE_BYTES + 8];

	memset(path, 'd', sizeof(path));
	snprintf(path + 300, sizeof(path) - 300, "/module.py");
	test->answer.note.filename_len = (uint32_t)strlen(path);
	memcpy(test->answer.note.file_tail, path + strlen(path) - PBP_NOTE_FILE_BYTES, PBP_NOTE_FILE_BYTES);
	take_over_code_0(&test->fake);
	assert_int_equal(resolve(test), 0);
	snprintf(shown, sizeof(shown), "...%s", path + strlen(path) - PBP_NOTE_FILE_BYTES);
	assert_string_equal(test->frame.file, shown);
}

static void strings_without_text_are_read_while_they_hold(void **state)
{
	struct noted_case *test = *state;

	take_over_code_0(&test->fake);
	assert_int_equal(resolve(test), 0);
	assert_string_equal(test->frame.file, "fake_0.py");
	assert_string_equal(test->frame.name, "function_0");
	assert_int_equal(test->frame.line, -1);
	/* the file name's string taken by another: not named from it */
	memcpy(test->fake.files[0] + test->fake.python.config.off.unicode_ascii_data, "other", 5);
	assert_int_equal(resolve(test), -ESTALE);
}

static void a_note_of_another_object_is_refused(void **state)
{
	struct noted_case *test = *state;

	test->answer.note.firstlineno = 7; /* not what the checksum was taken of */
	take_over_code_0(&test->fake);
	assert_int_equal(resolve(test), -ESTALE);
	assert_int_equal(test->stats.noted, 0);
	test->answer.have = false; /* no note at all (pushed out): as before notes */
	assert_int_equal(resolve(test), -ESTALE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_live_object_needs_no_note, set_up_with_text, tear_down),
		cmocka_unit_test_setup_teardown(a_gone_object_is_named_from_its_text, set_up_with_text, tear_down),
		cmocka_unit_test_setup_teardown(a_long_file_name_keeps_its_end, set_up_with_text, tear_down),
		cmocka_unit_test_setup_teardown(strings_without_text_are_read_while_they_hold, set_up_without_text,
						tear_down),
		cmocka_unit_test_setup_teardown(a_note_of_another_object_is_refused, set_up_with_text, tear_down),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
