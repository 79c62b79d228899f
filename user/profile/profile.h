/* SPDX-License-Identifier: MIT */
/*
 * The profile model every format writes and reads: a stream of samples, each
 * with its frames root to leaf, plus string metadata.
 *
 * Conventions (each format maps to and from these):
 *  - line, end_line: 1-based, -1 when unknown.
 *  - column, end_column: 0-based (CPython's col_offset), -1 when unknown.
 *    MOJO stores column + 1 with 0 for unknown; Tachyon stores them as is.
 *  - opcode: 0-254, or -1 when not captured.
 *  - timestamps: microseconds on CLOCK_MONOTONIC. Formats without timestamps
 *    (MOJO) derive them per thread from the time metric and vice versa.
 */
#ifndef PYBPFPROF_PROFILE_H
#define PYBPFPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum pf_frame_kind {
	PF_FRAME_PYTHON = 0,
	PF_FRAME_NATIVE = 1,  /* file: the native location (e.g. "native@7f12..", a library) */
	PF_FRAME_KERNEL = 2,  /* name: the kernel symbol */
	PF_FRAME_INVALID = 3, /* the stack could not be read beyond this point (root side) */
};

/* How the formats without a frame kind (MOJO, Tachyon) mark a native frame: its file
 * string starts with this (Austin's convention; a library path or a pc in hex follows). */
#define PF_NATIVE_FILE_PREFIX "native@"


struct pf_frame {
	enum pf_frame_kind kind;
	const char *file; /* never NULL: "" when unknown */
	const char *name; /* never NULL: qualified name for Python frames */
	int32_t line;
	int32_t end_line;
	int32_t column;
	int32_t end_column;
	int16_t opcode;
	int32_t function_line; /* Python: the function's first line (co_firstlineno); 0: unknown */
};

/* A frame with no location: line, end_line, column, end_column and opcode all unknown (-1). */
static inline struct pf_frame pf_frame_unlocated(enum pf_frame_kind kind, const char *file,
						 const char *name)
{
	return (struct pf_frame){ .kind = kind, .file = file, .name = name, .line = -1,
				  .end_line = -1, .column = -1, .end_column = -1, .opcode = -1 };
}

/*
 * The file string the formats without a frame kind (MOJO, Tachyon) store: a native
 * frame's file behind PF_NATIVE_FILE_PREFIX (built in buffer, cut to size), any other
 * frame's file as it is. Their readers undo it with pf_native_file_strip.
 */
const char *pf_native_file_stored(const struct pf_frame *frame, char *buffer, size_t size);
/* If *file carries PF_NATIVE_FILE_PREFIX, skips it and returns true (a native frame). */
bool pf_native_file_strip(const char **file);

/* Status bits. The low byte is Tachyon's status byte, bit for bit. */
#define PF_STATUS_HAS_GIL        0x01u
#define PF_STATUS_ON_CPU         0x02u
#define PF_STATUS_UNKNOWN        0x04u
#define PF_STATUS_GIL_REQUESTED  0x08u
#define PF_STATUS_HAS_EXCEPTION  0x10u
#define PF_STATUS_MAIN_THREAD    0x20u
#define PF_STATUS_TACHYON_MASK   0xffu
#define PF_STATUS_GC             0x100u /* garbage collector running (MOJO GC event) */
#define PF_STATUS_IDLE           0x200u /* thread idle (MOJO IDLE event, full mode) */
/* A live run could read the process's GIL, so HAS_GIL's absence means "not held" (no file keeps it). */
#define PF_STATUS_GIL_KNOWN      0x400u

/* The status bits' names, as dump and top print them (NULL for a bit without one). */
const char *pf_status_name(uint32_t bit);
/* "has_gil,on_cpu,..." for the named bits of status into buffer (cut to size; "" for none). */
const char *pf_status_describe(uint32_t status, char *buffer, size_t size);

/* Which metrics a sample carries. */
#define PF_METRIC_TIME   0x1u
#define PF_METRIC_MEMORY 0x2u
/* Occurrences of a kernel event (--event): with MEMORY too when each weighs bytes (page faults). */
#define PF_METRIC_COUNT  0x4u

struct pf_sample {
	uint32_t pid;
	uint32_t iid;          /* interpreter id */
	uint64_t tid;          /* OS thread id */
	uint64_t timestamp_us; /* CLOCK_MONOTONIC µs; 0 when the source had none */
	uint32_t status;       /* PF_STATUS_* */
	uint32_t metrics;      /* PF_METRIC_* present */
	uint64_t time_us;      /* time this sample stands for */
	/* How many samples it stands for: a live sample of a target --max-overhead thinned, one in
	 * that many ticks kept (time_us is as many intervals); 0 or 1: itself. Formats that count
	 * samples (pprof's count, Tachyon's cpu-mode samples) count it that many times. */
	uint32_t samples;
	int64_t memory;        /* bytes allocated (+) or freed (-) */
	uint64_t count;        /* PF_METRIC_COUNT: the kernel events it stands for */
	size_t frame_count;
	const struct pf_frame *frames; /* root (outermost) first, leaf last */
	/*
	 * 0: unknown. Otherwise every sample with this stack_id has the same frame_count and
	 * frames (kind, strings, locations: equal contents), so a writer may reuse what it
	 * derived from the first (symbolize/sample_resolve.h gives them, unique in the process).
	 * Whoever changes a sample's frames clears it.
	 */
	uint64_t stack_id;
	/* Who ran it, where the source knows (a live run; not every file keeps them): NULL unknown. */
	const char *process_name;
	const char *thread_name;
	const char *container;  /* the cgroup path */
	/* A live wall-mode sample: the kernel's state letter of the thread ("RSDTtXZPI") at the
	 * moment its kernel stack was taken, and whether it was on a CPU then; 0 unknown. */
	char task_state;
	bool on_a_cpu;
};

/* Tachyon's zstd levels: 1 to PF_COMPRESSION_LEVEL_MAX, 0 for none. */
#define PF_COMPRESSION_LEVEL_DEFAULT 5
#define PF_COMPRESSION_LEVEL_MAX 22

struct pf_writer_options {
	int compression_level;    /* Tachyon: zstd level 1-22; 0 = no compression */
	bool private_file;        /* 0600 instead of 0644 minus umask: it holds every user's names */
	unsigned flush_interval_ms; /* streaming writers: at least this often the file is readable (0 = 1000) */
	size_t tables_max_bytes;  /* Tachyon: what its run-long string and frame tables may hold (0: 32 MiB) */
};
#define PF_WRITER_OPTIONS_DEFAULT                                                     \
	{ .compression_level = PF_COMPRESSION_LEVEL_DEFAULT, .private_file = false, \
	  .flush_interval_ms = 1000 }

/*
 * What a sample weighs in an aggregate (collapsed stacks, flame graph, top): the
 * microseconds it stands for when it carries time, else the bytes it allocated
 * (negative: freed) when it carries memory, else the kernel events it stands for when
 * it carries a count, else 1 (a sample count).
 */
int64_t pf_sample_weight(const struct pf_sample *sample);

/*
 * Stack ids (pf_sample.stack_id): a new one for each stack kept (symbolize/sample_resolve.c) or
 * built elsewhere (an asyncio task's), never reused. When the resolver forgets its kept stacks
 * every id given so far dies (pf_stack_ids_die): ids below pf_stack_ids_dead_below() will not
 * be given to a sample again, and what a writer keeps by them can go (formats/known_stacks.c).
 * The mark is 0 while none has died and only ever moves up.
 */
uint64_t pf_stack_id_new(void);
uint64_t pf_stack_ids_dead_below(void);
void pf_stack_ids_die(void);
/*
 * The label `top` ranks a frame's function by, and diff names it by: "name (file)", a
 * kernel function "name [kernel]", a cut stack's marker "[truncated stack]". Into label (cut
 * to size); its length, or -EINVAL.
 */
int pf_frame_function_label(const struct pf_frame *frame, char *label, size_t size);
/* "python", "native", "kernel", or "invalid" (a cut stack's marker). */
const char *pf_frame_kind_name(enum pf_frame_kind kind);

struct pf_format;
struct pf_writer;

/*
 * Whether path may become an output: absent, or a regular file that is not a
 * symbolic link. 0, or negative errno with one line in errbuf (when given).
 */
int pf_output_check(const char *path, char *errbuf, size_t errlen);

/*
 * Every call returns 0 or a negative errno. On error, pf_writer_error()
 * says what went wrong in one line (without the program name).
 *
 * Nothing replaces an existing file before there is something to keep: the
 * writer creates a new file beside path (O_EXCL, never through a link), and
 * renames it over path at close, or at the first flush that has samples for
 * the formats a flush leaves readable (then later writes go on in the same
 * file). Under sudo the file belongs to SUDO_UID:SUDO_GID.
 */
int pf_writer_open(struct pf_writer **writer_out, const char *path,
		   const struct pf_format *format, const struct pf_writer_options *options);
int pf_writer_set_metadata(struct pf_writer *writer, const char *key, const char *value);
/*
 * What a recording knows about its run, typed. Each is set once: the run info
 * before the first sample, the Python version when the first target shows it,
 * the totals at the end. A writer with a typed place for them (Tachyon's header
 * and stats) takes them as they are; the others get the metadata lines below,
 * in this order (MOJO's, flame graph's).
 */
struct pf_run_info {
	uint64_t interval_us;   /* "interval" */
	const char *mode;       /* "mode": "cpu", "wall", "memory" or "full" */
	const char *own_mode;   /* "pybpfprof_mode": a mode Austin has no name for ("gil"), NULL if none */
	bool multiprocess;      /* "multiprocess": "on" when set */
	uint64_t frequency_hz;  /* "frequency" */
	uint64_t start_time_us; /* "start_time_us": CLOCK_MONOTONIC */
};
struct pf_python_version { /* "python": "3.12.1" */
	uint8_t major, minor, micro;
};
struct pf_run_totals {
	uint64_t duration_us;       /* "duration" */
	uint64_t samples;           /* "samples" */
	uint64_t lost_samples;      /* "lost_samples" (also in "saturation": lost/(lost+samples)) */
	uint64_t truncated_stacks;  /* "truncated_stacks" */
	uint64_t read_faults;       /* "read_faults" */
	uint64_t unresolved_frames; /* "unresolved_frames" */
	/* "errors" (read faults and unresolved frames / samples) and, when there are
	 * samples, "error_rate" follow from these. */
};
static inline uint64_t pf_run_totals_errors(const struct pf_run_totals *totals)
{
	return totals->read_faults + totals->unresolved_frames;
}
/* Errors per sample to the 6 decimals the "error_rate" line shows: a Tachyon file keeps the same
 * double whether recorded or converted from MOJO. Needs samples. */
double pf_run_totals_error_rate(const struct pf_run_totals *totals);
int pf_writer_set_run_info(struct pf_writer *writer, const struct pf_run_info *info);
int pf_writer_set_python_version(struct pf_writer *writer, const struct pf_python_version *version);
int pf_writer_set_run_totals(struct pf_writer *writer, const struct pf_run_totals *totals);
int pf_writer_add_sample(struct pf_writer *writer, const struct pf_sample *sample);
/* The process exited: the writer may drop what it keeps for it (its definitions, in MOJO). */
int pf_writer_forget_pid(struct pf_writer *writer, uint32_t pid);
/* Bytes the writer holds for the processes it has seen and not forgotten. */
size_t pf_writer_held_bytes(const struct pf_writer *writer);
/* Frames written as a stand-in past the writer's bound on its tables (Tachyon's). */
uint64_t pf_writer_frames_past_budget(const struct pf_writer *writer);
/* Make everything written so far readable on disk (MOJO: flush; Tachyon: checkpoint);
 * once samples are in, the file then takes its final name. */
int pf_writer_flush(struct pf_writer *writer);
/* Finish the file and free the writer (also on error). */
int pf_writer_close(struct pf_writer *writer);
/* Give up: remove the file this writer created (under whichever name it has) and free. */
void pf_writer_abort(struct pf_writer *writer);
const char *pf_writer_error(const struct pf_writer *writer);

struct pf_reader;

/*
 * Opens path to be read as a profile: a regular file only (a FIFO or a device would block or
 * never end), never becoming the controlling terminal. Its descriptor, or a negative errno with
 * one line in errbuf.
 */
int pf_input_open(const char *path, char *errbuf, size_t errlen);

/* format: the file's (formats/format_registry.h tells it from the magic or the extension).
 * errbuf gets a one-line reason on failure. */
int pf_reader_open(struct pf_reader **reader_out, const char *path,
		   const struct pf_format *format, char *errbuf, size_t errlen);
/*
 * 1 and *sample filled (valid until the next call), 0 at the end, negative
 * errno on bad data; pf_reader_error() then says where, e.g.
 * "truncated at byte 1234".
 */
int pf_reader_next_sample(struct pf_reader *reader, struct pf_sample *sample);
/* Metadata seen so far, in file order (MOJO has some at the end). */
size_t pf_reader_metadata_count(const struct pf_reader *reader);
void pf_reader_metadata_at(const struct pf_reader *reader, size_t index, const char **key,
			   const char **value);
/* Last value for key, or NULL. */
const char *pf_reader_metadata(const struct pf_reader *reader, const char *key);
const char *pf_reader_error(const struct pf_reader *reader);
const struct pf_format *pf_reader_format(const struct pf_reader *reader);
void pf_reader_close(struct pf_reader *reader);

/*
 * Backends. Each format implements this table; profile.c dispatches.
 */
struct pf_writer_ops {
	int (*set_metadata)(void *state, const char *key, const char *value);
	/* Optional (NULL: profile.c sets the metadata lines pf_run_info describes). */
	int (*set_run_info)(void *state, const struct pf_run_info *info);
	int (*set_python_version)(void *state, const struct pf_python_version *version);
	int (*set_run_totals)(void *state, const struct pf_run_totals *totals);
	int (*add_sample)(void *state, const struct pf_sample *sample);
	/* Optional: the process exited, what the writer keeps for it can go (a later sample
	 * of the pid still writes correctly). */
	int (*forget_pid)(void *state, uint32_t pid);
	/* Optional: bytes held for the processes seen (what forget_pid gives back). */
	size_t (*held_bytes)(const void *state);
	/* Optional: frames written as a stand-in, past the writer's bound on its tables. */
	uint64_t (*frames_past_budget)(const void *state);
	int (*flush)(void *state);
	int (*finish)(void *state);   /* write trailer; the file descriptor stays open */
	void (*destroy)(void *state); /* free everything; never touches the file */
	const char *(*error)(const void *state);
};

struct pf_reader_ops {
	int (*next_sample)(void *state, struct pf_sample *sample);
	size_t (*metadata_count)(const void *state);
	void (*metadata_at)(const void *state, size_t index, const char **key, const char **value);
	const char *(*error)(const void *state);
	void (*destroy)(void *state);
};

/* Backend constructors. They borrow fd: profile.c opens and closes it. */
typedef int pf_writer_create_fn(int fd, const struct pf_writer_options *options, void **state,
				const struct pf_writer_ops **ops);
/* errbuf receives a one-line reason on failure. */
typedef int pf_reader_create_fn(int fd, void **state, const struct pf_reader_ops **ops,
				char *errbuf, size_t errlen);
/* The raw event dump (`pybpfprof dump`): 0, or negative errno with a one-line reason in errbuf
 * after printing everything that decoded. */
typedef int pf_dump_fn(int fd, FILE *out, char *errbuf, size_t errlen);

struct pf_format_magic {
	const uint8_t *bytes;
	size_t len;
};

#define PF_FORMAT_MAX_NAMES 4
#define PF_FORMAT_MAX_MAGICS 2

/*
 * Everything the program knows about one file format. formats/format_registry.c
 * holds the one table of these and the lookups by name, extension and magic;
 * the generic writer and reader above dispatch through a descriptor.
 */
struct pf_format {
	const char *name;                              /* canonical: "mojo" */
	const char *aliases[PF_FORMAT_MAX_NAMES];      /* other names -f takes; unused: NULL */
	const char *extensions[PF_FORMAT_MAX_NAMES];   /* without the dot, the first for messages */
	struct pf_format_magic magics[PF_FORMAT_MAX_MAGICS]; /* its files' first bytes; unused: len 0 */
	const char *default_file;                      /* record's output when -o is not given */
	bool timestamps;                 /* samples carry timestamps, the file its start time */
	bool flush_readable;             /* a flush leaves a readable file (streaming formats) */
	bool aggregated;                 /* a sample read back is one distinct stack with the
					    weight of all its samples (collapsed): count stacks */
	pf_writer_create_fn *writer_create;
	pf_reader_create_fn *reader_create; /* NULL: write-only (it keeps no samples) */
	pf_dump_fn *dump;                   /* NULL: `dump` shows the samples */
};

#endif
