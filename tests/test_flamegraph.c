// SPDX-License-Identifier: MIT
/* The SVG flame graph writer: geometry, colours, escaping, metadata, format dispatch. */
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "testlib.h"


#define PLOT_LEFT  10.0
#define PLOT_WIDTH 1180.0

static struct pf_frame python_frame(const char *file, const char *name, int32_t line)
{
	return (struct pf_frame){ .kind = PF_FRAME_PYTHON, .file = file, .name = name, .line = line,
				  .end_line = line, .column = -1, .end_column = -1, .opcode = -1 };
}

static struct pf_frame other_frame(enum pf_frame_kind kind, const char *file, const char *name)
{
	return (struct pf_frame){ .kind = kind, .file = file, .name = name, .line = -1,
				  .end_line = -1, .column = -1, .end_column = -1, .opcode = -1 };
}

static void add_sample(struct pf_writer *writer, const struct pf_frame *frames, size_t count,
		       uint32_t metrics, uint64_t time_us, int64_t memory)
{
	struct pf_sample sample = { .pid = 1, .tid = 1, .metrics = metrics, .time_us = time_us,
				    .memory = memory, .frame_count = count, .frames = frames };

	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
}

static struct pf_writer *open_svg(const char *name, char *path, size_t path_len)
{
	struct pf_writer *writer = NULL;

	snprintf(path, path_len, "%s/%s", test_tmpdir(), name);
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("svg"), NULL), 0);
	return writer;
}

static char *close_and_read(struct pf_writer *writer, const char *path)
{
	size_t len = 0;
	char *svg;

	assert_int_equal(pf_writer_close(writer), 0);
	svg = (char *)read_whole_file(path, &len);
	assert_non_null(svg);
	return svg;
}

struct drawn_frame {
	double x, width;
	int rgb[3];
};

/* The box of the frame whose (escaped) label is data_n; fails the test if absent. */
static struct drawn_frame find_frame(const char *svg, const char *data_n)
{
	char needle[256];
	struct drawn_frame frame;
	const char *at, *rect;

	snprintf(needle, sizeof(needle), "data-n=\"%s\"", data_n);
	at = strstr(svg, needle);
	if (!at)
		fail_msg("no frame %s", data_n);
	rect = strstr(at, "<rect ");
	assert_non_null(rect);
	assert_int_equal(sscanf(rect, "<rect x=\"%lf\" y=\"%*d\" width=\"%lf\" height=\"%*d\" rx=\"%*d\" "
				      "fill=\"rgb(%d,%d,%d)\"",
				&frame.x, &frame.width, &frame.rgb[0], &frame.rgb[1], &frame.rgb[2]),
			 5);
	return frame;
}

static bool ends_with_svg_close(const char *svg)
{
	size_t len = strlen(svg);

	while (len && (svg[len - 1] == '\n' || svg[len - 1] == ' '))
		len--;
	return len >= 6 && memcmp(svg + len - 6, "</svg>", 6) == 0;
}

/* <module> calls main, which spends 3 ms in save&load and 1 ms in cold -> C -> kernel. */
static char *write_split_profile(void)
{
	struct pf_frame hot[3] = { python_frame("app.py", "<module>", 1),
				   python_frame("app.py", "main", 10),
				   python_frame("app.py", "save&load", 20) };
	struct pf_frame cold[5] = { python_frame("app.py", "<module>", 1),
				    python_frame("app.py", "main", 11),
				    python_frame("app.py", "cold", 30),
				    other_frame(PF_FRAME_NATIVE, "libpython3.12.so", "PyObject_Vectorcall"),
				    other_frame(PF_FRAME_KERNEL, "", "do_syscall_64") };
	char path[512];
	struct pf_writer *writer = open_svg("split.svg", path, sizeof(path));

	/* Three samples on different lines of save&load: one box, lines merged. */
	for (int i = 0; i < 3; i++) {
		hot[2].line = 20 + i;
		add_sample(writer, hot, 3, PF_METRIC_TIME, 1000, 0);
	}
	add_sample(writer, cold, 5, PF_METRIC_TIME, 1000, 0);
	return close_and_read(writer, path);
}

static void test_well_formed_and_escaped(void **state)
{
	char *svg = write_split_profile();

	(void)state;
	assert_true(strncmp(svg, "<?xml", 5) == 0 || strncmp(svg, "<svg", 4) == 0);
	assert_true(ends_with_svg_close(svg));
	assert_non_null(strstr(svg, "&lt;module&gt;"));
	assert_null(strstr(svg, "<module>"));
	assert_non_null(strstr(svg, "save&amp;load"));
	assert_null(strstr(svg, "save&load"));
	/* Tooltips carry name, file and share. */
	assert_non_null(strstr(svg, "<title>save&amp;load (app.py): 3.00 ms, 75.00%</title>"));
	assert_non_null(strstr(svg, "<title>do_syscall_64 [kernel]: 1.00 ms, 25.00%</title>"));
	/* Lines are merged: one box per function. */
	assert_null(strstr(strstr(svg, "data-n=\"save&amp;load\"") + 1, "data-n=\"save&amp;load\""));
	free(svg);
}

static void test_widths_follow_weights(void **state)
{
	char *svg = write_split_profile();
	struct drawn_frame root = find_frame(svg, "all");
	struct drawn_frame module = find_frame(svg, "&lt;module&gt;");
	struct drawn_frame hot = find_frame(svg, "save&amp;load");
	struct drawn_frame cold = find_frame(svg, "cold");

	(void)state;
	assert_true(root.x == PLOT_LEFT && root.width == PLOT_WIDTH);
	assert_true(module.x == PLOT_LEFT && module.width == PLOT_WIDTH);
	assert_true(hot.width > 3 * cold.width - 1 && hot.width < 3 * cold.width + 1);
	/* Siblings in name order, side by side. */
	assert_true(cold.x == PLOT_LEFT);
	assert_true(hot.x > cold.x + cold.width - 0.01 && hot.x < cold.x + cold.width + 0.01);
	free(svg);
}

static void test_colours_by_kind(void **state)
{
	char *svg = write_split_profile();
	struct drawn_frame kernel = find_frame(svg, "do_syscall_64");
	struct drawn_frame native = find_frame(svg, "PyObject_Vectorcall");
	struct drawn_frame python = find_frame(svg, "cold");
	struct drawn_frame again;

	(void)state;
	/* flamegraph.pl's orange for _[k]. */
	assert_true(kernel.rgb[0] >= 190 && kernel.rgb[1] >= 90 && kernel.rgb[1] <= 155 &&
		    kernel.rgb[2] == 0);
	assert_true(kernel.rgb[0] - kernel.rgb[1] == 100);
	/* Teal: green and blue well above red. */
	assert_true(native.rgb[1] >= 165 && native.rgb[2] >= 165 && native.rgb[0] <= 110);
	/* Warm: red dominates, little blue. */
	assert_true(python.rgb[0] >= 205 && python.rgb[2] <= 55);
	/* Deterministic: the same profile gets the same colours. */
	free(svg);
	svg = write_split_profile();
	again = find_frame(svg, "do_syscall_64");
	assert_memory_equal(again.rgb, kernel.rgb, sizeof(kernel.rgb));
	free(svg);
}

static void test_subtitle_from_metadata(void **state)
{
	struct pf_frame frames[1] = { python_frame("a.py", "f", 1) };
	char path[512];
	struct pf_writer *writer = open_svg("meta.svg", path, sizeof(path));
	char *svg;

	(void)state;
	assert_int_equal(pf_writer_set_metadata(writer, "python", "3.12.1"), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "mode", "cpu"), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "interval", "1000"), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "ignored", "x"), 0);
	add_sample(writer, frames, 1, PF_METRIC_TIME, 1000, 0);
	/* End-of-run metadata arrives after the samples. */
	assert_int_equal(pf_writer_set_metadata(writer, "duration", "2500000"), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "samples", "7"), 0);
	svg = close_and_read(writer, path);
	assert_non_null(strstr(svg, "Python 3.12.1 \xc2\xb7 mode cpu \xc2\xb7 interval 1.00 ms \xc2\xb7 "
				    "duration 2.50 s \xc2\xb7 7 samples"));
	free(svg);
}

static void test_narrow_frames_omitted(void **state)
{
	struct pf_frame wide[2] = { python_frame("a.py", "wide_function_with_a_rather_long_name", 1),
				    python_frame("a.py", "leaf", 2) };
	struct pf_frame tiny[1] = { python_frame("a.py", "tiny", 1) };
	char path[512];
	struct pf_writer *writer = open_svg("narrow.svg", path, sizeof(path));
	char *svg;

	(void)state;
	add_sample(writer, wide, 2, 0, 0, 0);
	for (int i = 0; i < 1999; i++)
		add_sample(writer, wide, 1, 0, 0, 0);
	add_sample(writer, tiny, 1, 0, 0, 0); /* 1 of 2001: under 0.1% */
	svg = close_and_read(writer, path);
	assert_null(strstr(svg, "data-n=\"tiny\""));
	assert_null(strstr(svg, "data-n=\"leaf\"")); /* 1 of 2001 as well */
	assert_non_null(strstr(svg, "wide_function_with_a_rather_long_name (a.py): 2000 samples, 99.95%"));
	free(svg);
}

static void test_label_clipped_to_box(void **state)
{
	struct pf_frame long_name[1] = { python_frame("a.py", "abcdefghijklmnopqrstuvwxyz", 1) };
	struct pf_frame other[1] = { python_frame("a.py", "zzz", 1) };
	char path[512];
	struct pf_writer *writer = open_svg("clip.svg", path, sizeof(path));
	char *svg;

	(void)state;
	/* 10% of 1180 px = 118 px: (118 - 6) / 7 = 16 characters, 14 and "..". */
	add_sample(writer, long_name, 1, PF_METRIC_TIME, 100, 0);
	add_sample(writer, other, 1, PF_METRIC_TIME, 900, 0);
	svg = close_and_read(writer, path);
	assert_non_null(strstr(svg, ">abcdefghijklmn..</text>"));
	free(svg);
}

static void test_memory_weights(void **state)
{
	struct pf_frame alloc[1] = { python_frame("a.py", "alloc", 1) };
	struct pf_frame release[1] = { python_frame("a.py", "release", 1) };
	char path[512];
	struct pf_writer *writer = open_svg("memory.svg", path, sizeof(path));
	char *svg;

	(void)state;
	add_sample(writer, alloc, 1, PF_METRIC_MEMORY, 0, 4096);
	add_sample(writer, release, 1, PF_METRIC_MEMORY, 0, -4096);
	svg = close_and_read(writer, path);
	assert_non_null(strstr(svg, "<title>alloc (a.py): 4.00 KiB, 100.00%</title>"));
	assert_null(strstr(svg, "data-n=\"release\""));
	assert_non_null(strstr(svg, "width: bytes allocated"));
	free(svg);
}

static void test_unprintable_names(void **state)
{
	/* A control character, a stray byte and a quote in names that came from memory. */
	struct pf_frame frames[2] = { python_frame("we\"ird.py", "a\x01" "b", 1),
				      other_frame(PF_FRAME_NATIVE, "lib'x.so", "c\xff" "d") };
	char path[512];
	struct pf_writer *writer = open_svg("odd.svg", path, sizeof(path));
	char *svg;

	(void)state;
	add_sample(writer, frames, 2, 0, 0, 0);
	svg = close_and_read(writer, path);
	assert_null(strchr(svg, '\x01'));
	assert_null(strchr(svg, '\xff'));
	assert_non_null(strstr(svg, "a\xef\xbf\xbd" "b (we&quot;ird.py)"));
	assert_non_null(strstr(svg, "c\xef\xbf\xbd" "d (lib&apos;x.so) [native]"));
	free(svg);
}

static void test_empty_profile(void **state)
{
	char path[512];
	struct pf_writer *writer = open_svg("empty.svg", path, sizeof(path));
	char *svg;

	(void)state;
	svg = close_and_read(writer, path);
	assert_true(ends_with_svg_close(svg));
	assert_non_null(strstr(svg, "No samples"));
	free(svg);
}

static void test_format_dispatch(void **state)
{
	char path[512], err[256];
	struct pf_writer *writer = open_svg("dispatch.svg", path, sizeof(path));
	const struct pf_format *svg = format_registry_find_name("svg");
	struct pf_reader *reader = NULL;

	(void)state;
	assert_int_equal(pf_writer_close(writer), 0);
	assert_non_null(svg);
	assert_ptr_equal(format_registry_find_name("flamegraph"), svg);
	assert_ptr_equal(format_registry_find_path("/tmp/x.SVG"), svg);
	assert_string_equal(svg->name, "svg");
	/* Write-only: there is no SVG reader. */
	assert_true(format_registry_open_reader(&reader, path, err, sizeof(err)) < 0);
	assert_null(reader);
	assert_true(pf_reader_open(&reader, path, svg, err, sizeof(err)) < 0);
	assert_null(reader);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed_and_escaped),
		cmocka_unit_test(test_widths_follow_weights),
		cmocka_unit_test(test_colours_by_kind),
		cmocka_unit_test(test_subtitle_from_metadata),
		cmocka_unit_test(test_narrow_frames_omitted),
		cmocka_unit_test(test_label_clipped_to_box),
		cmocka_unit_test(test_memory_weights),
		cmocka_unit_test(test_unprintable_names),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_format_dispatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
