// SPDX-License-Identifier: MIT
/*
 * pprof's format (profile.proto, from Debian's golang-github-google-pprof-dev,
 * compiled by protoc-c at build time), gzipped as `go tool pprof` writes it.
 *
 * A frame is a location with one line; a function is name + file + first
 * line (+ kind: a kernel and a Python function of the same name stay apart);
 * a native frame's location lies in a mapping of its file. Samples are
 * aggregated by stack and thread, with labels "pid" and "thread" (and, where
 * the source knows them, "thread_name", "process" and "container"), values
 * [samples, time in ns] (or [samples, bytes] for memory). Written whole at
 * finish: memory grows with distinct stacks and threads, not samples.
 */
#include "formats/pprof/pprof.h"

#include "formats/stack_table.h"
#include "util/array.h"
#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/version.h"

/* Generated at build time from Debian's profile.proto (see the Makefile): a library header. */
#include <profile.pb-c.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The gzip level `go tool pprof` uses for its own files is the default: so is ours. */
#define PPROF_GZIP_LEVEL Z_DEFAULT_COMPRESSION

struct sample_key {
	uint32_t stack;
	uint32_t pid;
	uint64_t tid;
};

/* The string labels a sample may carry, besides the numeric pid and thread. */
enum { LABEL_THREAD_NAME, LABEL_PROCESS, LABEL_CONTAINER, STRING_LABELS };
static const char *const string_label_keys[STRING_LABELS] = { "thread_name", "process", "container" };
#define LABELS_MAX (2 + STRING_LABELS)

struct sample_values {
	int64_t count;
	int64_t amount; /* ns of time, or bytes */
	int64_t strings[STRING_LABELS]; /* string indices; 0 (""): none */
};

struct pprof_writer {
	int fd;
	struct stack_table stacks;
	struct intern_table strings;      /* string -> index in the string table; "" is 0 */
	struct intern_table functions;    /* kind, name index, file index, start line -> function id - 1 */
	struct intern_table mappings;     /* a native file's string index -> mapping id - 1 */
	struct intern_table sample_keys;  /* struct sample_key -> index in values */
	struct sample_values *values;
	size_t values_capacity;
	uint32_t metrics_seen;
	char mode[16];
	char event[32];                   /* --event's name: sample counts are its occurrences ("" none) */
	bool event_ns;                    /* its counts are nanoseconds (event_unit: --event off-cpu) */
	uint64_t event_period;            /* its occurrences per sample */
	uint64_t interval_us;
	uint64_t duration_us;
	char python[32];
	char error[256];
};

static int64_t string_index(struct pprof_writer *writer, const char *text)
{
	return intern_add(&writer->strings, text, strlen(text), NULL);
}

static int pprof_add_sample(void *state, const struct pf_sample *sample)
{
	struct pprof_writer *writer = state;
	int64_t stack = stack_table_add(&writer->stacks, sample), index;
	struct sample_key key = { .pid = sample->pid, .tid = sample->tid };
	int64_t weight = pf_sample_weight(sample);
	bool is_new = false;

	if (stack < 0)
		return (int)stack;
	key.stack = (uint32_t)stack;
	index = intern_add(&writer->sample_keys, &key, sizeof(key), &is_new);
	if (index < 0)
		return (int)index;
	if (ARRAY_RESERVE(writer->values, writer->values_capacity, (size_t)index + 1))
		return -ENOMEM;
	if (is_new) {
		const char *strings[STRING_LABELS] = { sample->thread_name, sample->process_name, sample->container };

		writer->values[index] = (struct sample_values){ 0 };
		for (int l = 0; l < STRING_LABELS; l++) {
			int64_t text = strings[l] ? string_index(writer, strings[l]) : 0;

			if (text < 0)
				return (int)text;
			writer->values[index].strings[l] = text;
		}
	}
	writer->metrics_seen |= sample->metrics;
	writer->values[index].count += sample->metrics & PF_METRIC_COUNT ? (int64_t)sample->count
					 : sample->samples			  ? sample->samples
										  : 1;
	writer->values[index].amount += sample->metrics & PF_METRIC_TIME ? weight * 1000 : weight;
	return 0;
}

/* ---- the message ---- */

/* Everything the packed message points at, allocated at once and freed together. */
struct pprof_message {
	Perftools__Profiles__Profile profile;
	Perftools__Profiles__ValueType value_types[3];
	Perftools__Profiles__ValueType *value_type_list[2];
	Perftools__Profiles__Mapping *mappings;
	Perftools__Profiles__Mapping **mapping_list;
	Perftools__Profiles__Function *functions;
	Perftools__Profiles__Function **function_list;
	Perftools__Profiles__Location *locations;
	Perftools__Profiles__Location **location_list;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **line_list;
	Perftools__Profiles__Sample *samples;
	Perftools__Profiles__Sample **sample_list;
	Perftools__Profiles__Label *labels;        /* LABELS_MAX per sample */
	Perftools__Profiles__Label **label_list;
	uint64_t *location_ids;                    /* every sample's, leaf first */
	int64_t *values;                           /* two per sample */
	int64_t comments[2];
	char **string_list;
};

static void message_free(struct pprof_message *message)
{
	free(message->mappings);
	free(message->mapping_list);
	free(message->functions);
	free(message->function_list);
	free(message->locations);
	free(message->location_list);
	free(message->lines);
	free(message->line_list);
	free(message->samples);
	free(message->sample_list);
	free(message->labels);
	free(message->label_list);
	free(message->location_ids);
	free(message->values);
	free(message->string_list);
}

static const char *kind_file(const struct stack_frame *frame)
{
	if (frame->kind == PF_FRAME_KERNEL)
		return "[kernel]";
	return frame->file;
}

/* The function of frame id, added if new: its id (1-based). */
static int64_t function_of(struct pprof_writer *writer, const struct stack_frame *frame)
{
	int64_t key[4] = { frame->kind, string_index(writer, *frame->name ? frame->name : "[unknown]"),
			   string_index(writer, kind_file(frame)), frame->function_line };

	if (key[1] < 0 || key[2] < 0)
		return -ENOMEM;
	return intern_add(&writer->functions, key, sizeof(key), NULL);
}

/* The mapping a native frame's file stands for, added if new: its id (1-based), or 0. */
static int64_t mapping_of(struct pprof_writer *writer, const struct stack_frame *frame)
{
	int64_t file, id;

	if (frame->kind != PF_FRAME_NATIVE || !*frame->file)
		return 0;
	file = string_index(writer, frame->file);
	if (file < 0)
		return file;
	id = intern_add(&writer->mappings, &file, sizeof(file), NULL);
	return id < 0 ? id : id + 1;
}

static int build_locations(struct pprof_writer *writer, struct pprof_message *message)
{
	size_t count = stack_table_frame_count(&writer->stacks);

	message->locations = calloc(count ? count : 1, sizeof(*message->locations));
	message->location_list = calloc(count ? count : 1, sizeof(*message->location_list));
	message->lines = calloc(count ? count : 1, sizeof(*message->lines));
	message->line_list = calloc(count ? count : 1, sizeof(*message->line_list));
	if (!message->locations || !message->location_list || !message->lines || !message->line_list)
		return -ENOMEM;
	for (size_t id = 0; id < count; id++) {
		Perftools__Profiles__Location *location = &message->locations[id];
		Perftools__Profiles__Line *line = &message->lines[id];
		struct stack_frame frame;
		int64_t function, mapping;

		stack_table_frame(&writer->stacks, (uint32_t)id, &frame);
		function = function_of(writer, &frame);
		mapping = mapping_of(writer, &frame);
		if (function < 0 || mapping < 0)
			return -ENOMEM;
		perftools__profiles__line__init(line);
		line->function_id = (uint64_t)function + 1;
		line->line = frame.line > 0 ? frame.line : 0;
		message->line_list[id] = line;
		perftools__profiles__location__init(location);
		location->id = id + 1;
		location->mapping_id = (uint64_t)mapping;
		location->n_line = 1;
		location->line = &message->line_list[id];
		message->location_list[id] = location;
	}
	message->profile.n_location = count;
	message->profile.location = message->location_list;
	return 0;
}

static int build_functions(struct pprof_writer *writer, struct pprof_message *message)
{
	size_t count = intern_count(&writer->functions);

	message->functions = calloc(count ? count : 1, sizeof(*message->functions));
	message->function_list = calloc(count ? count : 1, sizeof(*message->function_list));
	if (!message->functions || !message->function_list)
		return -ENOMEM;
	for (size_t id = 0; id < count; id++) {
		Perftools__Profiles__Function *function = &message->functions[id];
		int64_t key[4];

		memcpy(key, intern_key(&writer->functions, (uint32_t)id, NULL), sizeof(key));
		perftools__profiles__function__init(function);
		function->id = id + 1;
		function->name = key[1];
		/* pprof demangles a system name as C++ and, failing that, cuts <...> and (...) from
		 * names that look demangled: "<module>" would read "". Only a native symbol is a
		 * linker's name; Python and kernel functions have none, which pprof leaves alone. */
		function->system_name = key[0] == PF_FRAME_NATIVE ? key[1] : 0;
		function->filename = key[2];
		function->start_line = key[3];
		message->function_list[id] = function;
	}
	message->profile.n_function = count;
	message->profile.function = message->function_list;
	return 0;
}

/* A native frame's file as an index in mappings; -1 if it has none. */
static int64_t frame_mapping(struct pprof_writer *writer, const struct stack_frame *frame)
{
	int64_t file;

	if (frame->kind != PF_FRAME_NATIVE || !*frame->file ||
	    (file = intern_find(&writer->strings, frame->file, strlen(frame->file))) < 0)
		return -1;
	return intern_find(&writer->mappings, &file, sizeof(file));
}

/* CPython's own functions (Py_RunMain, _PyEval_EvalFrameDefault, PyLong_FromLong) are the
 * interpreter's, whichever file holds them: an extension's are named otherwise. */
static bool is_interpreter_function(const char *name)
{
	return strncmp(name, "Py", 2) == 0 || strncmp(name, "_Py", 3) == 0;
}

struct stack_files {
	int64_t interpreter; /* the file of the outermost frame of CPython's own; -1: none */
	int64_t root;        /* the file of the root frame, when native; -1: not native */
	int64_t callee;      /* the file of the outermost native frame (called from Python); -1: none */
};

/* Which files a stack tells about, as indexes in mappings. */
static struct stack_files stack_files(struct pprof_writer *writer, uint32_t stack_id)
{
	struct stack_files files = { -1, -1, -1 };
	size_t depth;
	const void *stack = stack_table_stack(&writer->stacks, stack_id, &depth);

	for (size_t f = 0; f < depth && files.interpreter < 0; f++) {
		struct stack_frame frame;
		int64_t mapping;

		stack_table_frame(&writer->stacks, stack_table_frame_at(stack, f), &frame);
		mapping = frame_mapping(writer, &frame);
		if (mapping < 0)
			continue;
		if (files.callee < 0)
			files.callee = mapping;
		if (f == 0)
			files.root = mapping;
		if (is_interpreter_function(frame.name))
			files.interpreter = mapping;
	}
	return files;
}

/* The index of the largest of counts[count], -1 if all are 0. */
static int64_t busiest(const int64_t *counts, size_t count)
{
	int64_t best = -1;

	for (size_t m = 0; m < count; m++)
		if (counts[m] && (best < 0 || counts[m] > counts[best]))
			best = (int64_t)m;
	return best;
}

/* Samples by file (counts[3 * count]: interpreter, root, callee), every file an index in mappings. */
static void count_stack_files(struct pprof_writer *writer, int64_t *counts, size_t count)
{
	for (size_t i = 0; i < intern_count(&writer->sample_keys); i++) {
		struct sample_key key;
		struct stack_files files;
		int64_t kinds[3];

		memcpy(&key, intern_key(&writer->sample_keys, (uint32_t)i, NULL), sizeof(key));
		files = stack_files(writer, key.stack);
		kinds[0] = files.interpreter;
		kinds[1] = files.root;
		kinds[2] = files.callee;
		for (size_t k = 0; k < 3; k++)
			if (kinds[k] >= 0 && (size_t)kinds[k] < count)
				counts[k * count + (size_t)kinds[k]] += writer->values[i].count;
	}
}

/*
 * The mapping pprof names as the profile's file (its first): the interpreter, the file most
 * samples run CPython's own functions in (libpython, or a static python); without any, the
 * file most all-native stacks start in (the executable's `_start`), else the one Python code
 * calls into most. Not whichever file the first sample met (the loader, for a launched
 * command). -1 when no sample has a native frame.
 */
static int64_t main_mapping(struct pprof_writer *writer)
{
	size_t count = intern_count(&writer->mappings);
	int64_t *counts, best = -1;

	if (!count || !(counts = calloc(3 * count, sizeof(*counts))))
		return -1;
	count_stack_files(writer, counts, count);
	for (size_t k = 0; k < 3 && best < 0; k++)
		best = busiest(counts + k * count, count);
	free(counts);
	return best;
}

/* A mapping's id: main first, the others in the order they were met (main's place goes to the first). */
static uint64_t mapping_id(int64_t index, int64_t main)
{
	if (main > 0 && index == main)
		return 1;
	if (main > 0 && index == 0)
		return (uint64_t)main + 1;
	return (uint64_t)index + 1;
}

/* The mapping ids the locations hold, once every mapping is known. */
static void number_mappings(struct pprof_message *message, int64_t main)
{
	for (size_t id = 0; id < message->profile.n_location; id++) {
		Perftools__Profiles__Location *location = &message->locations[id];

		if (location->mapping_id)
			location->mapping_id = mapping_id((int64_t)location->mapping_id - 1, main);
	}
}

/* One mapping per native file: no addresses (frames are symbolized), the file and that it has functions. */
static int build_mappings(struct pprof_writer *writer, struct pprof_message *message)
{
	size_t count = intern_count(&writer->mappings);
	int64_t main = main_mapping(writer);

	message->mappings = calloc(count ? count : 1, sizeof(*message->mappings));
	message->mapping_list = calloc(count ? count : 1, sizeof(*message->mapping_list));
	if (!message->mappings || !message->mapping_list)
		return -ENOMEM;
	for (size_t id = 0; id < count; id++) {
		Perftools__Profiles__Mapping *mapping = &message->mappings[id];
		int64_t file;

		memcpy(&file, intern_key(&writer->mappings, (uint32_t)id, NULL), sizeof(file));
		perftools__profiles__mapping__init(mapping);
		mapping->id = mapping_id((int64_t)id, main);
		mapping->filename = file;
		mapping->has_functions = 1;
		mapping->has_filenames = 1;
		mapping->has_line_numbers = 0;
		message->mapping_list[mapping->id - 1] = mapping;
	}
	number_mappings(message, main);
	message->profile.n_mapping = count;
	message->profile.mapping = message->mapping_list;
	return 0;
}

static size_t total_depth(const struct pprof_writer *writer)
{
	size_t total = 0;

	for (size_t i = 0; i < intern_count(&writer->sample_keys); i++) {
		struct sample_key key;
		size_t depth;

		memcpy(&key, intern_key(&writer->sample_keys, (uint32_t)i, NULL), sizeof(key));
		stack_table_stack(&writer->stacks, key.stack, &depth);
		total += depth;
	}
	return total;
}

/* Whether samples carry a second value, time or bytes, besides their count. */
static bool weighed(const struct pprof_writer *writer)
{
	return writer->metrics_seen & (PF_METRIC_TIME | PF_METRIC_MEMORY);
}

static void build_sample(struct pprof_writer *writer, struct pprof_message *message, size_t i, size_t *next_id,
			 const int64_t label_keys[LABELS_MAX])
{
	Perftools__Profiles__Sample *sample = &message->samples[i];
	Perftools__Profiles__Label *labels = &message->labels[LABELS_MAX * i];
	Perftools__Profiles__Label **label_list = &message->label_list[LABELS_MAX * i];
	size_t label_count = 0;
	struct sample_key key;
	const void *stack;
	size_t depth;

	memcpy(&key, intern_key(&writer->sample_keys, (uint32_t)i, NULL), sizeof(key));
	stack = stack_table_stack(&writer->stacks, key.stack, &depth);
	perftools__profiles__sample__init(sample);
	sample->location_id = message->location_ids + *next_id;
	sample->n_location_id = depth;
	/* pprof lists a sample's locations leaf first; ours are root first. */
	for (size_t f = 0; f < depth; f++)
		message->location_ids[(*next_id)++] = (uint64_t)stack_table_frame_at(stack, depth - 1 - f) + 1;
	message->values[2 * i] = writer->values[i].count;
	message->values[2 * i + 1] = writer->values[i].amount;
	sample->value = &message->values[2 * i];
	sample->n_value = weighed(writer) ? 2 : 1;
	for (int l = 0; l < LABELS_MAX; l++) {
		int64_t text = l >= 2 ? writer->values[i].strings[l - 2] : 0;

		if (l >= 2 && text == 0)
			continue;
		perftools__profiles__label__init(&labels[label_count]);
		labels[label_count].key = label_keys[l];
		if (l == 0)
			labels[label_count].num = key.pid;
		else if (l == 1)
			labels[label_count].num = (int64_t)key.tid;
		else
			labels[label_count].str = text;
		label_list[label_count] = &labels[label_count];
		label_count++;
	}
	sample->label = label_list;
	sample->n_label = label_count;
	message->sample_list[i] = sample;
}

static int build_samples(struct pprof_writer *writer, struct pprof_message *message)
{
	size_t count = intern_count(&writer->sample_keys), next_id = 0, depth = total_depth(writer);
	int64_t label_keys[LABELS_MAX] = { string_index(writer, "pid"), string_index(writer, "thread") };

	for (int l = 0; l < STRING_LABELS; l++)
		label_keys[2 + l] = string_index(writer, string_label_keys[l]);
	for (int l = 0; l < LABELS_MAX; l++)
		if (label_keys[l] < 0)
			return -ENOMEM;
	message->samples = calloc(count ? count : 1, sizeof(*message->samples));
	message->sample_list = calloc(count ? count : 1, sizeof(*message->sample_list));
	message->labels = calloc(count ? LABELS_MAX * count : 1, sizeof(*message->labels));
	message->label_list = calloc(count ? LABELS_MAX * count : 1, sizeof(*message->label_list));
	message->location_ids = calloc(depth ? depth : 1, sizeof(*message->location_ids));
	message->values = calloc(count ? 2 * count : 1, sizeof(*message->values));
	if (!message->samples || !message->sample_list || !message->labels || !message->label_list ||
	    !message->location_ids || !message->values)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		build_sample(writer, message, i, &next_id, label_keys);
	message->profile.n_sample = count;
	message->profile.sample = message->sample_list;
	return 0;
}

/* What each sample value is: a count first (pprof's convention: samples, or the occurrences of an
 * --event), then time or bytes (none for an event only counted). */
static int build_value_types(struct pprof_writer *writer, struct pprof_message *message)
{
	bool timed = writer->metrics_seen & PF_METRIC_TIME;
	/* Memory mode's bytes are signed (+ grown, - released), not what pprof's "space" allocated. */
	bool memory_mode = !writer->event[0] && !strcmp(writer->mode, "memory");
	/* The bytes of --event syscall:...:bytes and block-io were moved, not allocated. */
	bool io_bytes = !strncmp(writer->event, "syscall:", strlen("syscall:")) || !strcmp(writer->event, "block-io");
	const char *kind = timed		? (writer->mode[0] ? writer->mode : "cpu")
			   : memory_mode	? "memory"
			   : io_bytes		? "io"
						: "space";
	int64_t names[5] = { string_index(writer, writer->event[0] ? writer->event : "samples"),
			     string_index(writer, writer->event_ns ? "nanoseconds" : "count"), string_index(writer, kind),
			     string_index(writer, timed ? "nanoseconds" : "bytes"), 0 };

	for (int i = 0; i < 4; i++)
		if (names[i] < 0)
			return -ENOMEM;
	for (int i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&message->value_types[i]);
	message->value_types[0].type = names[0];
	message->value_types[0].unit = names[1];
	message->value_types[1].type = names[2];
	message->value_types[1].unit = names[3];
	message->value_type_list[0] = &message->value_types[0];
	message->value_type_list[1] = &message->value_types[1];
	message->profile.sample_type = message->value_type_list;
	message->profile.n_sample_type = weighed(writer) ? 2 : 1;
	/* The period: one sampling interval of the second value's kind, or an event's occurrences
	 * per sample. */
	message->value_types[2] = message->value_types[writer->event[0] ? 0 : 1];
	message->profile.period_type = &message->value_types[2];
	message->profile.period = writer->event[0] ? (int64_t)writer->event_period
				  : timed	   ? (int64_t)writer->interval_us * 1000
						   : 1;
	message->profile.duration_nanos = (int64_t)writer->duration_us * 1000;
	message->profile.default_sample_type = weighed(writer) ? names[2] : 0;
	return 0;
}

static int build_comments(struct pprof_writer *writer, struct pprof_message *message)
{
	char text[96];

	message->comments[0] = string_index(writer, "pybpfprof " PYBPFPROF_VERSION);
	message->profile.n_comment = 1;
	if (writer->python[0]) {
		snprintf(text, sizeof(text), "python %s", writer->python);
		message->comments[message->profile.n_comment++] = string_index(writer, text);
	}
	for (size_t i = 0; i < message->profile.n_comment; i++)
		if (message->comments[i] < 0)
			return -ENOMEM;
	message->profile.comment = message->comments;
	return 0;
}

/* Last: every step before may add strings. */
static int build_string_table(struct pprof_writer *writer, struct pprof_message *message)
{
	size_t count = intern_count(&writer->strings);

	message->string_list = calloc(count, sizeof(*message->string_list));
	if (!message->string_list)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		message->string_list[i] = (char *)intern_key(&writer->strings, (uint32_t)i, NULL);
	message->profile.string_table = message->string_list;
	message->profile.n_string_table = count;
	return 0;
}

static int build_message(struct pprof_writer *writer, struct pprof_message *message)
{
	int err;

	perftools__profiles__profile__init(&message->profile);
	err = build_value_types(writer, message);
	if (!err)
		err = build_locations(writer, message);
	if (!err)
		err = build_mappings(writer, message);
	if (!err)
		err = build_functions(writer, message);
	if (!err)
		err = build_samples(writer, message);
	if (!err)
		err = build_comments(writer, message);
	if (!err)
		err = build_string_table(writer, message);
	return err;
}

/* The packed message, gzipped into *out (the caller frees it). */
static int gzip_message(const uint8_t *packed, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream stream = { 0 };
	uLong bound;
	int status;

	if (deflateInit2(&stream, PPROF_GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&stream, (uLong)len) + 32;
	*out = malloc(bound);
	if (!*out) {
		deflateEnd(&stream);
		return -ENOMEM;
	}
	stream.next_in = (Bytef *)packed;
	stream.avail_in = (uInt)len;
	stream.next_out = *out;
	stream.avail_out = (uInt)bound;
	status = deflate(&stream, Z_FINISH);
	*out_len = stream.total_out;
	deflateEnd(&stream);
	if (status != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -EIO;
	}
	return 0;
}

static int pprof_finish(void *state)
{
	struct pprof_writer *writer = state;
	struct pprof_message message = { 0 };
	uint8_t *packed = NULL, *gzipped = NULL;
	size_t packed_len, gzipped_len = 0;
	int err = build_message(writer, &message);

	if (!err) {
		packed_len = perftools__profiles__profile__get_packed_size(&message.profile);
		packed = malloc(packed_len ? packed_len : 1);
		err = packed ? 0 : -ENOMEM;
	}
	if (!err) {
		perftools__profiles__profile__pack(&message.profile, packed);
		err = gzip_message(packed, packed_len, &gzipped, &gzipped_len);
	}
	if (!err)
		err = fd_write_all(writer->fd, gzipped, gzipped_len, NULL);
	free(packed);
	free(gzipped);
	message_free(&message);
	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "cannot write the pprof profile: %s",
				     strerror(-err));
	return 0;
}

static int pprof_set_metadata(void *state, const char *key, const char *value)
{
	struct pprof_writer *writer = state;

	if (strcmp(key, "mode") == 0)
		snprintf(writer->mode, sizeof(writer->mode), "%s", value);
	else if (strcmp(key, "event") == 0)
		snprintf(writer->event, sizeof(writer->event), "%s", value);
	else if (strcmp(key, "event_unit") == 0)
		writer->event_ns = strcmp(value, "nanoseconds") == 0;
	else if (strcmp(key, "event_period") == 0)
		writer->event_period = strtoull(value, NULL, 10);
	else if (strcmp(key, "interval") == 0)
		writer->interval_us = strtoull(value, NULL, 10);
	else if (strcmp(key, "duration") == 0)
		writer->duration_us = strtoull(value, NULL, 10);
	else if (strcmp(key, "python") == 0)
		snprintf(writer->python, sizeof(writer->python), "%s", value);
	return 0;
}

static int pprof_flush(void *state)
{
	(void)state;
	return 0; /* written whole at finish */
}

static void pprof_destroy(void *state)
{
	struct pprof_writer *writer = state;

	stack_table_free(&writer->stacks);
	intern_free(&writer->strings);
	intern_free(&writer->functions);
	intern_free(&writer->mappings);
	intern_free(&writer->sample_keys);
	free(writer->values);
	free(writer);
}

static const char *pprof_error(const void *state)
{
	return ((const struct pprof_writer *)state)->error;
}

static const struct pf_writer_ops pprof_writer_ops = {
	.set_metadata = pprof_set_metadata,
	.add_sample = pprof_add_sample,
	.flush = pprof_flush,
	.finish = pprof_finish,
	.destroy = pprof_destroy,
	.error = pprof_error,
};

int pprof_writer_create(int fd, const struct pf_writer_options *options, void **state,
			const struct pf_writer_ops **ops)
{
	struct pprof_writer *writer = calloc(1, sizeof(*writer));

	(void)options;
	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	stack_table_init(&writer->stacks);
	intern_init(&writer->strings);
	intern_init(&writer->functions);
	intern_init(&writer->mappings);
	intern_init(&writer->sample_keys);
	/* string_table[0] must be "". */
	if (string_index(writer, "") != 0) {
		pprof_destroy(writer);
		return -ENOMEM;
	}
	*state = writer;
	*ops = &pprof_writer_ops;
	return 0;
}
