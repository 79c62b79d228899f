// SPDX-License-Identifier: MIT
/* The SVG flame graph writer: geometry, colours, legend, tooltips, processes, escaping,
 * metadata, format dispatch. */
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "testlib.h"
#include "util/array.h"

#include <math.h>

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

static void add_process_sample(struct pf_writer *writer, uint32_t pid, const struct pf_frame *frames,
			       size_t count, uint32_t metrics, uint64_t time_us, int64_t memory)
{
	struct pf_sample sample = { .pid = pid, .tid = pid, .metrics = metrics, .time_us = time_us,
				    .memory = memory, .frame_count = count, .frames = frames };

	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
}

static void add_sample(struct pf_writer *writer, const struct pf_frame *frames, size_t count,
		       uint32_t metrics, uint64_t time_us, int64_t memory)
{
	add_process_sample(writer, 1, frames, count, metrics, time_us, memory);
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
	int y;
	int rgb[3];
};

/* The box drawn by the first <rect> at or after at. */
static struct drawn_frame parse_rect(const char *at)
{
	const char *rect = strstr(at, "<rect ");
	struct drawn_frame frame;

	assert_non_null(rect);
	assert_int_equal(sscanf(rect, "<rect x=\"%lf\" y=\"%d\" width=\"%lf\" height=\"%*d\" rx=\"%*d\" "
				      "fill=\"rgb(%d,%d,%d)\"",
				&frame.x, &frame.y, &frame.width, &frame.rgb[0], &frame.rgb[1], &frame.rgb[2]),
			 6);
	return frame;
}

/* The box of the frame whose (escaped) label is data_n; fails the test if absent. */
static struct drawn_frame find_frame(const char *svg, const char *data_n)
{
	char needle[256];
	const char *at;

	snprintf(needle, sizeof(needle), "data-n=\"%s\"", data_n);
	at = strstr(svg, needle);
	if (!at)
		fail_msg("no frame %s", data_n);
	return parse_rect(at);
}

/* The box whose tooltip starts with title (escaped); fails the test if absent. */
static struct drawn_frame find_titled(const char *svg, const char *title)
{
	char needle[256];
	const char *at;

	snprintf(needle, sizeof(needle), "<title>%s", title);
	at = strstr(svg, needle);
	if (!at)
		fail_msg("no frame titled %s", title);
	return parse_rect(at);
}

/* The hue angle of an rgb colour, 0-360 degrees (0 red, 120 green, 240 blue). */
static double hue_of(const int rgb[3])
{
	double r = rgb[0], g = rgb[1], b = rgb[2];
	double max = fmax(r, fmax(g, b)), min = fmin(r, fmin(g, b));
	double hue;

	if (max == min)
		return 0;
	if (max == r)
		hue = 60 * (g - b) / (max - min);
	else if (max == g)
		hue = 120 + 60 * (b - r) / (max - min);
	else
		hue = 240 + 60 * (r - g) / (max - min);
	return hue < 0 ? hue + 360 : hue;
}

/* The shortest way round the colour wheel between two hues. */
static double hue_distance(double a, double b)
{
	double d = fabs(a - b);

	return d > 180 ? 360 - d : d;
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
	/* Tooltips carry name, file, the lines seen and share. */
	assert_non_null(strstr(svg, "<title>save&amp;load (app.py:20-22): 3.00 ms, 75.00%</title>"));
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

/* Python, native and kernel frames of many names: each family keeps to its own hues. */
static char *write_kinds_profile(void)
{
	static const char *const names[] = { "read_zero", "main", "f", "run", "x", "__init__",
					      "do_syscall_64", "PyEval_EvalFrameDefault",
					      "memcpy", "handle_mm_fault", "a", "zz", "b1", "b2",
					      "b3", "b4", "b5", "b6", "b7", "b8", "b9" };
	char path[512];
	struct pf_writer *writer = open_svg("kinds.svg", path, sizeof(path));

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct pf_frame stack[3] = { python_frame("app.py", names[i], 1),
					     other_frame(PF_FRAME_NATIVE, "lib.so", names[i]),
					     other_frame(PF_FRAME_KERNEL, "", names[i]) };

		add_sample(writer, stack, 3, PF_METRIC_TIME, 1000, 0);
	}
	return close_and_read(writer, path);
}

/* Every box of kind marker ("", " [native]", " [kernel]") has a hue within spread of centre. */
static void assert_kind_hues(const char *svg, const char *marker, double centre, double spread)
{
	size_t checked = 0;

	for (const char *at = strstr(svg, "<g class=\"f\""); at; at = strstr(at + 1, "<g class=\"f\"")) {
		const char *title = strstr(at, "<title>"), *title_end = strstr(title, "</title>");
		const char *colon = title_end;
		const char *kind_end;
		struct drawn_frame frame;
		double hue;

		while (colon > title && *colon != ':')
			colon--;
		/* The marker, if any, ends where the amount starts: "name (file:1) [kernel]: 1 ms". */
		kind_end = colon;
		if (*marker ? kind_end - strlen(marker) < title ||
				      strncmp(kind_end - strlen(marker), marker, strlen(marker)) != 0
			    : kind_end[-1] == ']' || strncmp(title, "<title>all:", 11) == 0)
			continue;
		frame = parse_rect(at);
		hue = hue_of(frame.rgb);
		if (hue_distance(hue, centre) > spread)
			fail_msg("%.*s: hue %.0f not within %.0f of %.0f", (int)(title_end - title), title,
				 hue, spread, centre);
		checked++;
	}
	assert_true(checked >= 20);
}

static void test_colours_by_kind(void **state)
{
	char *svg = write_kinds_profile();
	struct drawn_frame kernel, python, again;

	(void)state;
	/* Python warm (red to yellow), native teal, kernel violet: 50+ degrees apart. */
	assert_kind_hues(svg, "", 25, 45);
	assert_kind_hues(svg, " [native]", 180, 10);
	assert_kind_hues(svg, " [kernel]", 265, 25);
	/* The bug: the Python and the kernel read_zero looked the same. */
	python = find_titled(svg, "read_zero (app.py:1):");
	kernel = find_titled(svg, "read_zero [kernel]:");
	assert_true(hue_distance(hue_of(python.rgb), hue_of(kernel.rgb)) > 100);
	/* Deterministic: the same profile gets the same colours. */
	free(svg);
	svg = write_kinds_profile();
	again = find_titled(svg, "read_zero [kernel]:");
	assert_memory_equal(again.rgb, kernel.rgb, sizeof(kernel.rgb));
	free(svg);
}

/* The legend's swatch for name, by its text; fails the test if absent. */
static void legend_entry(const char *legend, const char *name, int *y, int rgb[3])
{
	char needle[64];
	const char *text, *rect;

	snprintf(needle, sizeof(needle), ">%s</text>", name);
	text = strstr(legend, needle);
	if (!text)
		fail_msg("no legend entry %s", name);
	for (rect = text; rect > legend && strncmp(rect, "<rect ", 6) != 0; rect--)
		;
	assert_int_equal(sscanf(rect, "<rect x=\"%*f\" y=\"%d\" width=\"%*d\" height=\"%*d\" rx=\"%*d\" "
				      "fill=\"rgb(%d,%d,%d)\"",
				y, &rgb[0], &rgb[1], &rgb[2]),
			 4);
}

static void test_legend(void **state)
{
	char *svg = write_split_profile();
	const char *legend = strstr(svg, "<g id=\"legend\">");
	int python_y, native_y, kernel_y, rgb[3];
	int top_frame_y = INT32_MAX;
	char path[512];
	struct pf_writer *writer;
	struct pf_frame python_only[1] = { python_frame("a.py", "f", 1) };

	(void)state;
	assert_non_null(legend);
	legend_entry(legend, "Python", &python_y, rgb);
	assert_true(hue_distance(hue_of(rgb), 25) <= 45);
	legend_entry(legend, "native", &native_y, rgb);
	assert_true(hue_distance(hue_of(rgb), 180) <= 10);
	legend_entry(legend, "kernel", &kernel_y, rgb);
	assert_true(hue_distance(hue_of(rgb), 265) <= 25);
	/* One row, under the title and subtitle (baselines 24 and 44), above every frame. */
	assert_true(python_y == native_y && native_y == kernel_y);
	assert_true(python_y >= 44 + 4);
	for (const char *at = strstr(svg, "<g id=\"frames\">"); (at = strstr(at + 1, "<rect "));) {
		int y;

		assert_int_equal(sscanf(at, "<rect x=\"%*f\" y=\"%d\"", &y), 1);
		if (y < top_frame_y)
			top_frame_y = y;
	}
	assert_true(python_y + 12 < top_frame_y);
	free(svg);

	/* Only the kinds the profile holds. */
	writer = open_svg("legend.svg", path, sizeof(path));
	add_sample(writer, python_only, 1, 0, 0, 0);
	svg = close_and_read(writer, path);
	legend = strstr(svg, "<g id=\"legend\">");
	assert_non_null(legend);
	legend_entry(legend, "Python", &python_y, rgb);
	assert_null(strstr(legend, ">native</text>"));
	assert_null(strstr(legend, ">kernel</text>"));
	free(svg);
}

static void test_lines_in_tooltip(void **state)
{
	char *svg = write_split_profile();

	(void)state;
	/* A box merges a function's lines: the range seen, or the one line. */
	assert_non_null(strstr(svg, "<title>main (app.py:10-11): 4.00 ms, 100.00%</title>"));
	assert_non_null(strstr(svg, "<title>cold (app.py:30): 1.00 ms, 25.00%</title>"));
	assert_non_null(strstr(svg, "<title>&lt;module&gt; (app.py:1): 4.00 ms, 100.00%</title>"));
	/* Native and kernel frames have no line. */
	assert_non_null(strstr(svg, "<title>PyObject_Vectorcall (libpython3.12.so) [native]: 1.00 ms, 25.00%</title>"));
	assert_non_null(strstr(svg, "<title>do_syscall_64 [kernel]: 1.00 ms, 25.00%</title>"));
	free(svg);
}

static void test_one_root_per_process(void **state)
{
	struct pf_frame stack[2] = { python_frame("a.py", "<module>", 1), python_frame("a.py", "work", 5) };
	char path[512];
	struct pf_writer *writer = open_svg("processes.svg", path, sizeof(path));
	struct drawn_frame root, nine, ten, hundred, module;
	char *svg;

	(void)state;
	add_process_sample(writer, 10, stack, 2, PF_METRIC_TIME, 2000, 0);
	add_process_sample(writer, 9, stack, 2, PF_METRIC_TIME, 1000, 0);
	add_process_sample(writer, 100, stack, 1, PF_METRIC_TIME, 1000, 0);
	add_process_sample(writer, 10, stack, 2, PF_METRIC_TIME, 1000, 0);
	svg = close_and_read(writer, path);
	root = find_frame(svg, "all");
	nine = find_frame(svg, "pid 9");
	ten = find_frame(svg, "pid 10");
	hundred = find_frame(svg, "pid 100");
	module = find_frame(svg, "&lt;module&gt;");
	assert_non_null(strstr(svg, "<title>pid 10 [process]: 3.00 ms, 60.00%</title>"));
	/* A level of its own between the root and the stacks, pids in numeric order. */
	assert_true(nine.y == root.y - 16 && ten.y == nine.y && hundred.y == nine.y);
	assert_true(module.y == nine.y - 16);
	assert_true(nine.x == PLOT_LEFT);
	assert_true(ten.x > nine.x && hundred.x > ten.x);
	assert_true(ten.width > 3 * nine.width - 1 && ten.width < 3 * nine.width + 1);
	/* Neutral: no hue family of a frame kind (grey). */
	assert_true(ten.rgb[0] == ten.rgb[1] && ten.rgb[1] == ten.rgb[2]);
	free(svg);

	/* One process (Tachyon input has pid 0 everywhere): no process level. */
	writer = open_svg("one-process.svg", path, sizeof(path));
	add_process_sample(writer, 0, stack, 2, PF_METRIC_TIME, 1000, 0);
	add_process_sample(writer, 0, stack, 1, PF_METRIC_TIME, 1000, 0);
	svg = close_and_read(writer, path);
	assert_null(strstr(svg, "data-n=\"pid "));
	assert_null(strstr(svg, "[process]"));
	root = find_frame(svg, "all");
	module = find_frame(svg, "&lt;module&gt;");
	assert_true(module.y == root.y - 16);
	assert_true(module.width == PLOT_WIDTH);
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
	assert_non_null(strstr(svg, "wide_function_with_a_rather_long_name (a.py:1): 2000 samples, 99.95%"));
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
	assert_non_null(strstr(svg, "<title>alloc (a.py:1): 4.00 KiB, 100.00%</title>"));
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
	assert_non_null(strstr(svg, "a\xef\xbf\xbd" "b (we&quot;ird.py:1)"));
	assert_non_null(strstr(svg, "c\xef\xbf\xbd" "d (lib&apos;x.so) [native]"));
	free(svg);
}

/* A right-to-left override in a name would reorder what the reader of the graph sees. */
static void test_bidi_controls_shown(void **state)
{
	struct pf_frame frames[1] = { python_frame("main.py", "evil\xe2\x80\xae" "gnp.exe\xe2\x81\xa6", 1) };
	char path[512];
	struct pf_writer *writer = open_svg("bidi.svg", path, sizeof(path));
	char *svg;

	(void)state;
	add_sample(writer, frames, 1, 0, 0, 0);
	svg = close_and_read(writer, path);
	assert_null(strstr(svg, "\xe2\x80\xae"));
	assert_null(strstr(svg, "\xe2\x81\xa6"));
	assert_non_null(strstr(svg, "evil\\u202egnp.exe\\u2066 (main.py:1)"));
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
		cmocka_unit_test(test_legend),
		cmocka_unit_test(test_lines_in_tooltip),
		cmocka_unit_test(test_one_root_per_process),
		cmocka_unit_test(test_subtitle_from_metadata),
		cmocka_unit_test(test_narrow_frames_omitted),
		cmocka_unit_test(test_label_clipped_to_box),
		cmocka_unit_test(test_memory_weights),
		cmocka_unit_test(test_unprintable_names),
		cmocka_unit_test(test_bidi_controls_shown),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_format_dispatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
