// SPDX-License-Identifier: MIT
/*
 * The unwind table of one file as root receives it from the parser worker: checked row by row
 * against the file's code as root reads it itself, then indexed for BPF's search. The rows
 * are built in the worker (worker/unwind_build.c); nothing here reads a file's CFI.
 */
#include "unwind/file_table.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Program headers read to find a file's code; real files have about a dozen. */
#define UNWIND_MAX_PHDRS 64

/* ---- identity ---- */

/* Appends the file's device, inode and size to id: the kernel's word, not the file's. No
 * time: `touch` would make a file whose build failed (a worker that died on it) new again. */
static int add_inode(int fd, struct unwind_file_id *id)
{
	struct stat st;
	uint64_t words[3];

	if (fstat(fd, &st))
		return -errno;
	words[0] = (uint64_t)st.st_dev;
	words[1] = (uint64_t)st.st_ino;
	words[2] = (uint64_t)st.st_size;
	memcpy(id->bytes + id->len, words, sizeof(words));
	id->len += sizeof(words);
	return 0;
}

/* Only the fixed-size ELF header is read (doc/security.md): a build id is the file's own
 * claim, parsed in the parser worker if anywhere, and the key needs none. */
int unwind_table_file_id(int fd, struct unwind_file_id *id)
{
	Elf64_Ehdr header;

	memset(id, 0, sizeof(*id));
	if (pread(fd, &header, sizeof(header), 0) != (ssize_t)sizeof(header) ||
	    memcmp(header.e_ident, ELFMAG, SELFMAG) || header.e_ident[EI_CLASS] != ELFCLASS64 ||
	    header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_machine != EM_X86_64)
		return -ENOEXEC;
	id->kind = UNWIND_FILE_ID_INODE;
	return add_inode(fd, id);
}

/* ---- the file's code ---- */

static bool read_exact(int fd, void *buffer, size_t len, uint64_t offset)
{
	return pread(fd, buffer, len, (off_t)offset) == (ssize_t)len;
}

int unwind_table_code_ranges(int fd, struct unwind_code_ranges *code)
{
	Elf64_Phdr phdrs[UNWIND_MAX_PHDRS];
	Elf64_Ehdr header;

	code->count = 0;
	if (!read_exact(fd, &header, sizeof(header), 0) || memcmp(header.e_ident, ELFMAG, SELFMAG) ||
	    header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
	    header.e_machine != EM_X86_64 || header.e_phentsize != sizeof(Elf64_Phdr) ||
	    header.e_phnum > UNWIND_MAX_PHDRS || !header.e_phnum)
		return -ENOEXEC;
	if (!read_exact(fd, phdrs, (size_t)header.e_phnum * sizeof(Elf64_Phdr), header.e_phoff))
		return -ENOEXEC;
	for (unsigned i = 0; i < header.e_phnum && code->count < UNWIND_MAX_CODE_RANGES; i++) {
		const Elf64_Phdr *phdr = &phdrs[i];

		if (phdr->p_type != PT_LOAD || !(phdr->p_flags & PF_X) || phdr->p_vaddr + phdr->p_memsz < phdr->p_vaddr)
			continue;
		code->ranges[code->count++] =
			(struct unwind_function_range){ .start = phdr->p_vaddr, .end = phdr->p_vaddr + phdr->p_memsz };
	}
	return code->count ? 0 : -ENOEXEC;
}

static bool in_code(const struct unwind_code_ranges *code, uint64_t pc)
{
	for (size_t i = 0; i < code->count; i++)
		if (pc >= code->ranges[i].start && pc <= code->ranges[i].end)
			return true;
	return false;
}

int unwind_table_check_rows(const struct unwind_row *rows, size_t count, const struct unwind_code_ranges *code)
{
	if (!count || count > UNWIND_TABLE_MAX_ROWS || rows[count - 1].kind != UNWIND_ROW_GAP)
		return -EBADMSG;
	for (size_t i = 0; i < count; i++) {
		if (rows[i].kind > UNWIND_ROW_GAP || (i && rows[i].pc <= rows[i - 1].pc) || !in_code(code, rows[i].pc))
			return -EBADMSG;
	}
	return 0;
}

/* ---- the page index ---- */

/*
 * The page index BPF narrows its search with (include/unwind_table.h): entry p
 * is the last row at or below page p's first pc (row 0 for page 0), and one
 * closing entry is the last row. A table whose code spans more pages than it
 * has rows gets none.
 */
int unwind_table_index_pages(struct unwind_table *table, struct errbuf *error)
{
	uint64_t base, pages;
	size_t row = 0;

	if (table->count == 0)
		return 0;
	base = table->rows[0].pc & ~(((uint64_t)1 << UNWIND_PAGE_SHIFT) - 1);
	pages = ((table->rows[table->count - 1].pc - base) >> UNWIND_PAGE_SHIFT) + 1;
	if (pages > table->count)
		return 0;
	table->pages = calloc(pages + 1, sizeof(*table->pages));
	if (!table->pages)
		return errbuf_set(error, -ENOMEM, "out of memory for %" PRIu64 " unwind pages", pages + 1);
	for (uint64_t page = 0; page < pages; page++) {
		uint64_t page_start = base + (page << UNWIND_PAGE_SHIFT);

		while (row + 1 < table->count && table->rows[row + 1].pc <= page_start)
			row++;
		table->pages[page] = (uint32_t)row;
	}
	table->pages[pages] = (uint32_t)(table->count - 1);
	table->page_count = (size_t)pages + 1;
	table->page_base = (uint32_t)base;
	return 0;
}

/* ---- from the worker ---- */

_Static_assert(sizeof(struct unwind_row) == 8, "the rows cross the worker's socket as BPF loads them");

int unwind_table_from_payload(void *payload, size_t len, const struct unwind_code_ranges *code,
			      struct unwind_table *table, struct errbuf *error)
{
	struct parser_unwind_head head;
	const struct unwind_row *rows;
	size_t bytes;
	int err;

	memset(table, 0, sizeof(*table));
	if (len < sizeof(head)) {
		free(payload);
		return errbuf_set(error, -EBADMSG, "an answer of %zu bytes has no head", len);
	}
	memcpy(&head, payload, sizeof(head));
	bytes = (size_t)head.row_count * sizeof(*rows);
	/* malloc's alignment and an 8-byte head: the rows are aligned */
	rows = (const struct unwind_row *)((const char *)payload + sizeof(head));
	if (head.row_count > UNWIND_TABLE_MAX_ROWS || len != sizeof(head) + bytes ||
	    (head.source != UNWIND_CFI_EH_FRAME && head.source != UNWIND_CFI_DEBUG_FRAME) ||
	    unwind_table_check_rows(rows, head.row_count, code)) {
		free(payload);
		return errbuf_set(error, -EBADMSG, "an answer of %zu bytes is no table of the %" PRIu32 " rows its "
				  "head says (source %" PRIu32 "): a length, an order, a kind or a pc outside the "
				  "file's code is wrong", len, head.row_count, head.source);
	}
	/* the rows stay where they arrived: moved over the head, the rest given back */
	memmove(payload, rows, bytes);
	table->rows = realloc(payload, bytes);
	if (!table->rows)
		table->rows = payload;
	table->count = head.row_count;
	table->source = (uint8_t)head.source;
	for (size_t i = 0; i < table->count; i++)
		table->stats.by_kind[table->rows[i].kind]++;
	err = unwind_table_index_pages(table, error);
	if (err)
		unwind_table_free(table);
	return err;
}

int unwind_table_from_worker(struct parser_client *client, int fd, struct unwind_table *table, struct errbuf *error)
{
	struct unwind_code_ranges code;
	void *payload = NULL;
	size_t len = 0;
	int err;

	memset(table, 0, sizeof(*table));
	errbuf_clear(error);
	if (unwind_table_code_ranges(fd, &code))
		return errbuf_set(error, -ENOEXEC, "not a 64-bit x86-64 ELF file with code");
	err = parser_client_request(client, PARSER_REQUEST_UNWIND_ROWS, fd, 0, UNWIND_TABLE_REPLY_BUDGET, &payload,
				    &len);
	if (err == -ENOMEM || err == -ECHILD)
		/* the worker's memory limit, or a worker that died or overran on this file */
		return errbuf_set(error, -ECHILD, "the parser worker gave up on the file (%s)", strerror(-err));
	if (err)
		return errbuf_set(error, err, "the parser worker: %s", strerror(-err));
	err = unwind_table_from_payload(payload, len, &code, table, error);
	if (err == -EBADMSG) {
		/* a worker that lies has been taken over by some file: it reads no other */
		parser_client_distrust(client);
		err = -ECHILD;
	}
	return err;
}

void unwind_table_free(struct unwind_table *table)
{
	free(table->rows);
	free(table->pages);
	memset(table, 0, sizeof(*table));
}

/* The rows pc's page narrows the search to, as BPF narrows it (bpf/native_walk.h). */
static void page_of(const struct unwind_table *table, uint64_t pc, size_t *low, size_t *high)
{
	uint64_t page;

	if (table->page_count < 2 || pc < table->page_base)
		return;
	page = (pc - table->page_base) >> UNWIND_PAGE_SHIFT;
	if (page >= table->page_count - 1)
		page = table->page_count - 2;
	*low = table->pages[page];
	*high = (size_t)table->pages[page + 1] + 1;
}

const struct unwind_row *unwind_table_lookup(const struct unwind_table *table, uint64_t pc)
{
	size_t low = 0, high = table->count;

	if (!table->count)
		return NULL;
	page_of(table, pc, &low, &high);
	/* rows[low].pc <= pc < rows[high].pc (high == count: past the end), if any row holds pc */
	while (high - low > 1) {
		size_t middle = low + (high - low) / 2;

		if (table->rows[middle].pc <= pc)
			low = middle;
		else
			high = middle;
	}
	return table->rows[low].pc <= pc ? &table->rows[low] : NULL;
}
