// SPDX-License-Identifier: MIT
/*
 * The format registry and what the converters share, in process: every name, alias, extension
 * and magic resolves; the typed run data writes each file as the metadata lines did; collapsed
 * text keeps no terminal control of a target's; a subinterpreter's id shows in dump and top.
 */
#include "testlib.h"

#include <math.h>

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>

/* A thread sampled in a subinterpreter: dump says its interpreter id, top --by-state gives it a
 * row of its own (its GIL is another). */
static void interpreter_ids_shown(void **state)
{
	struct pf_frame frame = pf_frame_unlocated(PF_FRAME_PYTHON, "main.py", "spin");
	char tachyon[PATH_MAX], shown[16384];
	char *top_argv[] = { (char *)pybpfprof_binary(), "top", "--by-state", tachyon, NULL };
	char *dump_argv[] = { (char *)pybpfprof_binary(), "dump", "--samples", tachyon, NULL };
	struct pf_writer *writer;

	(void)state;
	FORMAT(tachyon, "%s/iid.bin", test_tmpdir());
	assert_int_equal(pf_writer_open(&writer, tachyon, format_registry_find_name("tachyon"), NULL), 0);
	for (uint64_t i = 0; i < 4; i++) {
		/* thread 8 in the main interpreter, then in interpreter 2 */
		struct pf_sample sample = { .pid = 7, .tid = 8, .iid = i < 2 ? 0 : 2, .timestamp_us = 1000 * (i + 2),
					    .status = PF_STATUS_ON_CPU, .metrics = PF_METRIC_TIME, .time_us = 1000,
					    .frame_count = 1, .frames = &frame };

		assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	}
	assert_int_equal(pf_writer_close(writer), 0);
	run_output(dump_argv, shown, sizeof(shown));
	assert_non_null(strstr(shown, " iid=0 tid=8 "));
	assert_non_null(strstr(shown, " iid=2 tid=8 "));
	run_output(top_argv, shown, sizeof(shown));
	print_message("%s", shown);
	assert_non_null(strstr(shown, "  0:8            "));
	assert_non_null(strstr(shown, "  0:8 (iid 2)    "));
}

/* Collapsed text is read in terminals and review tools: a target's name keeps no control byte,
 * no bidirectional override and no frame separator of its own. */
static void collapsed_escapes_terminal_controls(void **state)
{
	static const char hostile[] = "evil\x1b]0;title\x07\xe2\x80\xae" "gnp.exe\n;x";
	char path[PATH_MAX];
	struct pf_frame frames[2] = {
		pf_frame_unlocated(PF_FRAME_PYTHON, "main.py", "<module>"),
		pf_frame_unlocated(PF_FRAME_NATIVE, "lib.so", hostile),
	};
	struct pf_sample sample = { .pid = 1, .tid = 1, .metrics = PF_METRIC_TIME, .time_us = 1000,
				    .frame_count = 2, .frames = frames };
	struct pf_writer *writer;
	size_t len;
	char *text;

	(void)state;
	FORMAT(path, "%s/hostile.collapsed", test_tmpdir());
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("collapsed"), NULL), 0);
	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	assert_int_equal(pf_writer_close(writer), 0);
	text = (char *)read_whole_file(path, &len);
	assert_non_null(text);
	if (text)
		print_message("%s", text);
	assert_null(strchr(text, '\x1b'));
	assert_null(strchr(text, '\x07'));
	assert_null(strstr(text, "\xe2\x80\xae"));
	assert_string_equal(text, "main.py:<module>:0;evil\\x1b]0_title\\x07\\u202egnp.exe\\n_x_[n] 1000\n");
	free(text);
}

/* The registry answers every name, alias, extension and magic of the formats it lists. */
static void registry_lookups(void **state)
{
	static const struct {
		const char *name, *path, *canonical;
	} cases[] = {
		{ "mojo", "/tmp/a.mojo", "mojo" },
		{ "TACHYON", "/tmp/a.tachyon", "tachyon" },
		{ "bin", "x.BIN", "tachyon" },
		{ "collapsed", "a.folded", "collapsed" },
		{ "folded", "dir.v2/a.txt", "collapsed" },
		{ "flamegraph", "a.svg", "svg" },
		{ "pprof", "out.pb.gz", "pprof" },
		{ "PPROF", "x.pprof", "pprof" },
		{ "speedscope", "dir.d/app.speedscope.json", "speedscope" },
		{ "pstats", "a.pstats", "pstats" },
		{ "prof", "a.prof", "pstats" },
		/* the longest extension wins: not speedscope's ".json" */
		{ "gecko", "run.gecko.json", "gecko" },
		{ "gecko-gz", "run.gecko.json.gz", "gecko-gz" },
		{ "jsonl", "samples.jsonl", "jsonl" },
		{ "ndjson", "samples.ndjson", "jsonl" },
	};
	static const uint8_t tachyon_le[] = { 0x48, 0x43, 0x41, 0x54, 0 };
	char text[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pf_format *by_name = format_registry_find_name(cases[i].name);

		assert_non_null(by_name);
		assert_string_equal(by_name->name, cases[i].canonical);
		assert_ptr_equal(format_registry_find_path(cases[i].path), by_name);
		assert_non_null(by_name->writer_create);
		assert_non_null(by_name->default_file);
	}
	assert_null(format_registry_find_name("svgz"));
	assert_null(format_registry_find_name(NULL));
	assert_null(format_registry_find_path("/tmp/dir.mojo/noext"));
	assert_null(format_registry_find_path("a.yaml"));
	assert_string_equal(format_registry_find_magic("MOJ\x03", 4)->name, "mojo");
	assert_string_equal(format_registry_find_magic("TACH", 4)->name, "tachyon");
	assert_string_equal(format_registry_find_magic(tachyon_le, 4)->name, "tachyon");
	assert_null(format_registry_find_magic("MO", 2));
	assert_null(format_registry_find_magic("TAC", 3));
	assert_string_equal(format_registry_names(text, sizeof(text), ", ", " or "),
			    "mojo, tachyon, collapsed, svg, pprof, speedscope, pstats, gecko, gecko-gz or jsonl");
	assert_string_equal(format_registry_extensions(text, sizeof(text), true),
			    ".mojo, .bin/.tachyon, .collapsed/.folded/.txt, .svg, .pb.gz/.pprof, "
			    ".speedscope.json/.json, .pstats/.prof, .gecko.json, .gecko.json.gz, .jsonl/.ndjson");
	/* An extension with a dot in it matches the whole of it, not its last part. */
	assert_null(format_registry_find_path("archive.gz"));
	assert_string_equal(format_registry_extensions(text, 12, false), ".mojo, .bin");
}

/* One file of a recording's shape: its run data set typed, or as the metadata lines a
 * recording set before the typed calls existed. */
static void write_run(const char *path, const struct pf_format *format, bool typed, uint64_t errors)
{
	const struct pf_run_info info = { .interval_us = 100, .mode = "cpu", .multiprocess = true,
					  .frequency_hz = 10000, .start_time_us = 123456789 };
	const struct pf_python_version version = { 3, 12, 4 };
	const struct pf_run_totals totals = { .duration_us = 2500001, .samples = 640, .lost_samples = 3,
					      .truncated_stacks = 2, .read_faults = errors,
					      .unresolved_frames = 0 };
	const struct pf_frame frames[] = {
		{ PF_FRAME_PYTHON, "main.py", "<module>", 3, 3, 0, 9, 5, 0 },
		{ PF_FRAME_NATIVE, "/usr/lib/libc.so.6", "memcpy", -1, -1, -1, -1, -1, 0 },
	};
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer;
	char text[32];

	assert_int_equal(pf_writer_open(&writer, path, format, &options), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "austin", "3.7.0"), 0);
	if (typed) {
		assert_int_equal(pf_writer_set_run_info(writer, &info), 0);
	} else {
		assert_int_equal(pf_writer_set_metadata(writer, "interval", "100"), 0);
		assert_int_equal(pf_writer_set_metadata(writer, "mode", "cpu"), 0);
		assert_int_equal(pf_writer_set_metadata(writer, "multiprocess", "on"), 0);
	}
	assert_int_equal(pf_writer_set_metadata(writer, "pybpfprof", "9.9"), 0);
	if (!typed) {
		assert_int_equal(pf_writer_set_metadata(writer, "frequency", "10000"), 0);
		assert_int_equal(pf_writer_set_metadata(writer, "start_time_us", "123456789"), 0);
	}
	for (uint64_t i = 0; i < 100; i++) {
		struct pf_sample sample = { .pid = 7, .tid = 8 + i % 2, .timestamp_us = 123456789 + 100 * i,
					    .status = PF_STATUS_ON_CPU, .metrics = PF_METRIC_TIME,
					    .time_us = 100, .frame_count = 1 + i % 2, .frames = frames };

		if (i == 10) {
			if (typed)
				assert_int_equal(pf_writer_set_python_version(writer, &version), 0);
			else
				assert_int_equal(pf_writer_set_metadata(writer, "python", "3.12.4"), 0);
		}
		assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	}
	if (typed) {
		assert_int_equal(pf_writer_set_run_totals(writer, &totals), 0);
	} else {
		static const char *const lines[][2] = {
			{ "duration", "2500001" }, { "samples", "640" }, { "lost_samples", "3" },
			{ "truncated_stacks", "2" },
		};

		for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
			assert_int_equal(pf_writer_set_metadata(writer, lines[i][0], lines[i][1]), 0);
		snprintf(text, sizeof(text), "%" PRIu64, errors);
		assert_int_equal(pf_writer_set_metadata(writer, "read_faults", text), 0);
		assert_int_equal(pf_writer_set_metadata(writer, "unresolved_frames", "0"), 0);
		snprintf(text, sizeof(text), "%" PRIu64 "/640", errors);
		assert_int_equal(pf_writer_set_metadata(writer, "errors", text), 0);
		assert_int_equal(pf_writer_set_metadata(writer, "saturation", "3/643"), 0);
		snprintf(text, sizeof(text), "%.6f", (double)errors / 640.0);
		assert_int_equal(pf_writer_set_metadata(writer, "error_rate", text), 0);
	}
	assert_int_equal(pf_writer_set_metadata(writer, "native_walks", "5"), 0);
	assert_int_equal(pf_writer_close(writer), 0);
}

/* The typed run data writes every format's file byte for byte as the metadata lines did,
 * error rates on a printf rounding tie included (1/640 and 3/640). */
static void run_info_writes_what_metadata_wrote(void **state)
{
	static const char *const formats[] = { "mojo", "tachyon", "collapsed", "svg" };
	static const uint64_t errors[] = { 0, 1, 3, 7 };

	(void)state;
	for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
		for (size_t e = 0; e < sizeof(errors) / sizeof(errors[0]); e++) {
			const struct pf_format *format = format_registry_find_name(formats[f]);
			char by_text[256], typed[256];
			size_t text_len, typed_len;
			uint8_t *text_bytes, *typed_bytes;

			snprintf(by_text, sizeof(by_text), "%s/by_text.%s", test_tmpdir(), formats[f]);
			snprintf(typed, sizeof(typed), "%s/typed.%s", test_tmpdir(), formats[f]);
			write_run(by_text, format, false, errors[e]);
			write_run(typed, format, true, errors[e]);
			text_bytes = read_whole_file(by_text, &text_len);
			typed_bytes = read_whole_file(typed, &typed_len);
			if (text_len != typed_len || memcmp(text_bytes, typed_bytes, text_len)) {
				print_error("%s, %" PRIu64 " errors: %zu bytes by text, %zu typed, differ\n",
					    formats[f], errors[e], text_len, typed_len);
				fail();
			}
			free(text_bytes);
			free(typed_bytes);
			unlink(by_text);
			unlink(typed);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registry_lookups),
		cmocka_unit_test(run_info_writes_what_metadata_wrote),
		cmocka_unit_test(collapsed_escapes_terminal_controls),
		cmocka_unit_test(interpreter_ids_shown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
