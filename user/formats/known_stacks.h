/* SPDX-License-Identifier: MIT */
/*
 * What a writer derived from a stack it has written (its frame ids, its encoded references),
 * kept by the stack's pf_sample.stack_id so that the stack's next samples skip the work per
 * frame. A writer whose ids can be forgotten (MOJO's tables start over) gives an epoch that
 * changes with them. Bounded: past the budget the least used go (util/memo_cache.h); and when
 * stack ids die (profile.h's pf_stack_ids_dead_below: a whole-host run's resolver forgets its
 * stacks each time a process is forgotten) everything goes, as nothing kept can be asked again.
 */
#ifndef PYBPFPROF_KNOWN_STACKS_H
#define PYBPFPROF_KNOWN_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "util/memo_cache.h"

#define KNOWN_STACKS_MAX 8192u
/* Room for KNOWN_STACKS_MAX of the ids known_stacks_put_id keeps (32 bytes each with their keys). */
#define KNOWN_STACKS_ID_BYTES ((size_t)1 << 18)

struct known_stacks {
	struct memo_cache cache; /* (stack id, epoch) -> what the writer keeps */
	uint64_t dead_below;     /* pf_stack_ids_dead_below() when the cache last dropped the dead */
};

void known_stacks_init(struct known_stacks *known, size_t max_bytes);
void known_stacks_free(struct known_stacks *known);
/* What was kept for the stack in this epoch (*len bytes), or NULL; always NULL for stack id 0. */
const void *known_stacks_find(struct known_stacks *known, uint64_t stack_id, uint64_t epoch, size_t *len);
/* Room for len bytes to keep for the stack (absent), for the caller to fill; NULL when nothing can be
 * kept (stack id 0, memory short). Valid until the next put. */
void *known_stacks_put(struct known_stacks *known, uint64_t stack_id, uint64_t epoch, size_t len);
/* A uint32_t kept for the stack (a table's id of it): true and *value if known. */
bool known_stacks_find_id(struct known_stacks *known, uint64_t stack_id, uint32_t *value);
void known_stacks_put_id(struct known_stacks *known, uint64_t stack_id, uint32_t value);
/* Forget every stack (the entry array and index stay). */
void known_stacks_clear(struct known_stacks *known);
/* What the cache holds: its entries, their index, keys and values. */
size_t known_stacks_held_bytes(const struct known_stacks *known);

#endif
