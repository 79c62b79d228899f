// SPDX-License-Identifier: MIT
/*
 * An SVG flame graph (the flamegraph.pl layout: root at the bottom, callees
 * stacked above, siblings in name order) that opens in any browser: one
 * self-contained file, hover tooltips, a small inline script for click to
 * zoom and search.
 *
 * Samples are merged into a tree as they arrive: a node per distinct
 * (parent, frame) pair, where a frame is kind + file + name (lines are
 * merged so the graph is by function; a node keeps the range of lines it
 * saw), so memory grows with distinct stacks, not samples. Under the root
 * every sample first goes through its process's node; the process level is
 * drawn only when the profile holds more than one process. Widths are time
 * when samples carry it, else bytes allocated, else sample counts;
 * everything is written at finish.
 *
 * The differential graph (flamegraph_diff_writer_create) is the same tree
 * fed twice: NEW's samples and BASE's, each node keeping both weights. Boxes
 * are NEW's shares of NEW's total, coloured by the change of their total
 * share (red grew, blue shrank); a node only BASE has is drawn hatched at
 * BASE's share, after its NEW siblings, widening its ancestors by as much:
 * nothing BASE spent time in disappears. Two runs have different pids, so
 * the process level is merged there.
 */
#include "formats/flamegraph.h"
#include "formats/known_stacks.h"
#include "profile/profile.h"
#include "util/array.h"
#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Node paths of stacks drawn before, at most. */
#define KNOWN_PATHS_MAX_BYTES ((size_t)4 << 20)

#define FG_WIDTH        1200
#define FG_XPAD         10
#define FG_PLOT_WIDTH   (FG_WIDTH - 2 * FG_XPAD)
#define FG_ROW          16
#define FG_TOP          80   /* title, subtitle, controls, legend */
#define FG_LEGEND_Y     54   /* top of the legend's swatches, under the subtitle */
#define FG_SWATCH       12
#define FG_BOTTOM       34   /* the details line */
#define FG_CHAR_WIDTH   7.0  /* average glyph width of 12 px Verdana */
#define FG_MIN_PERMILLE 1    /* narrower than 0.1% of the total: not drawn */
#define FG_ROOT_FRAME   UINT32_MAX
#define FG_DRAIN_BYTES  (1 << 20)

/* Metadata shown in the subtitle; the rest has no place in a picture. */
enum fg_meta { META_PYTHON, META_MODE, META_INTERVAL, META_DURATION, META_SAMPLES, META_LOST, META_COUNT };
static const char *const meta_keys[META_COUNT] = { "python", "mode", "interval", "duration",
						   "samples", "lost_samples" };

/*
 * What a box stands for: the frame kinds, then the writer's own levels. The
 * first byte of a frame key; PF_FRAME_* values are kept as they are.
 */
enum fg_kind {
	FG_KIND_PYTHON = PF_FRAME_PYTHON,
	FG_KIND_NATIVE = PF_FRAME_NATIVE,
	FG_KIND_KERNEL = PF_FRAME_KERNEL,
	FG_KIND_INVALID = PF_FRAME_INVALID,
	FG_KIND_PROCESS, /* name "pid N", file "" */
	FG_KIND_ROOT,
};

struct fg_node {
	uint32_t frame;     /* frame id, FG_ROOT_FRAME for the root */
	uint32_t parent;    /* node id */
	uint64_t weight;    /* this frame and everything it called */
	uint64_t base_weight; /* the same in BASE (differential graph only) */
	int32_t first_line; /* smallest and largest line seen, -1 when none was */
	int32_t last_line;
	uint32_t thread;    /* the name of the thread of its first named sample: id + 1 in thread_names, 0 none */
	bool threads_several; /* and samples of other named threads too */
};

struct fg_child_key {
	uint32_t parent;
	uint32_t frame;
};

/* A frame id's parts, decoded from its interned key at finish. */
struct fg_frame_view {
	enum fg_kind kind;
	const char *file;
	const char *label; /* what the box says */
	uint32_t pid;      /* FG_KIND_PROCESS: siblings in pid order */
};

struct flamegraph_writer {
	int fd;
	struct intern_table frames;   /* kind byte, file, NUL, name -> frame id */
	struct intern_table children; /* fg_child_key -> node id - 1 (node 0 is the root) */
	struct intern_table thread_names; /* the samples' thread names, for the tooltips */
	struct fg_node *nodes;
	size_t nodes_capacity;
	char *key;                    /* scratch for one frame key */
	size_t key_capacity;
	char *metadata[META_COUNT];
	uint64_t sample_count;
	uint32_t metrics_seen;        /* PF_METRIC_* of any sample: picks the unit */
	bool counts_ns;               /* the counts are nanoseconds (event_unit: --event off-cpu) */
	bool bytes_moved;             /* the bytes were moved, not allocated (--event syscall:...:bytes, block-io) */
	uint32_t kinds_seen;          /* 1 << fg_kind of any frame: the legend's entries */
	size_t process_count;         /* distinct pids: a process level is drawn past one */
	int64_t last_process_frame;   /* frame id of last_pid's node, -1 before any */
	uint32_t last_pid;
	/* pf_sample.stack_id, under a process node (the epoch) -> its nodes, root first: a stack's
	 * frames, lines and kinds are in the tree already, only its weight is added again */
	struct known_stacks known;
	uint32_t *path;               /* one sample's nodes, root first */
	size_t path_capacity;
	bool differential;            /* flamegraph_diff_writer_create */
	bool adding_base;             /* differential: the samples now coming are BASE's */
	uint64_t base_sample_count;
	char error[256];
};

/* What finish computes from the tree before writing. */
struct fg_layout {
	size_t node_count;
	uint32_t *order;             /* non-root node ids sorted by (parent, label, file) */
	uint64_t *offset;            /* by node: weight to the left of it within the root */
	uint32_t *depth;             /* by node: 0 for the root */
	struct fg_frame_view *views; /* by frame id */
	uint32_t max_visible_depth;
	uint64_t total;              /* the root's drawn weight */
	bool processes_hidden;       /* one process: its level is not drawn, depths shift down */
	/* Differential graph only (else NULL and 0): by node, the weight drawn, in units of
	 * DIFF_UNITS per whole share, BASE-only frames included; the change of share that
	 * gives a box the fullest colour. */
	uint64_t *drawn;
	double full_colour_delta;
};

/* ---- aggregation ---- */

static int64_t intern_box(struct flamegraph_writer *writer, enum fg_kind kind, const char *file,
			  const char *name, bool *is_new)
{
	size_t file_len = strlen(file), name_len = strlen(name);
	size_t len = 1 + file_len + 1 + name_len;

	if (array_reserve((void **)&writer->key, &writer->key_capacity, len, 1, 256))
		return -ENOMEM;
	writer->key[0] = (char)kind;
	memcpy(writer->key + 1, file, file_len);
	writer->key[1 + file_len] = 0;
	memcpy(writer->key + 2 + file_len, name, name_len);
	return intern_add(&writer->frames, writer->key, len, is_new);
}

/* A frame kind this writer does not know must not pass for one of its own levels. */
static enum fg_kind frame_box_kind(const struct pf_frame *frame)
{
	return (unsigned)frame->kind <= PF_FRAME_INVALID ? (enum fg_kind)frame->kind : FG_KIND_INVALID;
}

static int64_t intern_frame(struct flamegraph_writer *writer, const struct pf_frame *frame)
{
	/* Lines and columns are left out on purpose: one box per function. */
	return intern_box(writer, frame_box_kind(frame), frame->file, frame->name, NULL);
}

/* The frame id of pid's box, counting the processes seen. */
static int64_t intern_process(struct flamegraph_writer *writer, uint32_t pid)
{
	char name[24];
	bool is_new = false;
	int64_t id;

	if (writer->last_process_frame >= 0 && writer->last_pid == pid)
		return writer->last_process_frame;
	snprintf(name, sizeof(name), "pid %" PRIu32, pid);
	id = intern_box(writer, FG_KIND_PROCESS, "", name, &is_new);
	if (id < 0)
		return id;
	writer->process_count += is_new;
	writer->last_pid = pid;
	writer->last_process_frame = id;
	return id;
}

static int reserve_nodes(struct flamegraph_writer *writer, size_t count)
{
	return array_reserve((void **)&writer->nodes, &writer->nodes_capacity, count,
			     sizeof(*writer->nodes), 1024);
}

/* The node for frame under parent, created with weight 0 if new. */
static int64_t child_node(struct flamegraph_writer *writer, uint32_t parent, uint32_t frame)
{
	struct fg_child_key key = { .parent = parent, .frame = frame };
	bool is_new = false;
	int64_t id = intern_add(&writer->children, &key, sizeof(key), &is_new);
	uint32_t node;

	if (id < 0)
		return id;
	node = (uint32_t)id + 1;
	if (is_new) {
		if (reserve_nodes(writer, (size_t)node + 1))
			return -ENOMEM;
		writer->nodes[node] = (struct fg_node){ .frame = frame, .parent = parent,
							.first_line = -1, .last_line = -1 };
	}
	return node;
}

/* The sample's weight on the side being added: NEW's, or BASE's in a differential graph. */
static void node_add_weight(const struct flamegraph_writer *writer, struct fg_node *node,
			    uint64_t weight)
{
	if (writer->adding_base)
		node->base_weight += weight;
	else
		node->weight += weight;
}

static void node_add_line(struct fg_node *node, int32_t line)
{
	if (line <= 0)
		return;
	if (node->first_line < 0 || line < node->first_line)
		node->first_line = line;
	if (line > node->last_line)
		node->last_line = line;
}

/* Enters the sample's process under the root: the node its stack hangs from. */
static int64_t process_node(struct flamegraph_writer *writer, uint32_t pid, uint64_t weight)
{
	int64_t frame = intern_process(writer, pid);
	int64_t node;

	if (frame < 0)
		return frame;
	node = child_node(writer, 0, (uint32_t)frame);
	if (node < 0)
		return node;
	node_add_weight(writer, &writer->nodes[node], weight);
	return node;
}

/* Adds the sample's frames under node with their weight; writer->path gets their nodes. */
static int add_frames(struct flamegraph_writer *writer, const struct pf_sample *sample, uint32_t node,
		      uint64_t weight)
{
	if (ARRAY_RESERVE(writer->path, writer->path_capacity, sample->frame_count))
		return -ENOMEM;
	for (size_t i = 0; i < sample->frame_count; i++) {
		int64_t frame = intern_frame(writer, &sample->frames[i]);
		int64_t child;

		if (frame < 0)
			return (int)frame;
		child = child_node(writer, node, (uint32_t)frame);
		if (child < 0)
			return (int)child;
		node = (uint32_t)child;
		node_add_weight(writer, &writer->nodes[node], weight);
		node_add_line(&writer->nodes[node], sample->frames[i].line);
		writer->kinds_seen |= 1u << frame_box_kind(&sample->frames[i]);
		writer->path[i] = node;
	}
	return 0;
}

/* The sample's thread name for fg_node.thread: its id + 1, 0 if none (or no room). */
static uint32_t thread_of(struct flamegraph_writer *writer, const struct pf_sample *sample)
{
	int64_t id;

	if (!sample->thread_name || !sample->thread_name[0])
		return 0;
	id = intern_add(&writer->thread_names, sample->thread_name, strlen(sample->thread_name) + 1, NULL);
	return id < 0 || id >= UINT32_MAX ? 0 : (uint32_t)id + 1;
}

static void node_add_thread(struct fg_node *node, uint32_t thread)
{
	if (!thread)
		return;
	if (!node->thread)
		node->thread = thread;
	else if (node->thread != thread)
		node->threads_several = true;
}

static int flamegraph_add_sample(void *state, const struct pf_sample *sample)
{
	struct flamegraph_writer *writer = state;
	int64_t signed_weight = pf_sample_weight(sample);
	/* Frees (negative) have no width: the memory graph shows where bytes were allocated. */
	uint64_t weight = signed_weight > 0 ? (uint64_t)signed_weight : 0;
	/* Two runs' pids differ: a differential graph compares their stacks, whatever the pid. */
	int64_t process = process_node(writer, writer->differential ? 0 : sample->pid, weight);
	size_t path_bytes = sample->frame_count * sizeof(*writer->path), len = 0;
	const uint32_t *known;
	uint32_t *kept, thread = thread_of(writer, sample);
	int err;

	if (process < 0)
		return (int)process;
	if (writer->adding_base)
		writer->base_sample_count++;
	else
		writer->sample_count++;
	writer->metrics_seen |= sample->metrics;
	node_add_weight(writer, &writer->nodes[0], weight);
	known = known_stacks_find(&writer->known, sample->stack_id, (uint64_t)process, &len);
	if (known && len == path_bytes) {
		for (size_t i = 0; i < sample->frame_count; i++) {
			node_add_weight(writer, &writer->nodes[known[i]], weight);
			node_add_thread(&writer->nodes[known[i]], thread);
		}
		return 0;
	}
	err = add_frames(writer, sample, (uint32_t)process, weight);
	if (err)
		return err;
	for (size_t i = 0; i < sample->frame_count; i++)
		node_add_thread(&writer->nodes[writer->path[i]], thread);
	kept = known_stacks_put(&writer->known, sample->stack_id, (uint64_t)process, path_bytes);
	if (kept)
		memcpy(kept, writer->path, path_bytes);
	return 0;
}

/* Which side's samples come next. Stack ids are the reader's: the other file's may reuse them. */
static int set_diff_side(struct flamegraph_writer *writer, const char *value)
{
	bool base = strcmp(value, "base") == 0;

	if (!writer->differential || (!base && strcmp(value, "new") != 0))
		return errbuf_format(writer->error, sizeof(writer->error), -EINVAL,
				     "no differential side \"%s\"", value);
	if (base != writer->adding_base) {
		known_stacks_free(&writer->known);
		known_stacks_init(&writer->known, KNOWN_PATHS_MAX_BYTES);
	}
	writer->adding_base = base;
	return 0;
}

static int flamegraph_set_metadata(void *state, const char *key, const char *value)
{
	struct flamegraph_writer *writer = state;

	if (strcmp(key, FLAMEGRAPH_DIFF_SIDE) == 0)
		return set_diff_side(writer, value);
	if (strcmp(key, "event_unit") == 0)
		writer->counts_ns = strcmp(value, "nanoseconds") == 0;
	if (strcmp(key, "event") == 0)
		writer->bytes_moved = !strncmp(value, "syscall:", strlen("syscall:")) || !strcmp(value, "block-io");
	/* The subtitle tells NEW's run. */
	if (writer->adding_base)
		return 0;
	for (int i = 0; i < META_COUNT; i++) {
		char *copy;

		if (strcmp(key, meta_keys[i]) != 0)
			continue;
		copy = strdup(value);
		if (!copy)
			return -ENOMEM;
		free(writer->metadata[i]);
		writer->metadata[i] = copy;
	}
	return 0;
}

static int flamegraph_flush(void *state)
{
	(void)state;
	return 0; /* the picture needs every sample: written whole at finish */
}

/* ---- layout ---- */

static void decode_frame(const struct flamegraph_writer *writer, uint32_t id,
			 struct fg_frame_view *view)
{
	size_t len;
	const char *key = intern_key(&writer->frames, id, &len);
	const char *file = key + 1;
	const char *name = file + strlen(file) + 1;

	view->kind = (enum fg_kind)key[0];
	view->file = file;
	view->pid = 0;
	switch (view->kind) {
	case FG_KIND_INVALID:
		view->label = "[truncated]";
		break;
	case FG_KIND_NATIVE:
		view->label = *name ? name : *file ? file : "[native]";
		break;
	case FG_KIND_PROCESS:
		view->label = name;
		view->pid = (uint32_t)strtoul(name + strlen("pid "), NULL, 10);
		break;
	default:
		view->label = *name ? name : "[unknown]";
		break;
	}
}

static const struct fg_frame_view root_view = { .kind = FG_KIND_ROOT, .file = "", .label = "all" };

static const struct fg_frame_view *node_view(const struct fg_layout *layout,
					     const struct fg_node *node)
{
	return node->frame == FG_ROOT_FRAME ? &root_view : &layout->views[node->frame];
}

/* A node of a differential graph that only BASE has. */
static bool node_only_in_base(const struct fg_node *node)
{
	return node->weight == 0 && node->base_weight > 0;
}

/* The weight a node is drawn with: its own, or in a differential graph its share's units. */
static uint64_t drawn_weight(const struct flamegraph_writer *writer, const struct fg_layout *layout,
			     uint32_t id)
{
	return layout->drawn ? layout->drawn[id] : writer->nodes[id].weight;
}

static int compare_siblings(const void *a, const void *b, void *context)
{
	const struct flamegraph_writer *writer = ((void **)context)[0];
	const struct fg_layout *layout = ((void **)context)[1];
	const struct fg_node *left = &writer->nodes[*(const uint32_t *)a];
	const struct fg_node *right = &writer->nodes[*(const uint32_t *)b];
	const struct fg_frame_view *left_view = node_view(layout, left);
	const struct fg_frame_view *right_view = node_view(layout, right);
	int by_name;

	if (left->parent != right->parent)
		return left->parent < right->parent ? -1 : 1;
	/* What only BASE had comes after NEW's frames: a tail on the right of their caller. */
	if (node_only_in_base(left) != node_only_in_base(right))
		return node_only_in_base(left) ? 1 : -1;
	if (left_view->kind == FG_KIND_PROCESS && right_view->kind == FG_KIND_PROCESS &&
	    left_view->pid != right_view->pid)
		return left_view->pid < right_view->pid ? -1 : 1;
	by_name = strcmp(left_view->label, right_view->label);
	if (by_name)
		return by_name;
	by_name = strcmp(left_view->file, right_view->file);
	if (by_name)
		return by_name;
	return (int)left_view->kind - (int)right_view->kind;
}

/* A process box when the profile holds a single process: laid out, not drawn. */
static bool node_hidden(const struct flamegraph_writer *writer, const struct fg_layout *layout,
			uint32_t id)
{
	return id != 0 && layout->processes_hidden &&
	       layout->views[writer->nodes[id].frame].kind == FG_KIND_PROCESS;
}

/*
 * Sorting by parent id puts every parent's group after its own position is
 * known (a parent is always created before its children, so has a smaller
 * id): one pass assigns offsets and depths without recursion. A hidden
 * process box takes its parent's depth, so its stacks stand on the root.
 */
static void place_nodes(const struct flamegraph_writer *writer, struct fg_layout *layout)
{
	uint32_t current_parent = UINT32_MAX;
	uint64_t cursor = 0;

	layout->offset[0] = 0;
	layout->depth[0] = 0;
	layout->max_visible_depth = 0;
	for (size_t i = 0; i + 1 < layout->node_count; i++) {
		uint32_t id = layout->order[i];
		const struct fg_node *node = &writer->nodes[id];

		if (node->parent != current_parent) {
			current_parent = node->parent;
			cursor = layout->offset[current_parent];
		}
		layout->offset[id] = cursor;
		layout->depth[id] = layout->depth[node->parent] + !node_hidden(writer, layout, id);
		cursor += drawn_weight(writer, layout, id);
		if (drawn_weight(writer, layout, id) * 1000 >= layout->total * FG_MIN_PERMILLE &&
		    layout->depth[id] > layout->max_visible_depth)
			layout->max_visible_depth = layout->depth[id];
	}
}

static void layout_free(struct fg_layout *layout)
{
	free(layout->order);
	free(layout->offset);
	free(layout->depth);
	free(layout->views);
	free(layout->drawn);
}

/* What a whole share is drawn as in a differential graph: fine enough for any profile, and
 * room left in 64 bits for the BASE-only frames added to their ancestors. */
#define DIFF_UNITS ((double)(1ull << 40))

static double share_of(uint64_t weight, uint64_t total)
{
	return total ? (double)weight / (double)total : 0.0;
}

/* A node's change of total share, NEW's minus BASE's. */
static double node_share_delta(const struct flamegraph_writer *writer, const struct fg_node *node)
{
	return share_of(node->weight, writer->nodes[0].weight) -
	       share_of(node->base_weight, writer->nodes[0].base_weight);
}

/*
 * Each node's width in a differential graph: NEW's share, plus the BASE share of the
 * BASE-only nodes under it (a BASE-only node: its BASE share). A child always has a larger
 * id than its parent, so one pass from the last id up carries them to every ancestor.
 */
static int layout_diff_widths(const struct flamegraph_writer *writer, struct fg_layout *layout)
{
	uint64_t *gone = calloc(layout->node_count, sizeof(*gone));
	double largest_delta = 0;

	layout->drawn = malloc(layout->node_count * sizeof(*layout->drawn));
	if (!gone || !layout->drawn) {
		free(gone);
		return -ENOMEM;
	}
	for (size_t id = layout->node_count; id-- > 0;) {
		const struct fg_node *node = &writer->nodes[id];
		uint64_t base_units = (uint64_t)(share_of(node->base_weight, writer->nodes[0].base_weight) * DIFF_UNITS);
		uint64_t new_units = (uint64_t)(share_of(node->weight, writer->nodes[0].weight) * DIFF_UNITS);

		if (node_only_in_base(node))
			gone[id] = base_units;
		layout->drawn[id] = new_units + gone[id];
		if (id > 0) {
			gone[node->parent] += gone[id];
			if (fabs(node_share_delta(writer, node)) > largest_delta)
				largest_delta = fabs(node_share_delta(writer, node));
		}
	}
	free(gone);
	/* Noise of a point or two is not drawn as loudly as a real change. */
	layout->full_colour_delta = largest_delta > 0.02 ? largest_delta : 0.02;
	return 0;
}

static int layout_build(const struct flamegraph_writer *writer, struct fg_layout *layout)
{
	size_t frame_count = intern_count(&writer->frames);
	const void *context[2] = { writer, layout };

	layout->node_count = 1 + intern_count(&writer->children);
	layout->processes_hidden = writer->process_count <= 1;
	if (writer->differential && layout_diff_widths(writer, layout))
		return -ENOMEM;
	layout->total = drawn_weight(writer, layout, 0);
	layout->order = malloc(layout->node_count * sizeof(*layout->order));
	layout->offset = malloc(layout->node_count * sizeof(*layout->offset));
	layout->depth = malloc(layout->node_count * sizeof(*layout->depth));
	layout->views = malloc((frame_count ? frame_count : 1) * sizeof(*layout->views));
	if (!layout->order || !layout->offset || !layout->depth || !layout->views)
		return -ENOMEM;
	for (uint32_t id = 0; id < frame_count; id++)
		decode_frame(writer, id, &layout->views[id]);
	for (size_t i = 0; i + 1 < layout->node_count; i++)
		layout->order[i] = (uint32_t)i + 1;
	qsort_r(layout->order, layout->node_count - 1, sizeof(*layout->order), compare_siblings,
		(void *)context);
	place_nodes(writer, layout);
	return 0;
}

/* ---- text ---- */

/* Length of the valid UTF-8 sequence XML accepts at text, or 0 if there is none. */
static size_t xml_char_length(const unsigned char *text)
{
	size_t len;

	if (text[0] < 0x80)
		return text[0] >= 0x20 || text[0] == '\t' ? 1 : 0;
	len = utf8_well_formed_length(text);
	/* U+FFFE and U+FFFF are not XML characters either. */
	if (len == 3 && text[0] == 0xef && text[1] == 0xbf && text[2] >= 0xbe)
		return 0;
	return len;
}

/* A bidirectional control is drawn as its escape, "\\u202e": six characters. */
#define BIDI_SHOWN_CHARS 6

/* Characters as a reader sees them: each valid sequence or stray byte is one. */
static size_t xml_char_count(const char *text)
{
	const unsigned char *at = (const unsigned char *)text;
	size_t count = 0;

	while (*at) {
		size_t len = xml_char_length(at);

		count += utf8_bidi_control(at, len) ? BIDI_SHOWN_CHARS : 1;
		at += len ? len : 1;
	}
	return count;
}

/* At most max_chars characters of text, escaped; bytes XML cannot hold become U+FFFD, and
 * bidirectional controls (which would reorder the names a reader sees) their escape. */
static void put_xml_prefix(FILE *out, const char *text, size_t max_chars)
{
	const unsigned char *at = (const unsigned char *)text;

	for (size_t written = 0; *at && written < max_chars; written++) {
		size_t len = xml_char_length(at);
		unsigned bidi = utf8_bidi_control(at, len);

		if (bidi) {
			if (written + BIDI_SHOWN_CHARS > max_chars)
				break;
			fprintf(out, "\\u%04x", bidi);
			written += BIDI_SHOWN_CHARS - 1;
			at += len;
			continue;
		}
		switch (len ? *at : 0) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		case 0: fputs("\xef\xbf\xbd", out); break;
		default: fwrite(at, 1, len, out); break;
		}
		at += len ? len : 1;
	}
}

static void put_xml(FILE *out, const char *text)
{
	put_xml_prefix(out, text, SIZE_MAX);
}

/* The label cut to a box width_px wide, ".." marking a cut; nothing under 3 characters. */
static void put_label(FILE *out, const char *label, double width_px)
{
	double room = (width_px - 6) / FG_CHAR_WIDTH;
	size_t fits = room > 0 ? (size_t)room : 0;

	if (fits < 3)
		return;
	if (xml_char_count(label) <= fits) {
		put_xml(out, label);
		return;
	}
	put_xml_prefix(out, label, fits - 2);
	fputs("..", out);
}

enum fg_unit { UNIT_TIME, UNIT_BYTES, UNIT_SAMPLES, UNIT_EVENTS, UNIT_NANOSECONDS };

static enum fg_unit writer_unit(const struct flamegraph_writer *writer)
{
	if (writer->metrics_seen & PF_METRIC_TIME)
		return UNIT_TIME;
	if (writer->metrics_seen & PF_METRIC_MEMORY)
		return UNIT_BYTES;
	if (writer->metrics_seen & PF_METRIC_COUNT)
		return writer->counts_ns ? UNIT_NANOSECONDS : UNIT_EVENTS;
	return UNIT_SAMPLES;
}

static void put_amount(FILE *out, uint64_t value, enum fg_unit unit)
{
	switch (unit) {
	case UNIT_TIME:
		if (value >= 1000000)
			fprintf(out, "%.2f s", (double)value / 1e6);
		else if (value >= 1000)
			fprintf(out, "%.2f ms", (double)value / 1e3);
		else
			fprintf(out, "%" PRIu64 " \xc2\xb5s", value);
		break;
	case UNIT_BYTES:
		if (value >= 1 << 20)
			fprintf(out, "%.2f MiB", (double)value / (1 << 20));
		else if (value >= 1 << 10)
			fprintf(out, "%.2f KiB", (double)value / (1 << 10));
		else
			fprintf(out, "%" PRIu64 " B", value);
		break;
	case UNIT_EVENTS:
		fprintf(out, "%" PRIu64 " event%s", value, value == 1 ? "" : "s");
		break;
	case UNIT_NANOSECONDS:
		put_amount(out, value / 1000, UNIT_TIME);
		break;
	default:
		fprintf(out, "%" PRIu64 " sample%s", value, value == 1 ? "" : "s");
		break;
	}
}

/* A metadata number in µs, shown in human units; other text as is. */
static void put_meta_time(FILE *out, const char *value)
{
	char *end;
	unsigned long long us = strtoull(value, &end, 10);

	if (*value && !*end)
		put_amount(out, us, UNIT_TIME);
	else
		put_xml(out, value);
}

/* ---- SVG ---- */

static int write_all(struct flamegraph_writer *writer, const char *data, size_t len)
{
	int err = fd_write_all(writer->fd, data, len, NULL);

	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "write failed: %s",
				     strerror(-err));
	return 0;
}

struct svg_out {
	FILE *file;
	char *buffer;
	size_t buffer_len;
};

/* Writes what is buffered, so a large graph never sits in memory twice. */
static int svg_drain(struct flamegraph_writer *writer, struct svg_out *out)
{
	long used;
	int err;

	if (fflush(out->file) || (used = ftell(out->file)) < 0)
		return -ENOMEM;
	err = write_all(writer, out->buffer, (size_t)used);
	rewind(out->file);
	return err;
}

/* Preceded by the geometry: var W (plot width), X (left pad), C (char width). */
static const char svg_script[] =
	"var fs=[],zoomed=null;\n"
	"function $(i){return document.getElementById(i);}\n"
	"function lab(n,w){var c=Math.floor((w-6)/C);if(c<3)return '';"
	"var a=Array.from(n);return a.length<=c?n:a.slice(0,c-2).join('')+'..';}\n"
	"function place(f,x,w){f.r.setAttribute('x',x);f.r.setAttribute('width',w);"
	"f.t.setAttribute('x',x+3);f.t.textContent=lab(f.n,w);}\n"
	"function zoom(z){zoomed=z;$('unzoom').style.display=z?'':'none';"
	"fs.forEach(function(f){var s=f.g.style;s.display='';s.opacity='';"
	"if(!z){place(f,f.x,f.w);return;}"
	"var e=1e-3,k=W/z.w;"
	"if(f.y>z.y&&f.x<=z.x+e&&f.x+f.w>=z.x+z.w-e){place(f,X,W);s.opacity='0.5';}"
	"else if(f.y<=z.y&&f.x>=z.x-e&&f.x+f.w<=z.x+z.w+e)place(f,X+(f.x-z.x)*k,f.w*k);"
	"else s.display='none';});}\n"
	"function search(){var t=prompt('Search frames (regular expression):','');"
	"if(t===null)return;var re=null;try{if(t)re=new RegExp(t);}catch(x){alert(x);return;}"
	"var m=[];fs.forEach(function(f){var hit=re&&re.test(f.n);"
	"f.r.setAttribute('fill',hit?'rgb(230,0,230)':f.c);if(hit)m.push([f.x,f.x+f.w]);});"
	"m.sort(function(a,b){return a[0]-b[0];});var end=-1,sum=0;"
	"m.forEach(function(r){if(r[1]<=end)return;sum+=r[1]-Math.max(r[0],end);end=r[1];});"
	"$('matched').textContent=re?'Matched: '+(100*sum/W).toFixed(1)+'%':'';}\n"
	"window.addEventListener('load',function(){"
	"Array.prototype.forEach.call(document.querySelectorAll('g.f'),function(g){"
	"var r=g.querySelector('rect');var f={g:g,r:r,t:g.querySelector('text'),"
	"x:+r.getAttribute('x'),w:+r.getAttribute('width'),y:+r.getAttribute('y'),"
	"n:g.getAttribute('data-n'),c:r.getAttribute('fill')};g.fg=f;fs.push(f);"
	"g.addEventListener('click',function(){zoom(f);});"
	"g.addEventListener('mouseover',function(){$('details').textContent="
	"g.querySelector('title').textContent;});"
	"g.addEventListener('mouseout',function(){$('details').textContent=' ';});});"
	"$('unzoom').addEventListener('click',function(){zoom(null);});"
	"$('search').addEventListener('click',search);"
	"document.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key=='f'){"
	"e.preventDefault();search();}if(e.key=='Escape')zoom(null);});});\n"
	"]]></script>\n";

/*
 * Three hue families far apart, so a kernel read_zero never passes for a
 * Python one: Python warm (flamegraph.pl's "hot", red to yellow, hue -16 to
 * 67), native teal ("aqua", hue 180), kernel lavender to violet (hue 247-281). The
 * shade within a family is picked by a hash of the name, so a function keeps
 * its colour. The root and processes are neutral grey, truncations darker.
 */
static void kind_colour(enum fg_kind kind, double v1, double v2, double v3, int rgb[3])
{
	switch (kind) {
	case FG_KIND_KERNEL:
		rgb[0] = 165 + (int)(50 * v1), rgb[1] = 130 + (int)(25 * v2),
		rgb[2] = 245 + (int)(10 * v1);
		break;
	case FG_KIND_NATIVE:
		rgb[0] = 50 + (int)(60 * v1), rgb[1] = 165 + (int)(55 * v1),
		rgb[2] = 165 + (int)(55 * v1);
		break;
	case FG_KIND_INVALID:
		rgb[0] = rgb[1] = rgb[2] = 160 + (int)(30 * v1);
		break;
	case FG_KIND_PROCESS:
	case FG_KIND_ROOT:
		rgb[0] = rgb[1] = rgb[2] = 210 + (int)(25 * v1);
		break;
	default:
		rgb[0] = 205 + (int)(50 * v3), rgb[1] = (int)(230 * v1), rgb[2] = (int)(55 * v2);
		break;
	}
}

static void frame_colour(const struct fg_frame_view *view, int rgb[3])
{
	uint64_t hash = hash_bytes(view->label, strlen(view->label));

	kind_colour(view->kind, (double)(hash & 0xff) / 255.0, (double)((hash >> 8) & 0xff) / 255.0,
		    (double)((hash >> 16) & 0xff) / 255.0, rgb);
}

/*
 * A differential box: red as its share grew, blue as it shrank, pale grey unchanged, full at
 * the layout's full_colour_delta. A frame only BASE has is hatched (the "gone" pattern).
 */
static void diff_colour(const struct flamegraph_writer *writer, const struct fg_layout *layout,
			const struct fg_node *node, FILE *out)
{
	double delta = node_share_delta(writer, node);
	double strength = fmin(1.0, fabs(delta) / layout->full_colour_delta);
	int faded = (int)(235 - 190 * strength);

	if (node_only_in_base(node))
		fputs("url(#gone)", out);
	else if (delta > 0)
		fprintf(out, "rgb(255,%d,%d)", faded, faded);
	else if (delta < 0)
		fprintf(out, "rgb(%d,%d,255)", faded, faded);
	else
		fputs("rgb(235,235,235)", out);
}

/* The shares a differential box compares: "; share 10.00% -> 30.00%, +20.00 points". */
static void write_diff_tooltip(const struct flamegraph_writer *writer, FILE *out,
			       const struct fg_node *node)
{
	double before = 100.0 * share_of(node->base_weight, writer->nodes[0].base_weight);
	double after = 100.0 * share_of(node->weight, writer->nodes[0].weight);

	fprintf(out, "; share %.2f%% \xe2\x86\x92 %.2f%%, %+.2f points", before, after, after - before);
}

static void write_diff_subtitle(const struct flamegraph_writer *writer, FILE *out)
{
	fprintf(out,
		"<text id=\"sub\" x=\"600\" y=\"44\">NEW %" PRIu64 " samples vs BASE %" PRIu64
		" samples \xc2\xb7 each by its share of its own total weight \xc2\xb7 width: NEW's share"
		"</text>\n",
		writer->sample_count, writer->base_sample_count);
}

static void write_subtitle(const struct flamegraph_writer *writer, FILE *out)
{
	char *const *meta = writer->metadata;
	const char *separator = "";

	fputs("<text id=\"sub\" x=\"600\" y=\"44\">", out);
	if (meta[META_PYTHON]) {
		fputs("Python ", out);
		put_xml(out, meta[META_PYTHON]);
		separator = " \xc2\xb7 ";
	}
	if (meta[META_MODE]) {
		fprintf(out, "%smode ", separator);
		put_xml(out, meta[META_MODE]);
		separator = " \xc2\xb7 ";
	}
	if (meta[META_INTERVAL]) {
		fprintf(out, "%sinterval ", separator);
		put_meta_time(out, meta[META_INTERVAL]);
		separator = " \xc2\xb7 ";
	}
	if (meta[META_DURATION]) {
		fprintf(out, "%sduration ", separator);
		put_meta_time(out, meta[META_DURATION]);
		separator = " \xc2\xb7 ";
	}
	fputs(separator, out);
	if (meta[META_SAMPLES])
		put_xml(out, meta[META_SAMPLES]);
	else
		fprintf(out, "%" PRIu64, writer->sample_count);
	fputs(" samples", out);
	if (meta[META_LOST] && strcmp(meta[META_LOST], "0") != 0) {
		fputs(" (", out);
		put_xml(out, meta[META_LOST]);
		fputs(" lost)", out);
	}
	fputs(" \xc2\xb7 width: ", out);
	fputs(writer_unit(writer) == UNIT_TIME || writer_unit(writer) == UNIT_NANOSECONDS ? "time"
	      : writer_unit(writer) == UNIT_BYTES ? (writer->bytes_moved ? "bytes moved" : "bytes allocated")
	      : writer_unit(writer) == UNIT_EVENTS ? "events"
						  : "samples",
	      out);
	fputs("</text>\n", out);
}

/* What the differential colours mean, in the legend's row. */
static void write_diff_legend(FILE *out)
{
	static const struct {
		const char *fill, *name;
	} entries[] = { { "rgb(255,45,45)", "share grew" },
			{ "rgb(45,45,255)", "share shrank" },
			{ "url(#gone)", "only in BASE" } };
	double x = FG_XPAD;

	fputs("<g id=\"legend\">", out);
	for (size_t i = 0; i < ARRAY_SIZE(entries); i++) {
		fprintf(out,
			"<rect x=\"%g\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"2\" fill=\"%s\"/>"
			"<text x=\"%g\" y=\"%d\">%s</text>",
			x, FG_LEGEND_Y, FG_SWATCH, FG_SWATCH, entries[i].fill, x + FG_SWATCH + 4,
			FG_LEGEND_Y + FG_SWATCH - 2, entries[i].name);
		x += FG_SWATCH + 4 + (double)strlen(entries[i].name) * FG_CHAR_WIDTH + 16;
	}
	fputs("</g>\n", out);
}

/*
 * A swatch in each family's middle shade and its name, for the kinds the
 * profile holds, on a row of its own between the subtitle and the frames so
 * it meets neither the texts above nor the details line below.
 */
static void write_legend(const struct flamegraph_writer *writer, FILE *out)
{
	static const struct {
		enum fg_kind kind;
		const char *name;
	} entries[] = { { FG_KIND_PYTHON, "Python" }, { FG_KIND_NATIVE, "native" },
			{ FG_KIND_KERNEL, "kernel" } };
	double x = FG_XPAD;

	if (writer->differential) {
		write_diff_legend(out);
		return;
	}
	fputs("<g id=\"legend\">", out);
	for (size_t i = 0; i < ARRAY_SIZE(entries); i++) {
		int rgb[3];

		if (!(writer->kinds_seen & (1u << entries[i].kind)))
			continue;
		kind_colour(entries[i].kind, 0.5, 0.5, 0.5, rgb);
		fprintf(out,
			"<rect x=\"%g\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"2\" "
			"fill=\"rgb(%d,%d,%d)\"/><text x=\"%g\" y=\"%d\">%s</text>",
			x, FG_LEGEND_Y, FG_SWATCH, FG_SWATCH, rgb[0], rgb[1], rgb[2],
			x + FG_SWATCH + 4, FG_LEGEND_Y + FG_SWATCH - 2, entries[i].name);
		x += FG_SWATCH + 4 + (double)strlen(entries[i].name) * FG_CHAR_WIDTH + 16;
	}
	fputs("</g>\n", out);
}

static void write_header(const struct flamegraph_writer *writer, FILE *out, int height)
{
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
		"#title{font-size:17px;text-anchor:middle}#sub{fill:#555;text-anchor:middle}"
		"#unzoom,#search{cursor:pointer}g.f{cursor:pointer}"
		"g.f:hover rect{stroke:#000;stroke-width:0.5}</style>\n"
		"<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%%\"/>"
		"</linearGradient>"
		"<pattern id=\"gone\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
		"patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"rgb(190,200,255)\"/>"
		"<rect width=\"2\" height=\"6\" fill=\"rgb(70,90,230)\"/></pattern></defs>\n",
		FG_WIDTH, height, FG_WIDTH, height);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\nvar W=%d,X=%d,C=%g;\n",
		FG_PLOT_WIDTH, FG_XPAD, FG_CHAR_WIDTH);
	fputs(svg_script, out);
	fprintf(out,
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">%s</text>\n",
		FG_WIDTH, height, FG_WIDTH / 2,
		writer->differential ? "Differential Flame Graph" : "Flame Graph");
	if (writer->differential)
		write_diff_subtitle(writer, out);
	else
		write_subtitle(writer, out);
	write_legend(writer, out);
	fprintf(out,
		"<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
		FG_XPAD, FG_WIDTH - FG_XPAD, FG_XPAD, height - 12, FG_WIDTH - FG_XPAD,
		height - 12);
}

/* The file and the lines seen, or what of them is known: " (app.py:12-30)". */
static void write_location(FILE *out, const struct fg_frame_view *view, const struct fg_node *node)
{
	bool show_file = *view->file && strcmp(view->file, view->label) != 0;
	bool show_lines = node->first_line > 0;

	if (view->kind == FG_KIND_INVALID || (!show_file && !show_lines))
		return;
	fputs(" (", out);
	if (show_file)
		put_xml(out, view->file);
	if (show_lines) {
		fprintf(out, "%s%" PRId32, show_file ? ":" : "line ", node->first_line);
		if (node->last_line != node->first_line)
			fprintf(out, "-%" PRId32, node->last_line);
	}
	fputc(')', out);
}

static void write_tooltip(FILE *out, const struct fg_frame_view *view, const struct fg_node *node,
			  const char *thread, uint64_t total, enum fg_unit unit)
{
	put_xml(out, view->label);
	write_location(out, view, node);
	if (view->kind == FG_KIND_KERNEL)
		fputs(" [kernel]", out);
	else if (view->kind == FG_KIND_NATIVE)
		fputs(" [native]", out);
	else if (view->kind == FG_KIND_PROCESS)
		fputs(" [process]", out);
	fputs(": ", out);
	if (node_only_in_base(node)) {
		fputs("only in BASE", out);
		return;
	}
	put_amount(out, node->weight, unit);
	fprintf(out, ", %.2f%%", total ? 100.0 * (double)node->weight / (double)total : 0.0);
	if (thread) {
		fputs(node->threads_several ? " (threads " : " (thread ", out);
		put_xml(out, thread);
		fputs(node->threads_several ? " and others)" : ")", out);
	}
}

static void write_frame(const struct flamegraph_writer *writer, const struct fg_layout *layout,
			FILE *out, uint32_t id, int height)
{
	const struct fg_node *node = &writer->nodes[id];
	const struct fg_frame_view *view = node_view(layout, node);
	double scale = (double)FG_PLOT_WIDTH / (double)layout->total;
	double x = FG_XPAD + (double)layout->offset[id] * scale;
	double width = (double)drawn_weight(writer, layout, id) * scale;
	int y = height - FG_BOTTOM - (int)(layout->depth[id] + 1) * FG_ROW;
	int rgb[3];

	fputs("<g class=\"f\" data-n=\"", out);
	put_xml(out, view->label);
	fputs("\"><title>", out);
	write_tooltip(out, view, node,
		      node->thread ? intern_key(&writer->thread_names, node->thread - 1, NULL) : NULL,
		      writer->nodes[0].weight, writer_unit(writer));
	if (writer->differential)
		write_diff_tooltip(writer, out, node);
	fprintf(out,
		"</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"",
		x, y, width, FG_ROW - 1);
	if (writer->differential)
		diff_colour(writer, layout, node, out);
	else {
		frame_colour(view, rgb);
		fprintf(out, "rgb(%d,%d,%d)", rgb[0], rgb[1], rgb[2]);
	}
	fprintf(out, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
	put_label(out, view->label, width);
	fputs("</text></g>\n", out);
}

static bool node_visible(const struct flamegraph_writer *writer, const struct fg_layout *layout,
			 uint32_t id)
{
	return drawn_weight(writer, layout, id) * 1000 >= layout->total * FG_MIN_PERMILLE &&
	       !node_hidden(writer, layout, id);
}

static int write_frames(struct flamegraph_writer *writer, const struct fg_layout *layout,
			struct svg_out *out, int height)
{
	fputs("<g id=\"frames\">\n", out->file);
	write_frame(writer, layout, out->file, 0, height);
	for (size_t i = 0; i + 1 < layout->node_count; i++) {
		uint32_t id = layout->order[i];

		if (!node_visible(writer, layout, id))
			continue;
		write_frame(writer, layout, out->file, id, height);
		if (ftell(out->file) > FG_DRAIN_BYTES) {
			int err = svg_drain(writer, out);

			if (err)
				return err;
		}
	}
	fputs("</g>\n", out->file);
	return 0;
}

static void write_empty_note(FILE *out, int height)
{
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">No samples</text>\n",
		FG_WIDTH / 2, height - FG_BOTTOM - FG_ROW / 2);
}

static int write_svg(struct flamegraph_writer *writer, const struct fg_layout *layout,
		     struct svg_out *out)
{
	int height = FG_TOP + (int)(layout->max_visible_depth + 1) * FG_ROW + FG_BOTTOM;
	int err = 0;

	write_header(writer, out->file, height);
	if (layout->total)
		err = write_frames(writer, layout, out, height);
	else
		write_empty_note(out->file, height);
	if (err)
		return err;
	fputs("</svg>\n", out->file);
	return svg_drain(writer, out);
}

static int flamegraph_finish(void *state)
{
	struct flamegraph_writer *writer = state;
	struct fg_layout layout = { 0 };
	struct svg_out out = { 0 };
	int err = layout_build(writer, &layout);

	if (!err) {
		out.file = open_memstream(&out.buffer, &out.buffer_len);
		err = out.file ? write_svg(writer, &layout, &out) : -ENOMEM;
	}
	if (err == -ENOMEM && !writer->error[0])
		errbuf_format(writer->error, sizeof(writer->error), err, "out of memory");
	if (out.file)
		fclose(out.file);
	free(out.buffer);
	layout_free(&layout);
	return err;
}

static void flamegraph_destroy(void *state)
{
	struct flamegraph_writer *writer = state;

	intern_free(&writer->frames);
	intern_free(&writer->children);
	intern_free(&writer->thread_names);
	known_stacks_free(&writer->known);
	free(writer->path);
	for (int i = 0; i < META_COUNT; i++)
		free(writer->metadata[i]);
	free(writer->nodes);
	free(writer->key);
	free(writer);
}

static const char *flamegraph_error(const void *state)
{
	return ((const struct flamegraph_writer *)state)->error;
}

static const struct pf_writer_ops flamegraph_writer_ops = {
	.set_metadata = flamegraph_set_metadata,
	.add_sample = flamegraph_add_sample,
	.flush = flamegraph_flush,
	.finish = flamegraph_finish,
	.destroy = flamegraph_destroy,
	.error = flamegraph_error,
};

static int writer_create(int fd, bool differential, void **state, const struct pf_writer_ops **ops)
{
	struct flamegraph_writer *writer = calloc(1, sizeof(*writer));

	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	writer->differential = differential;
	intern_init(&writer->frames);
	intern_init(&writer->children);
	intern_init(&writer->thread_names);
	known_stacks_init(&writer->known, KNOWN_PATHS_MAX_BYTES);
	if (reserve_nodes(writer, 1)) {
		free(writer);
		return -ENOMEM;
	}
	writer->nodes[0] = (struct fg_node){ .frame = FG_ROOT_FRAME, .parent = 0, .first_line = -1,
					     .last_line = -1 };
	writer->last_process_frame = -1;
	*state = writer;
	*ops = &flamegraph_writer_ops;
	return 0;
}

int flamegraph_writer_create(int fd, const struct pf_writer_options *options, void **state,
			     const struct pf_writer_ops **ops)
{
	(void)options;
	return writer_create(fd, false, state, ops);
}

int flamegraph_diff_writer_create(int fd, const struct pf_writer_options *options, void **state,
				  const struct pf_writer_ops **ops)
{
	(void)options;
	return writer_create(fd, true, state, ops);
}
