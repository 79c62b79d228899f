/* SPDX-License-Identifier: MIT */
/*
 * The messages between the profiler (root) and its parser worker (parser_worker.h), over a
 * SOCK_STREAM socketpair. A request is one fixed-size struct parser_request, with the file it
 * is about passed as a descriptor (SCM_RIGHTS) that root opened; the answer is one
 * struct parser_reply_head and then `length` bytes of payload whose layout the kind says.
 * Both sides are built from one source: a version mismatch is a bug, not a negotiation.
 *
 * The worker is as hostile as the files it reads (one of them may have taken it over): root
 * bounds what it reads by the reply budget it sent, by a time budget, and checks every count,
 * offset and string of a payload (parser_symbols_check) before using any of it.
 *
 * Kinds are added at the end, each of the same shape: a descriptor in, a bounded table out.
 */
#ifndef PYBPFPROF_PARSER_PROTOCOL_H
#define PYBPFPROF_PARSER_PROTOCOL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARSER_PROTOCOL_MAGIC 0x70627031u /* "pbp1" */

/* The hidden first argument that makes pybpfprof the worker (cli/main.c). */
#define PARSER_WORKER_COMMAND "__parser-worker"

enum parser_request_kind {
	/* A mapped file: its load segments, build id, .gnu_debuglink, whether it has a .symtab,
	 * and its functions (.symtab, else .dynsym). arg: unused. */
	PARSER_REQUEST_FILE_SYMBOLS = 1,
	/* A candidate debug file: its build id, the CRC32 of its bytes (when arg, the most that
	 * may be read for it, allows: else crc_known is 0), its functions (.symtab only). */
	PARSER_REQUEST_DEBUG_SYMBOLS = 2,
	/* A stripped file's MiniDebugInfo (.gnu_debugdata): the functions of the ELF inside.
	 * arg: the most it may expand to; expanded_bytes says what it did. */
	PARSER_REQUEST_MINIDEBUGINFO = 3,
	/* A mapped file: whether it holds a CPython runtime, imports CPython's API, or neither,
	 * the runtime's link-time addresses and the version the file names (py_runtime_file.h).
	 * The payload is one struct parser_py_runtime. arg: unused. */
	PARSER_REQUEST_PY_RUNTIME = 4,
	/* A mapped file's compact unwind table (unwind/file_table.h): one struct
	 * parser_unwind_head, then row_count rows as BPF loads them (struct unwind_row of
	 * include/unwind_table.h, 8 bytes each), sorted by pc. Root checks every row against the
	 * file's code as it reads it itself, and builds the page index. arg: unused. */
	PARSER_REQUEST_UNWIND_ROWS = 5,
	/* A mapped file's functions by its .eh_frame: one struct parser_unwind_head (source
	 * unused), then row_count struct parser_function_range sorted by start. arg: unused. */
	PARSER_REQUEST_FUNCTION_RANGES = 6,
	/* An executable about to be launched: the libraries it names (DT_NEEDED, in order) and
	 * its DT_RPATH and DT_RUNPATH. One struct parser_dynamic_head, then names_len bytes of
	 * NUL-terminated strings: the RPATH, the RUNPATH ("" for none), then needed_count names.
	 * arg: unused. */
	PARSER_REQUEST_DYNAMIC_NAMES = 7,
	/* PARSER_REQUEST_PY_RUNTIME for each of arg descriptors sent with the one request (1 to
	 * PARSER_MAX_BATCH_FILES), each file judged on its own: one reply per file, in the order
	 * sent, the i-th with id request id + i, as PY_RUNTIME's (reply_budget is per file). A
	 * round trip for a process's files rather than one each; a worker that dies on one costs
	 * that file: those answered before it stand, those after it are asked again. */
	PARSER_REQUEST_PY_RUNTIMES = 8,
	/* Test-only kinds, refused unless root started the worker with --selftest (tests do):
	 * how a worker that crashes, outgrows its memory limit or never answers costs one file. */
	PARSER_REQUEST_SELFTEST_CRASH = 0x7f01,
	PARSER_REQUEST_SELFTEST_BLOAT = 0x7f02,
	PARSER_REQUEST_SELFTEST_SPIN = 0x7f03,
};

/* Test-only files, heeded only by a worker started with --selftest: a file of a
 * PARSER_REQUEST_PY_RUNTIMES with one of these at PARSER_SELFTEST_FILE_OFFSET (after a 64-bit
 * ELF header) kills the worker or has it run out of memory on that file, as a hostile file
 * would: how a batch costs the file it dies on and no other. */
#define PARSER_SELFTEST_FILE_OFFSET 64
#define PARSER_SELFTEST_FILE_CRASH "pybpfprof-selftest-crash"
#define PARSER_SELFTEST_FILE_BLOAT "pybpfprof-selftest-bloat"

/* Descriptors one PARSER_REQUEST_PY_RUNTIMES carries at most (the worker's file limit has
 * room for them besides its own). */
#define PARSER_MAX_BATCH_FILES 32u

struct parser_request {
	uint32_t magic;
	uint32_t kind;        /* enum parser_request_kind */
	uint32_t id;          /* echoed in the reply */
	uint32_t reply_budget; /* the most payload bytes root reads: a larger answer is -E2BIG */
	uint64_t arg;         /* per kind */
};

struct parser_reply_head {
	uint32_t magic;
	uint32_t id;
	int32_t status;  /* 0, or a negative errno: no payload */
	uint32_t length; /* payload bytes that follow */
};

/* The most PT_LOAD segments a reply carries (real files have 2 to 5). */
#define PARSER_MAX_SEGMENTS 16
#define PARSER_MAX_BUILD_ID 64
#define PARSER_MAX_LINK_NAME NAME_MAX

/* A PT_LOAD segment, for the load bias of a mapping (elf_file_load_bias's rule). */
struct parser_segment {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

/* A function: [addr, addr + size) at link time, its name at name_offset of the names. */
struct parser_function {
	uint64_t addr;
	uint64_t size;
	uint32_t name_offset;
	uint32_t reserved;
};

/* The payload of the symbol kinds: this head, then segment_count segments, function_count
 * functions sorted by address, names_len bytes of NUL-terminated names. */
struct parser_symbols_head {
	uint32_t segment_count;
	uint32_t function_count;
	uint32_t names_len;
	uint8_t build_id_len;     /* 0: none */
	uint8_t has_symtab;
	uint8_t has_debuglink;
	uint8_t crc_known;
	uint32_t debuglink_crc;   /* the CRC32 the debuglink names */
	uint32_t crc;             /* DEBUG_SYMBOLS: the candidate's own CRC32, when crc_known */
	uint64_t expanded_bytes;  /* MINIDEBUGINFO: what expanding produced (budgets count it) */
	uint8_t build_id[PARSER_MAX_BUILD_ID];
	char debuglink[PARSER_MAX_LINK_NAME + 1]; /* a file name, no directory; "" none */
};

/* The payload of PARSER_REQUEST_PY_RUNTIME: fixed size, every field checked by root
 * (py_runtime_file_from_wire). Flags are 0 or 1. */
struct parser_py_runtime {
	uint32_t verdict;  /* enum py_runtime_verdict */
	int32_t unread;    /* 0, -ENOEXEC or -EFBIG */
	uint32_t major, minor, micro;
	uint8_t has_micro;
	uint8_t has_runtime, has_interp_head, has_py_version, has_static_gil, has_current_tstate,
		has_gc_collecting;
	uint8_t has_asyncio_debug;
	uint64_t runtime, interp_head, py_version, gil_last_holder, gil_locked, current_tstate, gc_collecting;
	uint64_t asyncio_debug[13]; /* PY_ASYNCIO_DEBUG_WORDS */
	uint64_t code_counter;
	uint8_t has_code_counter;
	uint8_t has_eval_function;
	uint8_t reserved[6]; /* zero */
	uint64_t eval_function, eval_function_size;
};

/* The head of PARSER_REQUEST_UNWIND_ROWS' and PARSER_REQUEST_FUNCTION_RANGES' payloads. */
struct parser_unwind_head {
	uint32_t row_count; /* rows (ranges) that follow */
	uint32_t source;    /* UNWIND_ROWS: enum unwind_cfi_source (1 .eh_frame, 2 .debug_frame) */
};

/* One function's code by its FDE, link-time [start, end). */
struct parser_function_range {
	uint64_t start;
	uint64_t end;
};

/* The head of PARSER_REQUEST_DYNAMIC_NAMES' payload. */
struct parser_dynamic_head {
	uint32_t needed_count; /* at most PARSER_MAX_NEEDED */
	uint32_t names_len;    /* bytes that follow */
};

/* Libraries a dynamic-names answer lists at most (real executables name a dozen or two). */
#define PARSER_MAX_NEEDED 512u

/* A dynamic-names payload as root reads it: pointers into the checked payload. */
struct parser_dynamic_names {
	const char *rpath;   /* "" when none */
	const char *runpath; /* "" when none */
	const char *needed;  /* needed_count NUL-terminated names, one after the other */
	uint32_t needed_count;
};

/*
 * Checks payload (len bytes, from the worker) as a dynamic-names payload and points *out into
 * it: names_len that adds up to len, needed_count at most PARSER_MAX_NEEDED, exactly
 * 2 + needed_count strings, each ending with a NUL, none longer than PATH_MAX - 1 and none
 * of the needed names empty. 0 or -EBADMSG.
 */
int parser_dynamic_check(const void *payload, size_t len, struct parser_dynamic_names *out);

/* A symbols payload as root reads it: pointers into the checked payload. */
struct parser_symbols {
	const struct parser_symbols_head *head;
	const struct parser_segment *segments;
	const struct parser_function *functions;
	const char *names;
};

/*
 * Checks payload (len bytes, from the worker) as a symbols payload and points *out into it:
 * counts that add up to len, segments at most PARSER_MAX_SEGMENTS, functions sorted, every
 * name offset inside the names and the names ending with a NUL, a build id of at most
 * PARSER_MAX_BUILD_ID bytes, a debuglink that is one file name (no '/', not "." or "..").
 * 0 or -EBADMSG.
 */
int parser_symbols_check(const void *payload, size_t len, struct parser_symbols *out);

/* The descriptor of the worker's socket in the worker (worker/parser_worker.c). */
#define PARSER_WORKER_SOCKET_FD 3

#endif
