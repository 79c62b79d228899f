/* SPDX-License-Identifier: MIT */
/*
 * Python frames from what BPF sends (code object address, raw instruction
 * offset, checksum) to file, qualified name and source location. Each code
 * object is read from the target once; each (code object, offset) is decoded
 * once; afterwards a frame costs one hash lookup.
 */
#ifndef PYBPFPROF_SYMBOLIZE_PY_H
#define PYBPFPROF_SYMBOLIZE_PY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "py_proc_config.h"

/* Longest file or function name kept, in characters (longer ones are cut). */
#define SYMBOLIZE_PY_MAX_STRING_CHARS 4096u
/* Largest line table read from a target, in bytes. */
#define SYMBOLIZE_PY_MAX_LINETABLE_BYTES (1u << 20)
/*
 * Target memory is hostile: processes making many code objects with huge line tables would
 * grow the cache without end. The code objects of every target together (entries and line
 * tables) are kept within these. Past the bytes, the least recently used line tables go and
 * their code objects are remembered as over budget (lines unknown from then on, never read
 * again); past the count, the least recently used code objects go (read again if seen again).
 */
#define SYMBOLIZE_PY_MAX_BYTES ((size_t)64 << 20)
#define SYMBOLIZE_PY_MAX_CODES ((size_t)1 << 18)
/* File and function names of every target together; past it new names read as the placeholder. */
#define SYMBOLIZE_PY_MAX_NAME_BYTES ((size_t)64 << 20)
#define SYMBOLIZE_PY_NAME_OVER_BUDGET "<name over budget>"
/* Names take at most 1/this of the target budget (util/target_budget.h); entries and line
 * tables are charged to it too, and evicted least recently used first. */
#define SYMBOLIZE_PY_NAMES_BUDGET_SHARE 4

struct symbolize_py_cache;

struct symbolize_py_cache *symbolize_py_cache_new(void);
void symbolize_py_cache_free(struct symbolize_py_cache *cache);
/*
 * From 3.11, also read each frame's instruction byte (pf_frame.opcode; else -1 there). Read
 * when a (code object, offset) is first resolved, not at each sample: the specialised
 * instruction as the code object held it then, until symbolize_py_refresh_opcodes reads it
 * again. Before the first lookup.
 */
void symbolize_py_cache_set_opcodes(struct symbolize_py_cache *cache, bool opcodes);
/*
 * Where BPF's notes of code objects are (struct pbp_code_note): a code object that can no longer
 * be read as BPF saw it (freed: a module body once imported) is named from its note, if the
 * strings it points at still hold, without a line. note_of returns 0 or a negative errno.
 */
typedef int (*symbolize_py_note_fn)(void *context, pid_t pid, uint64_t code_addr, uint32_t checksum,
				    struct pbp_code_note *note);
void symbolize_py_cache_set_notes(struct symbolize_py_cache *cache, symbolize_py_note_fn note_of, void *context);
/*
 * Reads again the instruction byte of up to max_reads resolved frames, going on round the
 * table from the last call: an instruction specialises (or deoptimises) after the frame was
 * first seen, the first time its code ran. A change counts as a drop of code objects
 * (symbolize_py_generation). The number of frames whose instruction changed.
 */
size_t symbolize_py_refresh_opcodes(struct symbolize_py_cache *cache, size_t max_reads);
struct target_budget;
/* The code objects are charged to budget too (util/target_budget.h, outliving the cache's use):
 * three stores, their line tables and their entries (least recently used evicted) and their
 * names (refused past SYMBOLIZE_PY_NAMES_BUDGET_SHARE); stamped with its clock; before the
 * first lookup. 0 or -ENOSPC (no store left). */
int symbolize_py_cache_set_budget(struct symbolize_py_cache *cache, struct target_budget *budget);

/*
 * Fill *frame (kind PF_FRAME_PYTHON; file/name strings owned by the cache,
 * valid until symbolize_py_compact_names compacts or symbolize_py_cache_free). Cached per (pid, code_addr, checksum): the
 * code object is read once (filename, co_qualname from 3.11 else co_name,
 * firstlineno, argcount, the line table); the checksum recomputed from the
 * object read must match the one BPF sent, else -ESTALE (the code object was
 * freed and its memory reused). Locations are cached per offset.
 *
 * instr_offset is raw from BPF, by config->off.lasti_kind:
 *   PY_LASTI_INT_BYTES  f_lasti in bytes; negative (-1 as u32) = not started: the first line
 *   PY_LASTI_INT_UNITS  f_lasti in 2-byte code units; negative likewise
 *   PY_LASTI_PTR        instruction pointer - code_addr; before code_code_adaptive = not started
 * A line table that cannot be decoded gives line -1 rather than an error.
 * Errors: -ESTALE, a read error from target_mem_read (-ESRCH, -EFAULT, ...),
 * -EINVAL for an object that is not a code object of this layout, -ENOMEM.
 */
int symbolize_py_resolve(struct symbolize_py_cache *cache, pid_t pid, const struct py_proc_config *config,
		  uint64_t code_addr, uint32_t checksum, uint32_t instr_offset, struct pf_frame *frame);

/*
 * The checksum BPF would send for the live code object at code_addr (py_code_checksum), for
 * frames read by userspace (a suspended coroutine's): 0, or a read error, -EINVAL.
 */
int symbolize_py_code_checksum(pid_t pid, const struct py_offsets *off, uint64_t code_addr, uint32_t *checksum);
/* A 3.x str of the target as UTF-8 in a malloc'd buffer, at most max_chars of it (a longer one is
 * cut): 0, a read error, -EINVAL (not a compact str, or 2.7), -ENOMEM. */
int symbolize_py_read_str(pid_t pid, const struct py_offsets *off, uint64_t addr, size_t max_chars, char **text,
			  size_t *len);

/* The process is gone or was replaced (exec): drop its entries. Frames filled before stay valid. */
void symbolize_py_forget_pid(struct symbolize_py_cache *cache, pid_t pid);
/*
 * The names of forgotten code objects stay in the cache's table (frames filled before point
 * into it), so on a host whose processes each name their own functions the table grows with
 * every process the run meets. Once it holds twice what it held after the last compaction
 * (and at least SYMBOLIZE_PY_COMPACT_MIN_BYTES), a new table takes the names the kept code
 * objects use and the old one goes: every name of a frame filled before is then invalid, and
 * the generation changes (symbolize_py_generation). Call it where no such frame is held.
 * 1 if it compacted, 0 if there was no need, -ENOMEM (the old table stays, valid).
 */
#define SYMBOLIZE_PY_COMPACT_MIN_BYTES ((size_t)256 << 10)
int symbolize_py_compact_names(struct symbolize_py_cache *cache);
/*
 * Changes whenever code objects are dropped (symbolize_py_forget_pid, a target over its
 * budget of code objects), names are compacted, or a frame's instruction was read changed:
 * while it stays the same, a (pid, code_addr, checksum, instr_offset) that resolved resolves
 * again to the same frame, which is what lets a caller keep whole resolved stacks.
 */
uint64_t symbolize_py_generation(const struct symbolize_py_cache *cache);

struct symbolize_py_stats {
	uint64_t hits;        /* frames answered by one lookup */
	uint64_t misses;      /* frames that needed decoding (and maybe a read) */
	uint64_t read_errors; /* code objects that could not be read */
	uint64_t stale;       /* frames refused with -ESTALE */
	uint64_t noted;       /* code objects gone before they were read, named from BPF's notes */
	uint64_t evicted;     /* code objects evicted by the count budget */
	uint64_t lines_over_budget; /* line tables dropped by the byte budget, or refused unread */
	uint64_t linetable_bytes_read; /* line tables' bytes read from targets */
	uint64_t names_over_budget; /* names replaced by SYMBOLIZE_PY_NAME_OVER_BUDGET */
	uint64_t name_compactions;  /* tables of names replaced by one of the names in use */
	/* What is held now: */
	size_t codes;         /* code objects */
	size_t code_bytes;    /* their entries and line tables, against SYMBOLIZE_PY_MAX_BYTES */
	size_t name_bytes;    /* interned names, against SYMBOLIZE_PY_MAX_NAME_BYTES */
	size_t name_table_bytes; /* their intern table on the heap: keys, key index, hash slots */
	size_t frames;        /* decoded (code object, offset) slots */
};

void symbolize_py_cache_stats(const struct symbolize_py_cache *cache, struct symbolize_py_stats *stats);

#endif
