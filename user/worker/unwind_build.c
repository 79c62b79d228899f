// SPDX-License-Identifier: MIT
/*
 * Building the compact unwind table of one ELF file (include/unwind_table.h),
 * in the parser worker (worker/parser_worker.c answers root with it).
 *
 * libdw splits the section into CIEs and FDEs (dwarf_next_cfi); each FDE's
 * program, after its CIE's initial instructions, is interpreted once
 * (worker/cfa_program.c), and each row's CFA, return-address and rbp rules
 * are turned into one compact row. libdw does not expose an FDE's address
 * range, so it is decoded here from the FDE's bytes (the pointer encoding of
 * its CIE's 'R' augmentation).
 *
 * libdw's own interpreter gives the same rows, one dwarf_cfi_addrframe() at a
 * time, but replays the FDE's program from its start for each: quadratic in
 * a function's rows. That path is kept as unwind_table_build_per_row, the
 * oracle the tests compare this one with. The two differ only on malformed
 * CFI: an operand cut by the FDE's end (libdw reads on into the next entry,
 * here the rest of the FDE has no rule), FDEs that overlap or that
 * .eh_frame_hdr misplaces (libdw takes each pc's FDE from the index, here
 * each FDE gives its own rows).
 */
#include "worker/unwind_build.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elf/elf_section.h"
#include "util/array.h"
#include "worker/cfa_program.h"

/* Bounds against hostile files. */
#define UNWIND_MAX_CFI_BYTES (64u << 20)      /* .eh_frame / .debug_frame, decompressed */
/* CFI program bytes interpreted: each FDE's once, a CIE's each time an FDE
 * follows another CIE's (a hostile file may alternate two huge CIEs). The
 * per-row libdw path replays an FDE's program for every row: libpython 3.12
 * replays 4.8 MB in all, one hostile function of 40k rows would replay 3 GB.
 * Past this, refused. */
#define UNWIND_MAX_WORK (1ull << 27)

#define DWARF_REG_RBP CFA_REG_RBP
#define DWARF_REG_RSP CFA_REG_RSP
#define DWARF_REG_RIP CFA_REG_RIP

/* What the FDEs of one CIE need of it. */
struct cie_info {
	int fde_encoding;             /* DW_EH_PE_*, or -1: not understood (its FDEs are skipped) */
	bool sized_augmentation;      /* 'z': FDEs hold a ULEB128-sized augmentation before their program */
	uint64_t fde_augmentation_size; /* otherwise, the size of their augmentation */
	bool signal_frame;            /* 'S' */
	int return_address_register;  /* as dwarf_frame_info gives it */
	const uint8_t *initial_instructions;
	const uint8_t *initial_instructions_end;
	bool initial_run;             /* initial instructions interpreted (on the first FDE that needs them) */
	bool initial_ok;              /* ... and understood: cfa.initial holds the result */
	struct cfa_cie cfa;
};

/* One CFI section being turned into rows. */
struct cfi_walk {
	Dwarf_CFI *cfi;
	Elf_Data *data;       /* the section's bytes, for dwarf_next_cfi */
	bool eh_frame;        /* .eh_frame format (else .debug_frame) */
	uint64_t section_addr; /* link-time address of the section, for pc-relative pointers */
	unsigned char e_ident[EI_NIDENT];
	/* the CIE last looked up */
	Dwarf_Off cie_offset;
	struct cie_info cie;
	bool per_row;         /* rows by dwarf_cfi_addrframe() at each (the oracle), not in one pass */
	struct unwind_table *table;
	struct errbuf *error;
};

/* Section headers past the end of the file: libelf would see no sections and we would say "no CFI". */
static int check_section_headers(int fd, const GElf_Ehdr *ehdr, uint64_t *file_size, struct errbuf *error)
{
	struct stat st;
	/* e_shnum 0 with headers present: the count is in the first header, which must fit */
	uint64_t count = ehdr->e_shoff ? (ehdr->e_shnum ? ehdr->e_shnum : 1) : 0;

	if (fstat(fd, &st))
		return errbuf_set(error, -errno, "fstat: %s", strerror(errno));
	*file_size = (uint64_t)st.st_size;
	if (count && (ehdr->e_shoff > *file_size || count > (*file_size - ehdr->e_shoff) / sizeof(Elf64_Shdr)))
		return errbuf_set(error, -ENOEXEC, "truncated file: %" PRIu64 " section headers at %" PRIu64
				  " do not fit in its %" PRIu64 " bytes", count, (uint64_t)ehdr->e_shoff, *file_size);
	return 0;
}

/* The file as a 64-bit x86-64 ELF, read (never mapped). */
static int open_elf(int fd, Elf **elf_out, uint64_t *file_size, struct errbuf *error)
{
	Elf *elf;
	GElf_Ehdr ehdr;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return errbuf_set(error, -ENOSYS, "libelf: %s", elf_errmsg(-1));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return errbuf_set(error, -ENOEXEC, "not an ELF file: %s", elf_errmsg(-1));
	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 || !gelf_getehdr(elf, &ehdr) ||
	    ehdr.e_machine != EM_X86_64) {
		elf_end(elf);
		return errbuf_set(error, -ENOEXEC, "not a 64-bit x86-64 ELF file");
	}
	err = check_section_headers(fd, &ehdr, file_size, error);
	if (err) {
		elf_end(elf);
		return err;
	}
	*elf_out = elf;
	return 0;
}

/* ---- FDE address ranges ---- */

/* The encoding of a CIE's FDE addresses (its 'R' augmentation), or -1 if not understood. */
static int fde_encoding_of_cie(const Dwarf_CIE *cie, bool eh_frame)
{
	const char *aug = cie->augmentation;
	const uint8_t *cursor = cie->augmentation_data, *end;
	int encoding = DW_EH_PE_absptr;

	if (!eh_frame || !aug || !*aug)
		return DW_EH_PE_absptr; /* .debug_frame: target addresses, 8 bytes on x86-64 */
	if (aug[0] != 'z' || !cursor)
		return -1;
	end = cursor + cie->augmentation_data_size;
	for (const char *c = aug + 1; *c; c++) {
		uint64_t ignored;

		switch (*c) {
		case 'R':
			if (cursor >= end)
				return -1;
			encoding = *cursor++;
			break;
		case 'L':
			if (cursor++ >= end)
				return -1;
			break;
		case 'P': {
			int personality_encoding;

			if (cursor >= end)
				return -1;
			personality_encoding = *cursor++;
			if (!cfa_read_encoded(&cursor, end, personality_encoding, &ignored))
				return -1;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return -1;
		}
	}
	return encoding;
}

static struct cie_info cie_info_of(const Dwarf_CIE *cie, bool eh_frame)
{
	const char *aug = cie->augmentation;
	struct cie_info info = {
		.fde_encoding = fde_encoding_of_cie(cie, eh_frame),
		.sized_augmentation = aug && aug[0] == 'z',
		.fde_augmentation_size = cie->fde_augmentation_data_size,
		.signal_frame = aug && aug[0] == 'z' && strchr(aug, 'S'),
		.return_address_register = (int)cie->return_address_register,
		.initial_instructions = cie->initial_instructions,
		.initial_instructions_end = cie->initial_instructions_end,
		.cfa = {
			.code_alignment = cie->code_alignment_factor,
			.data_alignment = cie->data_alignment_factor,
		},
	};

	info.cfa.fde_encoding = info.fde_encoding;
	return info;
}

/* The CIE at cie_offset (fde_encoding -1 if there is none). */
static const struct cie_info *cie_at(struct cfi_walk *walk, Dwarf_Off cie_offset)
{
	Dwarf_CFI_Entry entry;
	Dwarf_Off next;

	if (walk->cie_offset == cie_offset)
		return &walk->cie;
	walk->cie_offset = cie_offset;
	if (dwarf_next_cfi(walk->e_ident, walk->data, walk->eh_frame, cie_offset, &next, &entry) ||
	    !dwarf_cfi_cie_p(&entry))
		walk->cie = (struct cie_info){ .fde_encoding = -1 };
	else
		walk->cie = cie_info_of(&entry.cie, walk->eh_frame);
	return &walk->cie;
}

/* [start, end) of an FDE; false if its encoding is not understood. */
static bool fde_range(struct cfi_walk *walk, const Dwarf_FDE *fde, uint64_t *start, uint64_t *end)
{
	int encoding = cie_at(walk, fde->CIE_pointer)->fde_encoding;
	const uint8_t *cursor = fde->start;
	uint64_t location, range;

	if (encoding < 0 || (encoding & DW_EH_PE_indirect))
		return false;
	if (!cfa_read_encoded(&cursor, fde->end, encoding, &location) ||
	    !cfa_read_encoded(&cursor, fde->end, encoding & 0x0f, &range))
		return false;
	switch (encoding & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		location += walk->section_addr + (uint64_t)(fde->start - (const uint8_t *)walk->data->d_buf);
		break;
	default:
		return false;
	}
	*start = location;
	*end = location + range;
	return *end >= *start;
}

/* ---- rules to rows ---- */

static bool is_cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *offset)
{
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*offset = 0;
		return true;
	}
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*offset = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* The x86-64 PLT's CFA: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0), as GNU ld writes it. */
static bool is_plt_cfa(const Dwarf_Op *ops, size_t nops)
{
	static const struct {
		uint8_t atom;
		uint64_t number;
	} plt[] = {
		{ DW_OP_breg7, 8 }, { DW_OP_breg16, 0 }, { DW_OP_lit15, 0 }, { DW_OP_and, 0 }, { DW_OP_lit11, 0 },
		{ DW_OP_ge, 0 },    { DW_OP_lit3, 0 },   { DW_OP_shl, 0 },   { DW_OP_plus, 0 },
	};

	if (nops != ARRAY_SIZE(plt))
		return false;
	for (size_t i = 0; i < nops; i++) {
		if (ops[i].atom != plt[i].atom || ops[i].number != plt[i].number)
			return false;
	}
	return true;
}

/* CFA = rsp or rbp + offset: the row's kind and offset; false for any other rule. */
static bool simple_cfa(const Dwarf_Op *ops, size_t nops, struct unwind_row *row)
{
	uint64_t reg;
	int64_t offset;

	if (nops != 1)
		return false;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		offset = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		offset = (int64_t)ops[0].number;
	} else {
		return false;
	}
	if ((reg != DWARF_REG_RSP && reg != DWARF_REG_RBP) || offset < 0 || offset % 8 || offset / 8 > UINT16_MAX)
		return false;
	row->kind = reg == DWARF_REG_RSP ? UNWIND_ROW_CFA_RSP : UNWIND_ROW_CFA_RBP;
	row->cfa_offset8 = (uint16_t)(offset / 8);
	return true;
}

/* rbp unchanged (0), or saved at CFA - 8 * N: *rbp_offset8 = N; false for any other rule. */
static bool simple_rbp(Dwarf_Frame *frame, uint8_t *rbp_offset8)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	int64_t offset;

	if (dwarf_frame_register(frame, DWARF_REG_RBP, ops_mem, &ops, &nops))
		return false;
	if (nops == 0 && !ops) {
		*rbp_offset8 = 0;
		return true;
	}
	if (!is_cfa_plus(ops, nops, &offset) || offset >= -8 || offset % 8 || -offset / 8 > UINT8_MAX)
		return false;
	*rbp_offset8 = (uint8_t)(-offset / 8);
	return true;
}

/* The compact form of the rules of one row. */
static struct unwind_row row_of_frame(Dwarf_Frame *frame, int ra_regno, bool signal_frame)
{
	struct unwind_row row = { .kind = UNWIND_ROW_UNSUPPORTED };
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	int64_t ra_offset;

	if (signal_frame || ra_regno != DWARF_REG_RIP ||
	    dwarf_frame_register(frame, DWARF_REG_RIP, ops_mem, &ops, &nops))
		return row;
	if (nops == 0 && ops == ops_mem) {
		/* the return address is undefined: the outermost frame */
		row.kind = UNWIND_ROW_ROOT;
		return row;
	}
	if (!is_cfa_plus(ops, nops, &ra_offset) || ra_offset != -8)
		return row;
	if (dwarf_frame_cfa(frame, &ops, &nops))
		return row;
	if (is_plt_cfa(ops, nops)) {
		if (simple_rbp(frame, &row.rbp_offset8) && row.rbp_offset8 == 0)
			row.kind = UNWIND_ROW_PLT;
		return row;
	}
	if (!simple_cfa(ops, nops, &row) || !simple_rbp(frame, &row.rbp_offset8))
		row = (struct unwind_row){ .kind = UNWIND_ROW_UNSUPPORTED };
	return row;
}

/* rbp unchanged (0), or saved at CFA - 8 * N: *rbp_offset8 = N; false for any other rule (as simple_rbp). */
static bool simple_rbp_rule(const struct cfa_register *rbp, uint8_t *rbp_offset8)
{
	if (rbp->rule == CFA_REGISTER_SAME_VALUE) {
		*rbp_offset8 = 0;
		return true;
	}
	/* bounded before it is negated: an expression's offset may be INT64_MIN */
	if (rbp->rule != CFA_REGISTER_OFFSET || rbp->value >= -8 || rbp->value < -8 * (int64_t)UINT8_MAX ||
	    rbp->value % 8)
		return false;
	*rbp_offset8 = (uint8_t)(-rbp->value / 8);
	return true;
}

/* CFA = rsp or rbp + offset: the row's kind and offset; false for any other rule (as simple_cfa). */
static bool simple_cfa_rule(const struct cfa_state *state, struct unwind_row *row)
{
	if (state->cfa_rule != CFA_REG_OFFSET && state->cfa_rule != CFA_EXPRESSION_BREG)
		return false;
	if ((state->cfa_register != DWARF_REG_RSP && state->cfa_register != DWARF_REG_RBP) || state->cfa_offset < 0 ||
	    state->cfa_offset % 8 || state->cfa_offset / 8 > UINT16_MAX)
		return false;
	row->kind = state->cfa_register == DWARF_REG_RSP ? UNWIND_ROW_CFA_RSP : UNWIND_ROW_CFA_RBP;
	row->cfa_offset8 = (uint16_t)(state->cfa_offset / 8);
	return true;
}

/* The compact form of the rules of one row interpreted in one pass: row_of_frame's, rule for rule
 * (a PLT row whose rbp is saved keeps its offset in an UNSUPPORTED row, as there). */
static struct unwind_row row_of_state(const struct cie_info *cie, const struct cfa_state *state)
{
	struct unwind_row row = { .kind = UNWIND_ROW_UNSUPPORTED };

	if (cie->signal_frame || cie->return_address_register != DWARF_REG_RIP)
		return row;
	if (state->rip.rule == CFA_REGISTER_UNDEFINED || state->rip.rule == CFA_REGISTER_UNSPECIFIED) {
		/* the return address is undefined: the outermost frame */
		row.kind = UNWIND_ROW_ROOT;
		return row;
	}
	if (state->rip.rule != CFA_REGISTER_OFFSET || state->rip.value != -8)
		return row;
	if (state->cfa_rule == CFA_EXPRESSION_PLT) {
		if (simple_rbp_rule(&state->rbp, &row.rbp_offset8) && row.rbp_offset8 == 0)
			row.kind = UNWIND_ROW_PLT;
		return row;
	}
	if (!simple_cfa_rule(state, &row) || !simple_rbp_rule(&state->rbp, &row.rbp_offset8))
		row = (struct unwind_row){ .kind = UNWIND_ROW_UNSUPPORTED };
	return row;
}

/* ---- collecting, sorting, merging ---- */

/* Rows are collected with a full 64-bit pc, then narrowed once sorted. */
struct wide_row {
	uint64_t pc;
	struct unwind_row row;
};

struct row_list {
	struct wide_row *items;
	size_t count;
	size_t capacity;
};

static int row_list_add(struct row_list *list, uint64_t pc, struct unwind_row row, struct errbuf *error)
{
	/* before merging, gaps may double the count */
	if (list->count >= 2 * (size_t)UNWIND_TABLE_MAX_ROWS)
		return errbuf_set(error, -E2BIG, "CFI describes more than %u rows", 2 * UNWIND_TABLE_MAX_ROWS);
	if (ARRAY_RESERVE(list->items, list->capacity, list->count + 1))
		return errbuf_set(error, -ENOMEM, "out of memory for %zu unwind rows", list->count + 1);
	list->items[list->count++] = (struct wide_row){ .pc = pc, .row = row };
	return 0;
}

/* The rows of one FDE covering [start, end), then a GAP at its end. */
static int add_fde_rows(struct cfi_walk *walk, struct row_list *list, uint64_t start, uint64_t end,
			size_t program_bytes)
{
	uint64_t pc = start;
	int err;

	while (pc < end) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr row_start, row_end;
		bool signal_frame = false;
		struct unwind_row row;
		int ra_regno;

		walk->table->stats.work += program_bytes + 1;
		if (walk->table->stats.work > UNWIND_MAX_WORK)
			return errbuf_set(walk->error, -E2BIG,
					  "CFI too costly to interpret: over %llu program bytes replayed, at the FDE at 0x%" PRIx64,
					  (unsigned long long)UNWIND_MAX_WORK, start);
		if (dwarf_cfi_addrframe(walk->cfi, pc, &frame)) {
			/* libdw cannot read this FDE (unknown opcode, bad CIE): no rule for the rest */
			err = row_list_add(list, pc, (struct unwind_row){ .kind = UNWIND_ROW_UNSUPPORTED }, walk->error);
			if (err)
				return err;
			break;
		}
		ra_regno = dwarf_frame_info(frame, &row_start, &row_end, &signal_frame);
		row = row_of_frame(frame, ra_regno, signal_frame);
		free(frame);
		if (ra_regno < 0 || row_start > pc || row_end <= pc)
			row = (struct unwind_row){ .kind = UNWIND_ROW_UNSUPPORTED };
		err = row_list_add(list, pc, row, walk->error);
		if (err)
			return err;
		walk->table->stats.cfi_rows++;
		if (ra_regno < 0 || row_end <= pc)
			break;
		pc = row_end;
	}
	return row_list_add(list, end, (struct unwind_row){ .kind = UNWIND_ROW_GAP }, walk->error);
}

/* Where an FDE's program starts: past its address range and augmentation; false if malformed. */
static bool fde_program(struct cfi_walk *walk, const Dwarf_FDE *fde, const uint8_t **program)
{
	const struct cie_info *cie = cie_at(walk, fde->CIE_pointer);
	const uint8_t *cursor = fde->start;
	uint64_t ignored, augmentation_size = cie->fde_augmentation_size;

	if (!cfa_read_encoded(&cursor, fde->end, cie->fde_encoding, &ignored) ||
	    !cfa_read_encoded(&cursor, fde->end, cie->fde_encoding & 0x0f, &ignored))
		return false;
	if (cie->sized_augmentation && !cfa_read_uleb(&cursor, fde->end, &augmentation_size))
		return false;
	if (augmentation_size > (uint64_t)(fde->end - cursor))
		return false;
	*program = cursor + augmentation_size;
	return true;
}

/* The CIE's initial state, interpreted once per CIE looked up; false if it is malformed. */
static bool cie_initial_state(struct cfi_walk *walk, struct cie_info *cie)
{
	if (!cie->initial_run) {
		cie->initial_run = true;
		walk->table->stats.work += (uint64_t)(cie->initial_instructions_end - cie->initial_instructions);
		cie->initial_ok = cie->initial_instructions && cie->initial_instructions_end >= cie->initial_instructions &&
				  !cfa_run_cie(&cie->cfa, cie->initial_instructions, cie->initial_instructions_end);
	}
	return cie->initial_ok;
}

/* One FDE's rows as they are interpreted. */
struct fde_pass {
	struct cfi_walk *walk;
	struct row_list *list;
	const struct cie_info *cie;
};

/* A return-address register libdw reports as negative: one UNSUPPORTED row, then nothing (as add_fde_rows). */
#define FDE_PASS_STOP 1

static int add_state_row(void *context, uint64_t pc, const struct cfa_state *state)
{
	struct fde_pass *pass = context;
	int err = row_list_add(pass->list, pc, row_of_state(pass->cie, state), pass->walk->error);

	if (err)
		return err;
	pass->walk->table->stats.cfi_rows++;
	return pass->cie->return_address_register < 0 ? FDE_PASS_STOP : 0;
}

/* The rows of one FDE covering [start, end) in one pass over its program, then a GAP at its end. */
static int add_fde_rows_in_one_pass(struct cfi_walk *walk, struct row_list *list, uint64_t start, uint64_t end,
				    const Dwarf_FDE *fde)
{
	struct fde_pass pass = { .walk = walk, .list = list, .cie = &walk->cie };
	const uint8_t *program = NULL;
	uint64_t failed_at = start;
	int err = -EINVAL;

	walk->table->stats.work += (uint64_t)(fde->end - fde->start) + 1;
	if (walk->table->stats.work > UNWIND_MAX_WORK)
		return errbuf_set(walk->error, -E2BIG,
				  "CFI too costly to interpret: over %llu program bytes, at the FDE at 0x%" PRIx64,
				  (unsigned long long)UNWIND_MAX_WORK, start);
	if (fde_program(walk, fde, &program) && cie_initial_state(walk, &walk->cie))
		err = cfa_run_fde(&walk->cie.cfa, program, fde->end,
				  walk->section_addr + (uint64_t)(program - (const uint8_t *)walk->data->d_buf), start,
				  end, add_state_row, &pass, &failed_at);
	if (err == -EINVAL) /* malformed: no rule for the rest */
		err = row_list_add(list, failed_at, (struct unwind_row){ .kind = UNWIND_ROW_UNSUPPORTED }, walk->error);
	if (err < 0)
		return err;
	return row_list_add(list, end, (struct unwind_row){ .kind = UNWIND_ROW_GAP }, walk->error);
}

/* What is done with each FDE's range [start, end). */
typedef int (*fde_visit)(struct cfi_walk *walk, void *context, uint64_t start, uint64_t end, const Dwarf_FDE *fde);

static int walk_fdes(struct cfi_walk *walk, fde_visit visit, void *context)
{
	Dwarf_Off offset = 0, next;
	Dwarf_CFI_Entry entry;
	int status = 0, err;

	while (offset != (Dwarf_Off)-1 &&
	       (status = dwarf_next_cfi(walk->e_ident, walk->data, walk->eh_frame, offset, &next, &entry)) == 0) {
		uint64_t start, end;

		if (next <= offset)
			break;
		offset = next;
		if (dwarf_cfi_cie_p(&entry))
			continue;
		/* start 0: a function the linker discarded (.debug_frame keeps its FDE);
		 * end past 4 GiB: not representable, its trailing GAP row included */
		if (!fde_range(walk, &entry.fde, &start, &end) || !start || end > UINT32_MAX) {
			walk->table->stats.fdes_skipped++;
			continue;
		}
		if (start == end)
			continue;
		walk->table->stats.fdes++;
		err = visit(walk, context, start, end, &entry.fde);
		if (err)
			return err;
	}
	if (status < 0)
		return errbuf_set(walk->error, -EIO, "unreadable CFI at offset %" PRIu64 ": %s", (uint64_t)offset,
				  dwarf_errmsg(-1));
	return 0;
}

static int visit_fde_rows(struct cfi_walk *walk, void *list, uint64_t start, uint64_t end, const Dwarf_FDE *fde)
{
	if (walk->per_row)
		return add_fde_rows(walk, list, start, end, (size_t)(fde->end - fde->start));
	return add_fde_rows_in_one_pass(walk, list, start, end, fde);
}

/* Sorted by pc; at one pc, a function's row before another FDE's trailing GAP
 * (kinds are ordered so), and overlapping FDEs' rows in a fixed order. */
static int compare_rows(const void *left, const void *right)
{
	const struct wide_row *a = left, *b = right;

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	if (a->row.kind != b->row.kind)
		return a->row.kind < b->row.kind ? -1 : 1;
	if (a->row.cfa_offset8 != b->row.cfa_offset8)
		return a->row.cfa_offset8 < b->row.cfa_offset8 ? -1 : 1;
	return (int)a->row.rbp_offset8 - (int)b->row.rbp_offset8;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->kind == b->kind && a->cfa_offset8 == b->cfa_offset8 && a->rbp_offset8 == b->rbp_offset8;
}

/* Sorts, keeps one row per pc, drops a row whose rule its predecessor already gives. */
static int finish_table(struct row_list *list, bool index, struct unwind_table *table, struct errbuf *error)
{
	size_t kept = 0;
	uint64_t previous_pc = 0;

	qsort(list->items, list->count, sizeof(*list->items), compare_rows);
	for (size_t i = 0; i < list->count; i++) {
		const struct wide_row item = list->items[i];
		/* the first row at a pc wins, even when it merged into the row before it */
		bool same_pc = i && item.pc == previous_pc;

		previous_pc = item.pc;
		if (same_pc || (kept && same_rule(&item.row, &list->items[kept - 1].row)))
			continue;
		list->items[kept++] = item;
	}
	if (kept > UNWIND_TABLE_MAX_ROWS)
		return errbuf_set(error, -E2BIG, "the unwind table has %zu rows, over the limit of %u", kept,
				  UNWIND_TABLE_MAX_ROWS);
	table->rows = calloc(kept ? kept : 1, sizeof(*table->rows));
	if (!table->rows)
		return errbuf_set(error, -ENOMEM, "out of memory for %zu unwind rows", kept);
	for (size_t i = 0; i < kept; i++) {
		table->rows[i] = list->items[i].row;
		table->rows[i].pc = (uint32_t)list->items[i].pc;
		table->stats.by_kind[table->rows[i].kind]++;
	}
	table->count = kept;
	return index ? unwind_table_index_pages(table, error) : 0;
}

/* ---- sources ---- */

/* Refuses a file whose compressed debug sections would inflate past the bound (libdw inflates them all). */
static int check_compressed_sections(Elf *elf, struct errbuf *error)
{
	Elf_Scn *scn = NULL;
	unsigned seen = 0;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn)) && seen++ < ELF_SECTION_MAX) {
		GElf_Chdr chdr;

		if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_COMPRESSED))
			continue;
		if (!gelf_getchdr(scn, &chdr) || chdr.ch_size > UNWIND_MAX_CFI_BYTES)
			return errbuf_set(error, -E2BIG, "a compressed section inflates past %u bytes",
					  UNWIND_MAX_CFI_BYTES);
	}
	return 0;
}

static int section_data(Elf *elf, uint64_t file_size, const char *name, Elf_Data **data, uint64_t *addr,
			struct errbuf *error)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elf_section_by_name(elf, name, &shdr);

	if (!scn || shdr.sh_type == SHT_NOBITS || !shdr.sh_size)
		return -ENODATA;
	if (shdr.sh_size > UNWIND_MAX_CFI_BYTES)
		return errbuf_set(error, -E2BIG, "%s is %" PRIu64 " bytes, over the limit of %u", name,
				  (uint64_t)shdr.sh_size, UNWIND_MAX_CFI_BYTES);
	if (!(shdr.sh_flags & SHF_COMPRESSED) &&
	    (shdr.sh_offset > file_size || shdr.sh_size > file_size - shdr.sh_offset))
		return errbuf_set(error, -ENOEXEC, "truncated file: %s ends past its %" PRIu64 " bytes", name,
				  file_size);
	*data = elf_getdata(scn, NULL);
	if (!*data || !(*data)->d_buf || !(*data)->d_size)
		return errbuf_set(error, -ENOEXEC, "%s cannot be read (truncated file?): %s", name, elf_errmsg(-1));
	*addr = shdr.sh_addr;
	return 0;
}

static int walk_cfi(struct cfi_walk *walk, Elf *elf, fde_visit visit, void *context)
{
	const char *ident = elf_getident(elf, NULL);

	if (!ident)
		return errbuf_set(walk->error, -ENOEXEC, "no ELF identification");
	memcpy(walk->e_ident, ident, EI_NIDENT);
	walk->cie_offset = (Dwarf_Off)-1;
	walk->cie = (struct cie_info){ .fde_encoding = -1 };
	return walk_fdes(walk, visit, context);
}

/* A section without one usable FDE counts as no CFI, so the other section is tried. */
static int rows_or_nodata(int err, const struct row_list *list)
{
	return !err && !list->count ? -ENODATA : err;
}

static int rows_of_eh_frame(Elf *elf, uint64_t file_size, bool per_row, struct unwind_table *table,
			    struct row_list *list, struct errbuf *error)
{
	struct cfi_walk walk = { .eh_frame = true, .per_row = per_row, .table = table, .error = error };
	int err = section_data(elf, file_size, ".eh_frame", &walk.data, &walk.section_addr, error);

	if (err)
		return err;
	walk.cfi = dwarf_getcfi_elf(elf);
	if (!walk.cfi)
		return errbuf_set(error, -EIO, "libdw cannot read .eh_frame: %s", dwarf_errmsg(-1));
	err = walk_cfi(&walk, elf, visit_fde_rows, list);
	dwarf_cfi_end(walk.cfi);
	table->source = UNWIND_CFI_EH_FRAME;
	return rows_or_nodata(err, list);
}

static int rows_of_debug_frame(Elf *elf, uint64_t file_size, bool per_row, struct unwind_table *table,
			       struct row_list *list, struct errbuf *error)
{
	struct cfi_walk walk = { .eh_frame = false, .per_row = per_row, .table = table, .error = error };
	GElf_Shdr shdr;
	Dwarf *dwarf;
	int err;

	if (!elf_section_by_name(elf, ".debug_frame", &shdr))
		return -ENODATA;
	err = check_compressed_sections(elf, error);
	if (err)
		return err;
	dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dwarf)
		return errbuf_set(error, -EIO, "libdw cannot read the DWARF: %s", dwarf_errmsg(-1));
	/* after dwarf_begin_elf, which inflated the section if it was compressed */
	err = section_data(elf, file_size, ".debug_frame", &walk.data, &walk.section_addr, error);
	walk.cfi = err ? NULL : dwarf_getcfi(dwarf);
	if (!err && !walk.cfi)
		err = errbuf_set(error, -EIO, "libdw cannot read .debug_frame: %s", dwarf_errmsg(-1));
	if (!err)
		err = walk_cfi(&walk, elf, visit_fde_rows, list);
	dwarf_end(dwarf);
	table->source = UNWIND_CFI_DEBUG_FRAME;
	return rows_or_nodata(err, list);
}

/* How a table is built: by libdw row by row (the oracle), and whole or its rows alone. */
struct build_mode {
	bool per_row;
	bool rows_only; /* no id, no page index: root, which receives the rows, has its own */
};

static int build_table(int fd, struct build_mode mode, struct unwind_table *table, struct errbuf *error)
{
	struct row_list list = { 0 };
	uint64_t file_size;
	Elf *elf;
	int err;

	memset(table, 0, sizeof(*table));
	errbuf_clear(error);
	err = open_elf(fd, &elf, &file_size, error);
	if (err)
		return err;
	err = mode.rows_only ? 0 : unwind_table_file_id(fd, &table->id);
	if (err) {
		errbuf_set(error, err, "cannot identify the file: %s", strerror(-err));
	} else {
		err = rows_of_eh_frame(elf, file_size, mode.per_row, table, &list, error);
		if (err == -ENODATA) {
			memset(&table->stats, 0, sizeof(table->stats));
			list.count = 0;
			err = rows_of_debug_frame(elf, file_size, mode.per_row, table, &list, error);
		}
		if (err == -ENODATA)
			errbuf_set(error, err, "no CFI: neither .eh_frame nor .debug_frame");
	}
	if (!err)
		err = finish_table(&list, !mode.rows_only, table, error);
	free(list.items);
	elf_end(elf);
	if (err) {
		struct unwind_file_id id = table->id;

		unwind_table_free(table);
		table->id = id;
	}
	return err;
}

int unwind_table_build(int fd, struct unwind_table *table, struct errbuf *error)
{
	return build_table(fd, (struct build_mode){ .per_row = false }, table, error);
}

int unwind_table_build_rows(int fd, struct unwind_table *table, struct errbuf *error)
{
	return build_table(fd, (struct build_mode){ .rows_only = true }, table, error);
}

int unwind_table_build_per_row(int fd, struct unwind_table *table, struct errbuf *error)
{
	return build_table(fd, (struct build_mode){ .per_row = true }, table, error);
}

/* ---- function ranges ---- */

struct range_list {
	struct unwind_function_range *items;
	size_t count;
	size_t capacity;
};

static int visit_fde_range(struct cfi_walk *walk, void *context, uint64_t start, uint64_t end, const Dwarf_FDE *fde)
{
	struct range_list *list = context;

	(void)fde;
	if (list->count >= UNWIND_TABLE_MAX_ROWS)
		return errbuf_set(walk->error, -E2BIG, ".eh_frame has more than %u FDEs", UNWIND_TABLE_MAX_ROWS);
	if (ARRAY_RESERVE(list->items, list->capacity, list->count + 1))
		return errbuf_set(walk->error, -ENOMEM, "out of memory for %zu function ranges", list->count + 1);
	list->items[list->count++] = (struct unwind_function_range){ .start = start, .end = end };
	return 0;
}

static int by_start(const void *left, const void *right)
{
	const struct unwind_function_range *a = left, *b = right;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

int unwind_table_function_starts(int fd, struct unwind_function_range **ranges, size_t *count, struct errbuf *error)
{
	struct unwind_table stats_only = { 0 };
	struct cfi_walk walk = { .eh_frame = true, .table = &stats_only, .error = error };
	struct range_list list = { 0 };
	uint64_t file_size;
	Elf *elf;
	int err;

	*ranges = NULL;
	*count = 0;
	errbuf_clear(error);
	err = open_elf(fd, &elf, &file_size, error);
	if (err)
		return err;
	err = section_data(elf, file_size, ".eh_frame", &walk.data, &walk.section_addr, error);
	if (err == -ENODATA)
		errbuf_set(error, err, "no .eh_frame");
	if (!err)
		err = walk_cfi(&walk, elf, visit_fde_range, &list);
	elf_end(elf);
	if (err) {
		free(list.items);
		return err;
	}
	/* no FDE with a range: no list at all, and qsort must not be given NULL */
	if (list.count)
		qsort(list.items, list.count, sizeof(*list.items), by_start);
	*ranges = list.items;
	*count = list.count;
	return 0;
}
