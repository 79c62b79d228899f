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

static struct pbp_py_frame started_frame(const struct fake_python *fake)
{
	return fake_python_frame(fake, 0, fake->python.config.off.code_code_adaptive + 4);
}

static void a_live_object_needs_no_note(void **state)
{
	struct fake_python fake;
	struct note_answer answer;
	struct symbolize_py_stats stats;
	struct pf_frame frame;

	(void)state;
	fake_python_init(&fake, 2);
	answer = answer_for(&fake, 0, true);
	assert_int_equal(resolve_code_0(&fake, started_frame(&fake), &answer, &frame, &stats), 0);
	assert_string_equal(frame.file, "fake_0.py");
	assert_int_equal(answer.asked, 0);
	assert_int_equal(stats.noted, 0);
	fake_python_free(&fake);
}

static void a_gone_object_is_named_from_its_text(void **state)
{
	struct pbp_py_frame code_0;
	struct fake_python fake;
	struct note_answer answer;
	struct symbolize_py_stats stats;
	struct pf_frame frame;

	(void)state;
	fake_python_init(&fake, 2);
	code_0 = started_frame(&fake);
	answer = answer_for(&fake, 0, true);
	take_over_code_0(&fake);
	/* the strings are gone too (2.7 frees a code object's file name with it): the text is enough */
	memset(fake.files[0], 0, fake.python.config.off.unicode_ascii_data);
	memset(fake.names[0], 0, fake.python.config.off.unicode_ascii_data);
	assert_int_equal(resolve_code_0(&fake, code_0, &answer, &frame, &stats), 0);
	assert_string_equal(frame.file, "fake_0.py");
	assert_string_equal(frame.name, "function_0");
	assert_int_equal(frame.line, -1);
	assert_int_equal(frame.function_line, 1);
	assert_int_equal(stats.noted, 1);
	fake_python_free(&fake);
}

static void a_long_file_name_keeps_its_end(void **state)
{
	char path[400], shown[PBP_NOTE_FILE_BYTES + 8];
	struct pbp_py_frame code_0;
	struct fake_python fake;
	struct note_answer answer;
	struct symbolize_py_stats stats;
	struct pf_frame frame;

	(void)state;
	fake_python_init(&fake, 2);
	code_0 = started_frame(&fake);
	answer = answer_for(&fake, 0, true);
	memset(path, 'd', sizeof(path));
	snprintf(path + 300, sizeof(path) - 300, "/module.py");
	answer.note.filename_len = (uint32_t)strlen(path);
	memcpy(answer.note.file_tail, path + strlen(path) - PBP_NOTE_FILE_BYTES, PBP_NOTE_FILE_BYTES);
	take_over_code_0(&fake);
	assert_int_equal(resolve_code_0(&fake, code_0, &answer, &frame, &stats), 0);
	snprintf(shown, sizeof(shown), "...%s", path + strlen(path) - PBP_NOTE_FILE_BYTES);
	assert_string_equal(frame.file, shown);
	fake_python_free(&fake);
}

static void strings_without_text_are_read_while_they_hold(void **state)
{
	struct pbp_py_frame code_0;
	struct fake_python fake;
	struct note_answer answer;
	struct symbolize_py_stats stats;
	struct pf_frame frame;

	(void)state;
	fake_python_init(&fake, 2);
	code_0 = started_frame(&fake);
	answer = answer_for(&fake, 0, false);
	take_over_code_0(&fake);
	assert_int_equal(resolve_code_0(&fake, code_0, &answer, &frame, &stats), 0);
	assert_string_equal(frame.file, "fake_0.py");
	assert_string_equal(frame.name, "function_0");
	assert_int_equal(frame.line, -1);
	/* the file name's string taken by another: not named from it */
	memcpy(fake.files[0] + fake.python.config.off.unicode_ascii_data, "other", 5);
	assert_int_equal(resolve_code_0(&fake, code_0, &answer, &frame, &stats), -ESTALE);
	fake_python_free(&fake);
}

static void a_note_of_another_object_is_refused(void **state)
{
	struct pbp_py_frame code_0;
	struct fake_python fake;
	struct note_answer answer;
	struct symbolize_py_stats stats;
	struct pf_frame frame;

	(void)state;
	fake_python_init(&fake, 2);
	code_0 = started_frame(&fake);
	answer = answer_for(&fake, 0, true);
	answer.note.firstlineno = 7; /* not what the checksum was taken of */
	take_over_code_0(&fake);
	assert_int_equal(resolve_code_0(&fake, code_0, &answer, &frame, &stats), -ESTALE);
	assert_int_equal(stats.noted, 0);
	answer.have = false; /* no note at all (pushed out): as before notes */
	assert_int_equal(resolve_code_0(&fake, code_0, &answer, &frame, &stats), -ESTALE);
	fake_python_free(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_live_object_needs_no_note),
		cmocka_unit_test(a_gone_object_is_named_from_its_text),
		cmocka_unit_test(a_long_file_name_keeps_its_end),
		cmocka_unit_test(strings_without_text_are_read_while_they_hold),
		cmocka_unit_test(a_note_of_another_object_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
