/* SPDX-License-Identifier: MIT */
/*
 * Tachyon, CPython 3.15's profiling binary format (version 1), laid out as
 * CPython 3.15.2's reader accepts it: the constants, the record decoder that
 * the reader and the dump share, and the backends' constructors.
 */
#ifndef PYBPFPROF_TACHYON_H
#define PYBPFPROF_TACHYON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/intern.h"

#define TACHYON_MAGIC            0x54414348u
#define TACHYON_VERSION          1u
#define TACHYON_HEADER_SIZE      64u
#define TACHYON_FOOTER_SIZE      32u
#define TACHYON_STATS_SIZE       56u
#define TACHYON_STATS_VERSION    1u
#define TACHYON_STATS_MAGIC      "TACHSTAT"
#define TACHYON_MAX_DEPTH        256u
#define TACHYON_OPCODE_NONE      255u
#define TACHYON_COMPRESSION_NONE 0u
#define TACHYON_COMPRESSION_ZSTD 1u
#define TACHYON_MAX_DECOMPRESSED (1ull << 30)
#define TACHYON_REPEAT_FLUSH     (16u * 1024u) /* pending REPEAT bytes before a forced flush */
/*
 * What a reader decodes from a file at most: REPEAT records and zstd make a
 * few bytes stand for many samples (and every frame of their stacks), and each
 * costs its reader time. Real files hold about a sample per byte; a long steady
 * profile with even timestamps (converted from MOJO) a few thousand. Past both
 * the floor and the ratio a file is corrupt or crafted.
 */
#define TACHYON_SAMPLES_PER_FILE_BYTE 1024u
#define TACHYON_SAMPLES_FLOOR         (16u << 20)
#define TACHYON_FRAMES_PER_FILE_BYTE  16384u
#define TACHYON_FRAMES_FLOOR          (128u << 20)
/* The smallest record that starts a thread: tid, iid, encoding, delta, status, depth.
 * Compressed, threads with neighbouring tids and the same stack take 2 bytes each. */
#define TACHYON_MIN_FIRST_RECORD      16u
#define TACHYON_MIN_COMPRESSED_THREAD 1u

/* Header offsets (CPython 3.15.2's layout, not the format document's). */
#define TACHYON_OFF_MAGIC        0
#define TACHYON_OFF_VERSION      4
#define TACHYON_OFF_PYTHON       8
#define TACHYON_OFF_START        12
#define TACHYON_OFF_INTERVAL     20
#define TACHYON_OFF_SAMPLES      28
#define TACHYON_OFF_THREADS      36
#define TACHYON_OFF_STRINGS      40
#define TACHYON_OFF_FRAMES       48
#define TACHYON_OFF_COMPRESSION  56
#define TACHYON_OFF_CONFIG       60

/* Footer offsets from its start: counts, the file size, then reserved zero bytes. */
#define TACHYON_FOOTER_OFF_STRINGS   0
#define TACHYON_FOOTER_OFF_FRAMES    4
#define TACHYON_FOOTER_OFF_FILE_SIZE 8
#define TACHYON_FOOTER_OFF_RESERVED  16

/* Stats block offsets from its start (it ends where the footer starts; doc/formats.md). */
#define TACHYON_STATS_OFF_DURATION   0  /* double: seconds sampled */
#define TACHYON_STATS_OFF_RATE       8  /* double: samples per second */
#define TACHYON_STATS_OFF_ERROR_RATE 16 /* double: valid with TACHYON_STATS_HAS_ERROR_RATE */
#define TACHYON_STATS_OFF_MISSED     24 /* double: valid with TACHYON_STATS_HAS_MISSED */
#define TACHYON_STATS_OFF_PRESENT    32 /* u32: TACHYON_STATS_HAS_* */
#define TACHYON_STATS_OFF_RESERVED   36 /* u32: zero */
#define TACHYON_STATS_OFF_MAGIC      40 /* TACHYON_STATS_MAGIC, 8 bytes */
#define TACHYON_STATS_OFF_VERSION    48 /* u32: TACHYON_STATS_VERSION */
#define TACHYON_STATS_OFF_SIZE       52 /* u32: TACHYON_STATS_SIZE */
/* The writer puts the fields one after another in this order: no gap, nothing past the end. */
#define TACHYON_STATS_LAYOUT "Tachyon stats block: fields follow each other"
_Static_assert(TACHYON_STATS_OFF_RATE == TACHYON_STATS_OFF_DURATION + 8, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_ERROR_RATE == TACHYON_STATS_OFF_RATE + 8, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_MISSED == TACHYON_STATS_OFF_ERROR_RATE + 8, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_PRESENT == TACHYON_STATS_OFF_MISSED + 8, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_RESERVED == TACHYON_STATS_OFF_PRESENT + 4, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_MAGIC == TACHYON_STATS_OFF_RESERVED + 4, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_VERSION == TACHYON_STATS_OFF_MAGIC + sizeof(TACHYON_STATS_MAGIC) - 1,
	       TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_OFF_SIZE == TACHYON_STATS_OFF_VERSION + 4, TACHYON_STATS_LAYOUT);
_Static_assert(TACHYON_STATS_SIZE == TACHYON_STATS_OFF_SIZE + 4, TACHYON_STATS_LAYOUT);

/* Frame-table strings of frames that are not Python code. */
#define TACHYON_KERNEL_FILE    "<kernel>"    /* ours: a kernel frame, the symbol is its name */
#define TACHYON_MARKER_FILE    "~"           /* CPython's file of its synthetic frames */
#define TACHYON_TRUNCATED_NAME "<truncated>" /* with "~": the stack could not be read on */
#define TACHYON_GC_NAME        "<GC>"        /* with "~": CPython's leaf frame while the GC runs */

/* Config word: bits 0-2 mode + 1, bit 3 features present, bits 4+ features. */
#define TACHYON_CONFIG_MODE_MASK     0x7u
#define TACHYON_CONFIG_FEATURES_FLAG 0x8u
#define TACHYON_CONFIG_FEATURES_SHIFT 4

/* Stats block "present" bits. */
#define TACHYON_STATS_HAS_ERROR_RATE 0x1u
#define TACHYON_STATS_HAS_MISSED     0x2u

enum tachyon_encoding {
	TACHYON_ENC_REPEAT = 0,
	TACHYON_ENC_FULL = 1,
	TACHYON_ENC_SUFFIX = 2,
	TACHYON_ENC_POP_PUSH = 3,
};

/* Profiling modes as CPython numbers them; the config word holds mode + 1. */
#define TACHYON_MODE_COUNT 5
extern const char *const tachyon_mode_names[TACHYON_MODE_COUNT];
/* Feature bits of the config word (from TACHYON_CONFIG_FEATURES_SHIFT), as metadata names them. */
#define TACHYON_FEATURE_COUNT 5
extern const char *const tachyon_feature_names[TACHYON_FEATURE_COUNT];
/* "opcodes": the frames carry the instruction each was at (3.15's --opcodes). */
#define TACHYON_FEATURE_OPCODES 0x8u

struct tachyon_header {
	uint32_t magic;
	uint32_t version;
	uint8_t python[3];
	uint64_t start_time_us;
	uint64_t interval_us;
	uint64_t sample_count;
	uint32_t thread_count;
	uint64_t string_table_offset;
	uint64_t frame_table_offset;
	uint32_t compression;
	uint32_t config;
};

struct tachyon_stats {
	double duration_sec;
	double sample_rate;
	double error_rate;
	double missed_samples;
	uint32_t present;
};

struct tachyon_footer {
	uint32_t string_count;
	uint32_t frame_count;
	uint64_t file_size;
};

struct tachyon_frame_entry {
	uint32_t file;
	uint32_t func;
	int32_t line;
	int32_t end_line;
	int32_t column;
	int32_t end_column;
	uint8_t opcode;
};

/* What the decoder hands out, one unit at a time. */
enum tachyon_event_kind {
	TACHYON_EV_FULL,
	TACHYON_EV_SUFFIX,
	TACHYON_EV_POP_PUSH,
	TACHYON_EV_REPEAT,      /* a REPEAT record's head: count follows as REPEAT_ITEM events */
	TACHYON_EV_REPEAT_ITEM, /* one sample of the current REPEAT group */
};

struct tachyon_thread {
	uint64_t tid;
	uint32_t iid;
	uint64_t timestamp_us; /* start + this thread's deltas so far */
	uint32_t depth;
	uint32_t *stack; /* frame indices, innermost first; grown to the deepest stack seen */
	size_t stack_capacity;
};

struct tachyon_event {
	enum tachyon_event_kind kind;
	uint64_t at;          /* offset of the record in the decompressed sample data */
	uint64_t tid;
	uint32_t iid;
	uint64_t delta;
	uint8_t status;
	uint64_t count;       /* FULL: depth; SUFFIX: shared; POP_PUSH: pop; REPEAT: count */
	uint32_t new_count;   /* SUFFIX, POP_PUSH: frames in new_frames; FULL: depth */
	const uint32_t *new_frames;
	const struct tachyon_thread *thread; /* state after this event (not for REPEAT) */
};

struct tachyon_file;

/*
 * Map and validate a file: header, footer, tables, stats. On failure *out
 * is still set when the header parsed (so a dump can show it) and errbuf
 * holds one line. Returns 0 or negative errno.
 */
int tachyon_file_open(int fd, struct tachyon_file **out, char *errbuf, size_t errlen);
void tachyon_file_close(struct tachyon_file *file);
const struct tachyon_header *tachyon_file_header(const struct tachyon_file *file);
/* NULL when the file has no stats block. */
const struct tachyon_stats *tachyon_file_stats(const struct tachyon_file *file);
const struct tachyon_footer *tachyon_file_footer(const struct tachyon_file *file);
bool tachyon_file_swapped(const struct tachyon_file *file);
/* Tables: valid only after tachyon_file_open returned 0. */
const char *tachyon_file_string(const struct tachyon_file *file, uint32_t index, size_t *len);
const struct tachyon_frame_entry *tachyon_file_frame(const struct tachyon_file *file,
						     uint32_t index);
/*
 * Decode the next unit of the sample data. 1 and *event filled, 0 at a
 * clean end (counts checked), negative errno with errbuf set on bad data.
 */
int tachyon_file_next(struct tachyon_file *file, struct tachyon_event *event, char *errbuf,
		      size_t errlen);

/*
 * Print a Tachyon file as text, one line per record (see tachyon_dump.c).
 * Returns 0, or negative errno with the reason in err after printing what
 * decoded.
 */
pf_dump_fn tachyon_dump;

/* The backends behind the "tachyon" format descriptor (formats/format_registry.c). */
pf_writer_create_fn tachyon_writer_create;
pf_reader_create_fn tachyon_reader_create;

#endif
