// SPDX-License-Identifier: MIT
/* Frames in a profile's samples, and the ctypes qsort chain (sample_frames.h). */
#include "sample_frames.h"

#include <stdbool.h>
#include <string.h>

static size_t frame_after(const struct pf_sample *sample, size_t from, enum pf_frame_kind kind, const char *part,
			  bool in_file)
{
	for (size_t i = from; from != NO_FRAME && i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];
		const char *text = in_file ? frame->file : frame->name;

		if (frame->kind == kind && text && strstr(text, part))
			return i;
	}
	return NO_FRAME;
}

size_t named_after(const struct pf_sample *sample, size_t from, enum pf_frame_kind kind, const char *part)
{
	return frame_after(sample, from, kind, part, false);
}

size_t in_file_after(const struct pf_sample *sample, size_t from, enum pf_frame_kind kind, const char *part)
{
	return frame_after(sample, from, kind, part, true);
}

void qsort_chain_note(const struct pf_sample *sample, struct qsort_chain *chain)
{
	size_t caller = named_after(sample, 0, PF_FRAME_PYTHON, "sort_through_qsort");
	size_t ffi = named_after(sample, caller, PF_FRAME_NATIVE, "ffi_call");
	size_t qsort_at = named_after(sample, ffi, PF_FRAME_NATIVE, "qsort");

	if (named_after(sample, 0, PF_FRAME_PYTHON, "qsort_compare") == NO_FRAME)
		return;
	chain->compare_samples++;
	/* glibc's qsort sorts through msort where it can allocate */
	if (qsort_at == NO_FRAME)
		qsort_at = named_after(sample, ffi, PF_FRAME_NATIVE, "msort");
	chain->whole_chain += named_after(sample, qsort_at, PF_FRAME_PYTHON, "qsort_compare") != NO_FRAME;
}
