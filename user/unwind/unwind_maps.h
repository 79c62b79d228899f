/* SPDX-License-Identifier: MIT */
/*
 * The native-unwinding maps in BPF (include/unwind_table.h): the rows in chunks
 * the caller adds (index < UNWIND_MAX_CHUNKS, 1 to UNWIND_CHUNK_MAX_ROWS rows;
 * their sizes summed stay within the row capacity: -ENOSPC otherwise) and
 * removes once no table lies in them; a table's rows and page index go into its
 * chunk at ref's range (unwind_table_slots(), inside the chunk: -ERANGE
 * otherwise); a table id then points BPF at them (row_count 0 frees the slot); a
 * process's executable mappings are replaced as a whole. All return 0 or -errno.
 *
 * Putting a chunk into the outer map, or taking one out, waits for an RCU grace
 * period in the kernel (some 11 ms here): the caller's thread drains the record
 * ring, and a module body's code object, freed when its import ends, must be
 * read within a few milliseconds of its sample. So those two updates run on a
 * thread of their own, in the order asked; a table placed in a chunk BPF cannot
 * see yet is pointed at once the chunk's update is done (its walks stop at it
 * meanwhile, as they do at a table still being built).
 */
#ifndef PYBPFPROF_UNWIND_MAPS_H
#define PYBPFPROF_UNWIND_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <unwind_table.h>

struct unwind_maps;

/* Tables mapped for reading at once (unwind_maps_table_rows): a walk goes through a few files
 * (the executable, libpython, libc, an extension). */
#define UNWIND_MAPS_VIEWS 4

/* The maps by fd (the outer map of chunks, the table refs, the processes): 0 or -ENOMEM. */
int unwind_maps_new(struct unwind_maps **out, int rows_fd, int tables_fd, int procs_fd, size_t row_capacity);
/* Waits for a chunk update in progress, drops those not started, frees every chunk. */
void unwind_maps_free(struct unwind_maps *maps);

size_t unwind_maps_row_capacity(const struct unwind_maps *maps);
int unwind_maps_add_chunk(struct unwind_maps *maps, uint32_t chunk, uint32_t rows);
void unwind_maps_remove_chunk(struct unwind_maps *maps, uint32_t chunk);
/* Chunks held now, and their memory (the kernel's, every page of it resident: not mapped here but
 * while a table is written or read). */
size_t unwind_maps_chunk_count(const struct unwind_maps *maps);
size_t unwind_maps_chunk_bytes(const struct unwind_maps *maps);
int unwind_maps_write_table(struct unwind_maps *maps, const struct unwind_table_ref *ref,
			    const struct unwind_row *rows, const uint32_t *pages);
/* The rows of a table written here (its page index right after them), as BPF reads them, mapped
 * for reading; NULL where ref holds no rows, lies outside the chunks held, or cannot be mapped.
 * The chunks are not kept mapped (BPF alone reads them as it samples): up to UNWIND_MAPS_VIEWS
 * tables stay mapped, the least recently asked for giving way, so a view is valid until
 * UNWIND_MAPS_VIEWS other tables are asked for, its chunk is removed or
 * unwind_maps_unmap_tables() is called. */
const struct unwind_row *unwind_maps_table_rows(struct unwind_maps *maps, const struct unwind_table_ref *ref);
/* Unmaps the tables unwind_maps_table_rows() mapped (once no walk needs them). */
void unwind_maps_unmap_tables(struct unwind_maps *maps);
int unwind_maps_set_table(struct unwind_maps *maps, uint32_t table_id, const struct unwind_table_ref *ref);
int unwind_maps_set_proc(struct unwind_maps *maps, pid_t tgid, const struct unwind_proc *proc);
int unwind_maps_forget_proc(struct unwind_maps *maps, pid_t tgid);
/* Whether a chunk update asked for is not done yet. */
bool unwind_maps_updating(struct unwind_maps *maps);
/* Blocks until every chunk update asked for is done (BPF then sees every table set). */
void unwind_maps_settle(struct unwind_maps *maps);
/* The first failed chunk update's -errno since the last call, 0 if none (its tables stay
 * unseen by BPF: their walks stop there). */
int unwind_maps_take_error(struct unwind_maps *maps);

#endif
