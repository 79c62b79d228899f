// SPDX-License-Identifier: MIT
/*
 * Records of this very process with native stacks, and a resolver that names them, for the
 * sample resolver tests (tests/unit/test_symbolize_sample_resolve.c, tests/e2e/test_sample_resolve.c).
 */
#include "native_records.h"

#include <stdlib.h>
#include <unistd.h>

#include "symbolize/symbolize_native.h"

/* A record of this process: py_count Python frames (entry marks as given, 3.12 style), then pcs. */
void build_record(struct record_buffer *buffer, size_t py_count, const bool *entry, const uint64_t *pcs,
		  size_t pc_count, uint8_t stop)
{
	struct pbp_py_frame *py = (struct pbp_py_frame *)(buffer->bytes + sizeof(struct pbp_record));
	uint64_t *native;

	memset(buffer, 0, sizeof(*buffer));
	buffer->record.pid = (uint32_t)getpid();
	buffer->record.tid = (uint32_t)getpid();
	buffer->record.py_frame_count = (uint16_t)py_count;
	buffer->record.native_frame_count = (uint16_t)pc_count;
	buffer->record.native_stop = stop;
	buffer->record.user_ip = pc_count ? pcs[0] : 0;
	buffer->record.flags = PBP_REC_USER_MODE;
	for (size_t i = 0; i < py_count; i++)
		py[i] = (struct pbp_py_frame){ .code_addr = 0x1000 + i,
					       .instr_offset = 4 | (entry[i] ? PBP_PY_FRAME_ENTRY : 0) };
	native = (uint64_t *)(py + py_count);
	if (pc_count)
		memcpy(native, pcs, pc_count * sizeof(*pcs));
	buffer->size = sizeof(struct pbp_record) + py_count * sizeof(*py) + pc_count * sizeof(*pcs);
}

int native_resolver_setup(void **state)
{
	struct fixture *fixture = calloc(1, sizeof(*fixture));

	assert_non_null(fixture);
	assert_int_equal(sample_resolve_init(&fixture->resolver, NULL, NULL, 1000), 0);
	fixture->resolver.native = symbolize_native_new();
	fixture->resolver.native_stacks = true;
	fixture->python.pid = getpid();
	fixture->python.major = 3;
	fixture->python.minor = 12;
	/* No such file is mapped: only the main executable is the interpreter's. */
	fixture->python.runtime_file = (struct proc_file_id){ 0 };
	*state = fixture;
	return 0;
}

int native_resolver_teardown(void **state)
{
	struct fixture *fixture = *state;

	symbolize_native_free(fixture->resolver.native);
	sample_resolve_free(&fixture->resolver);
	free(fixture);
	return 0;
}

/* The sample's frames root first as "name;name", Python frames as "py". */
void render(const struct pf_sample *sample, char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];
		const char *name = frame->kind == PF_FRAME_PYTHON ? "py"
				   : frame->kind == PF_FRAME_INVALID ? "INVALID"
								     : frame->name;

		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ";" : "", name);
	}
}
