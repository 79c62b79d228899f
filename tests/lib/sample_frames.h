// SPDX-License-Identifier: MIT
/* Finding frames in a profile's samples, and the ctypes qsort chain the native tests look for
 * (tests/lib/sample_frames.c). */
#ifndef PYBPFPROF_TESTS_SAMPLE_FRAMES_H
#define PYBPFPROF_TESTS_SAMPLE_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* No such frame: a search from it finds none either. */
#define NO_FRAME SIZE_MAX

/* The first frame (root first) at or after from of that kind whose name holds part; NO_FRAME if
 * none. */
size_t named_after(const struct pf_sample *sample, size_t from, enum pf_frame_kind kind, const char *part);
/* The same by the frame's file. */
size_t in_file_after(const struct pf_sample *sample, size_t from, enum pf_frame_kind kind, const char *part);

/* tests/scripts/native_qsort_callback.py's samples: Python -> ctypes -> libffi -> libc's qsort
 * (or msort) -> the Python comparator. */
struct qsort_chain {
	size_t compare_samples; /* samples in the comparator */
	size_t whole_chain;     /* ... whose stack holds caller, ffi_call, qsort, comparator in that order */
};

/* Counts a sample into chain. */
void qsort_chain_note(const struct pf_sample *sample, struct qsort_chain *chain);

#endif
