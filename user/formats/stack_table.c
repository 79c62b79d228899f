// SPDX-License-Identifier: MIT
#include "formats/stack_table.h"

#include "util/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void stack_table_init(struct stack_table *table)
{
	memset(table, 0, sizeof(*table));
	intern_init(&table->frames);
	intern_init(&table->stacks);
	known_stacks_init(&table->known, KNOWN_STACKS_ID_BYTES);
}

void stack_table_free(struct stack_table *table)
{
	intern_free(&table->frames);
	intern_free(&table->stacks);
	free(table->scratch);
	free(table->key);
	known_stacks_free(&table->known);
	memset(table, 0, sizeof(*table));
}

static int64_t frame_id(struct stack_table *table, const struct pf_frame *frame)
{
	size_t file_len = strlen(frame->file), name_len = strlen(frame->name);
	int32_t lines[2] = { frame->line > 0 ? frame->line : 0, frame->function_line > 0 ? frame->function_line : 0 };
	size_t len = 1 + sizeof(lines) + file_len + 1 + name_len;

	if (ARRAY_RESERVE(table->key, table->key_capacity, len))
		return -ENOMEM;
	table->key[0] = (char)frame->kind;
	memcpy(table->key + 1, lines, sizeof(lines));
	memcpy(table->key + 1 + sizeof(lines), frame->file, file_len + 1);
	memcpy(table->key + 1 + sizeof(lines) + file_len + 1, frame->name, name_len);
	return intern_add(&table->frames, table->key, len, NULL);
}

int64_t stack_table_add(struct stack_table *table, const struct pf_sample *sample)
{
	uint32_t known_id;
	int64_t stack;

	if (known_stacks_find_id(&table->known, sample->stack_id, &known_id))
		return known_id;
	if (ARRAY_RESERVE(table->scratch, table->scratch_capacity, sample->frame_count + 1))
		return -ENOMEM;
	for (size_t i = 0; i < sample->frame_count; i++) {
		int64_t id = frame_id(table, &sample->frames[i]);

		if (id < 0)
			return id;
		table->scratch[i] = (uint32_t)id;
	}
	stack = intern_add(&table->stacks, table->scratch, sample->frame_count * sizeof(uint32_t), NULL);
	if (stack >= 0)
		known_stacks_put_id(&table->known, sample->stack_id, (uint32_t)stack);
	return stack;
}

const void *stack_table_stack(const struct stack_table *table, uint32_t id, size_t *depth)
{
	size_t len;
	const void *key = intern_key(&table->stacks, id, &len);

	*depth = len / sizeof(uint32_t);
	return key;
}

void stack_table_frame(const struct stack_table *table, uint32_t id, struct stack_frame *frame)
{
	const char *key = intern_key(&table->frames, id, NULL);
	const char *file = key + 1 + 2 * sizeof(int32_t);

	/* The key is kind, line, function line, file NUL name; the table ends every key with a NUL. */
	frame->kind = (enum pf_frame_kind)(unsigned char)key[0];
	memcpy(&frame->line, key + 1, sizeof(frame->line));
	memcpy(&frame->function_line, key + 1 + sizeof(int32_t), sizeof(frame->function_line));
	frame->file = file;
	frame->name = file + strlen(file) + 1;
}
