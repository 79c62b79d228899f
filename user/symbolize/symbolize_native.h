/* SPDX-License-Identifier: MIT */
/*
 * Names a user-space address of a target: which file it is in (from
 * /proc/PID/maps) and which function (from that file's ELF symbols, read
 * once per file with libelf, and for a stripped file those of its debug file
 * or its MiniDebugInfo: target/elf_symbols.h; C++ names demangled). It serves the native leaf
 * frame of a sample that landed outside the interpreter (a C extension, libc,
 * libz) and every frame of a mixed stack, the interpreter's own included.
 */
#ifndef PYBPFPROF_SYMBOLIZE_NATIVE_H
#define PYBPFPROF_SYMBOLIZE_NATIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "target/proc_maps.h"

struct symbolize_native;

struct symbolize_native *symbolize_native_new(void);
void symbolize_native_free(struct symbolize_native *symbolizer);
/* Where separate debug files are looked for instead of /usr/lib/debug (a test's tree); kept, not copied. */
void symbolize_native_set_debug_dir(struct symbolize_native *symbolizer, const char *debug_dir);
/* The process is gone, or exec'd: its mappings no longer hold. */
void symbolize_native_forget_pid(struct symbolize_native *symbolizer, pid_t pid);
/*
 * 1 with *frame filled (kind native; name the function, or "[libfoo.so.1]" when no symbol
 * covers ip; file the mapped file as the target sees it), 0 when ip is in the file skip (the
 * interpreter itself, which the Python frames already describe; NULL: none) or outside every file
 * mapping (anonymous memory, [vdso]) or in a process whose maps cannot be read (they are
 * read again at most every 100 ms), -ENOMEM.
 * The frame's strings live as long as the symbolizer.
 */
int symbolize_native_resolve(struct symbolize_native *symbolizer, pid_t pid, const struct proc_file_id *skip,
			     uint64_t ip, struct pf_frame *frame);

/* One pc of a native stack, named. */
struct symbolize_native_frame {
	struct pf_frame frame; /* kind native; file as the target sees it */
	const char *symbol;    /* the function (demangled), NULL when no symbol covers the pc */
	bool in_interpreter;   /* in the interpreter's file or in the process's main executable */
};

/*
 * Names any pc of pid, the interpreter's own included. 1 with *out filled (a pc
 * no symbol covers is named "[libfoo.so.1+0x1234]": the file's basename and the
 * pc's file offset), 0 outside every file mapping, -ENOMEM. interpreter
 * (NULL: none) is the file that holds the runtime (libpython, or the python
 * executable of a static build). The strings live as long as the symbolizer.
 */
int symbolize_native_lookup(struct symbolize_native *symbolizer, pid_t pid, const struct proc_file_id *interpreter,
			    uint64_t pc, struct symbolize_native_frame *out);

#endif
