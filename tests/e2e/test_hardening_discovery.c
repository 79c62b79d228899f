// SPDX-License-Identifier: MIT
/*
 * Files a target maps that attack discovery (is this ELF a CPython runtime, which version)
 * and file identity (build ids), mapped executable by a nobody process during a whole-host
 * run: an ELF whose 2,000 note sections all overlap, and sparse 510 MiB files (a few KiB on
 * disk) whose sections span the file. Root opens them; the parser worker reads them (or root
 * reads a bounded few KiB of headers and notes): the profiler stays small, finishes, and a
 * benign Python beside the attacker loses no samples to it.
 */
#include "testlib.h"

#include "parser/parser_client.h"
#include "parser/parser_protocol.h"
#include "proc/proc_maps.h"
#include "python/py_runtime_file.h"
#include "util/clock.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the run may cost: the profiler's peak resident memory. */
#define PEAK_RSS_LIMIT_KIB (150l << 10)

#define NOTE_BOMB_SECTIONS 2000
#define NOTE_BOMB_BYTES ((off_t)1200 << 10)
#define SPARSE_FILES 5
#define SPARSE_BYTES ((off_t)510 << 20)

static void elf_header(Elf64_Ehdr *header, uint64_t section_headers, unsigned sections, unsigned names)
{
	memset(header, 0, sizeof(*header));
	memcpy(header->e_ident, ELFMAG, SELFMAG);
	header->e_ident[EI_CLASS] = ELFCLASS64;
	header->e_ident[EI_DATA] = ELFDATA2LSB;
	header->e_ident[EI_VERSION] = EV_CURRENT;
	header->e_type = ET_DYN;
	header->e_machine = EM_X86_64;
	header->e_version = EV_CURRENT;
	header->e_ehsize = sizeof(Elf64_Ehdr);
	header->e_phoff = sizeof(Elf64_Ehdr);
	header->e_phentsize = sizeof(Elf64_Phdr);
	header->e_phnum = 1;
	header->e_shoff = section_headers;
	header->e_shentsize = sizeof(Elf64_Shdr);
	header->e_shnum = (uint16_t)sections;
	header->e_shstrndx = (uint16_t)names;
}

/* One PT_LOAD of the whole file, executable: the mapping's load bias is found. */
static Elf64_Phdr whole_file_segment(off_t size)
{
	return (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0,
			     .p_filesz = (uint64_t)size, .p_memsz = (uint64_t)size, .p_align = 4096 };
}

static void write_at(int fd, const void *data, size_t len, off_t offset)
{
	assert_int_equal(pwrite(fd, data, len, offset), (ssize_t)len);
}

/* 1.2 MB: NOTE_BOMB_SECTIONS note sections of just under 1 MiB each, all at the same bytes.
 * Read by libelf section by section, each one is a separate copy that it keeps. */
static void write_note_bomb(const char *path)
{
	const uint64_t headers_at = 4096;
	Elf64_Shdr *sections = calloc(NOTE_BOMB_SECTIONS, sizeof(*sections));
	Elf64_Ehdr header;
	Elf64_Phdr segment = whole_file_segment(NOTE_BOMB_BYTES);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(fd >= 0);
	assert_non_null(sections);
	elf_header(&header, headers_at, NOTE_BOMB_SECTIONS, 0);
	for (unsigned i = 1; i < NOTE_BOMB_SECTIONS; i++)
		sections[i] = (Elf64_Shdr){ .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC, .sh_offset = 0,
					    .sh_size = (1 << 20) - 4096, .sh_addralign = 4 };
	write_at(fd, &header, sizeof(header), 0);
	write_at(fd, &segment, sizeof(segment), sizeof(header));
	write_at(fd, sections, NOTE_BOMB_SECTIONS * sizeof(*sections), (off_t)headers_at);
	assert_int_equal(ftruncate(fd, NOTE_BOMB_BYTES), 0);
	close(fd);
	free(sections);
}

/* 510 MiB, a few KiB on disk: every section discovery and identity read (.dynsym, .dynstr,
 * .symtab, .strtab, .rodata, .dynamic, a note, .eh_frame) spans the file. */
static void write_sparse_spanning(const char *path)
{
	static const char names[] = "\0.dynsym\0.dynstr\0.symtab\0.strtab\0.rodata\0.dynamic\0.note\0.eh_frame\0.shstrtab";
	enum { DYNSYM = 1, DYNSTR, SYMTAB, STRTAB, RODATA, DYNAMIC, NOTE, EH_FRAME, SHSTRTAB, COUNT };
	const uint64_t names_at = 4096, headers_at = 8192, span_at = 16384;
	/* whole symbols (24 bytes) and dynamic entries (16): libelf reads such tables */
	const uint64_t span = ((uint64_t)SPARSE_BYTES - span_at) / 48 * 48;
	Elf64_Shdr sections[COUNT];
	Elf64_Ehdr header;
	Elf64_Phdr segment = whole_file_segment(SPARSE_BYTES);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(fd >= 0);
	memset(sections, 0, sizeof(sections));
	elf_header(&header, headers_at, COUNT, SHSTRTAB);
	sections[DYNSYM] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_DYNSYM, .sh_offset = span_at, .sh_size = span,
					 .sh_link = DYNSTR, .sh_entsize = sizeof(Elf64_Sym) };
	sections[DYNSTR] = (Elf64_Shdr){ .sh_name = 9, .sh_type = SHT_STRTAB, .sh_offset = span_at, .sh_size = span };
	sections[SYMTAB] = (Elf64_Shdr){ .sh_name = 17, .sh_type = SHT_SYMTAB, .sh_offset = span_at, .sh_size = span,
					 .sh_link = STRTAB, .sh_entsize = sizeof(Elf64_Sym) };
	sections[STRTAB] = (Elf64_Shdr){ .sh_name = 25, .sh_type = SHT_STRTAB, .sh_offset = span_at, .sh_size = span };
	sections[RODATA] = (Elf64_Shdr){ .sh_name = 33, .sh_type = SHT_PROGBITS, .sh_offset = span_at, .sh_size = span };
	sections[DYNAMIC] = (Elf64_Shdr){ .sh_name = 41, .sh_type = SHT_DYNAMIC, .sh_offset = span_at, .sh_size = span,
					  .sh_link = DYNSTR, .sh_entsize = sizeof(Elf64_Dyn) };
	sections[NOTE] = (Elf64_Shdr){ .sh_name = 50, .sh_type = SHT_NOTE, .sh_offset = span_at, .sh_size = span,
				       .sh_addralign = 4 };
	sections[EH_FRAME] = (Elf64_Shdr){ .sh_name = 56, .sh_type = SHT_PROGBITS, .sh_offset = span_at,
					   .sh_size = span };
	sections[SHSTRTAB] = (Elf64_Shdr){ .sh_name = 66, .sh_type = SHT_STRTAB, .sh_offset = names_at,
					   .sh_size = sizeof(names) };
	write_at(fd, &header, sizeof(header), 0);
	write_at(fd, &segment, sizeof(segment), sizeof(header));
	write_at(fd, names, sizeof(names), (off_t)names_at);
	write_at(fd, sections, sizeof(sections), (off_t)headers_at);
	assert_int_equal(ftruncate(fd, SPARSE_BYTES), 0);
	close(fd);
}

static bool has_frame_named(const struct pf_sample *sample, const void *name)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		if (sample->frames[i].name && strcmp(sample->frames[i].name, name) == 0)
			return true;
	return false;
}

static size_t samples_with_frame(const char *path, const char *name)
{
	return test_count_samples(path, has_frame_named, name);
}

/* The run's "N samples in ... M lost" line. */
static void read_totals(const char *log, uint64_t *samples, uint64_t *lost)
{
	char line[1024];
	FILE *file = fopen(log, "r");
	bool found = false;

	assert_non_null(file);
	while (!found && fgets(line, sizeof(line), file)) {
		const char *semicolon = strrchr(line, ';');

		found = strstr(line, " samples in ") && semicolon &&
			sscanf(line, "pybpfprof: %" SCNu64, samples) == 1 && sscanf(semicolon, "; %" SCNu64, lost) == 1;
	}
	fclose(file);
	if (!found)
		fail_msg("no totals in %s", log);
}

/* A C program (no Python: every mapping of it is examined) that maps the sparse files
 * executable, prints its pid and spins. */
static const char sparse_attacker_source[] =
	"#include <fcntl.h>\n#include <stdio.h>\n#include <sys/mman.h>\n#include <unistd.h>\n"
	"int main(int argc, char **argv)\n{\n"
	"\tvolatile unsigned long spins = 0;\n"
	"\tfor (int i = 1; i < argc; i++) {\n"
	"\t\tint fd = open(argv[i], O_RDONLY);\n"
	"\t\tif (fd < 0 || mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)\n"
	"\t\t\treturn 1;\n\t}\n"
	"\tprintf(\"%d\\n\", (int)getpid());\n\tfflush(stdout);\n"
	"\tfor (;;)\n\t\tspins++;\n}\n";

/* nobody runs it on the sparse files; its pid, once ready. */
static FILE *start_sparse_attacker(const char *dir, pid_t *pid)
{
	char source[128], command[1024];
	FILE *out;

	FORMAT(source, "%s/spin.c", dir);
	out = fopen(source, "w");
	assert_non_null(out);
	assert_int_equal(fputs(sparse_attacker_source, out) >= 0, 1);
	assert_int_equal(fclose(out), 0);
	FORMAT(command, "cc -O1 -o %s/spin %s", dir, source);
	assert_int_equal(system(command), 0);
	FORMAT(command, "exec setpriv --reuid=nobody --regid=nogroup --clear-groups %s/spin %s/libsparse*.so", dir, dir);
	return test_popen_ready(command, pid);
}

enum attack { NOTE_BOMB, SPARSE_FILES_ATTACK };

/* As nobody: the note bomb mapped by a Python, or the sparse files mapped by a C program; its
 * pid. */
static FILE *start_attacker(const char *dir, enum attack attack, pid_t *pid)
{
	char command[2048], path[128];

	if (attack == SPARSE_FILES_ATTACK) {
		for (int i = 0; i < SPARSE_FILES; i++) {
			FORMAT(path, "%s/libsparse%d.so", dir, i);
			write_sparse_spanning(path);
			assert_int_equal(chown(path, 65534, 65534), 0);
		}
		return start_sparse_attacker(dir, pid);
	}
	FORMAT(path, "%s/libnotes.so", dir);
	write_note_bomb(path);
	assert_int_equal(chown(path, 65534, 65534), 0);
	FORMAT(command,
	       "exec setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '"
	       "import mmap, os\n"
	       "bomb = mmap.mmap(os.open(\"%s\", os.O_RDONLY), 0, flags=mmap.MAP_PRIVATE, "
	       "prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
	       "print(os.getpid(), flush=True)\n"
	       "def attacker_spin():\n"
	       "    while True: sum(range(1000))\n"
	       "attacker_spin()'",
	       path);
	return test_popen_ready(command, pid);
}

/*
 * nobody maps the attack files executable and spins; a benign Python spins beside it; the
 * profiler samples the whole host for a few seconds: it finishes, stays small, and the benign
 * Python is in the profile with at most 1% of the samples lost.
 */
static void profile_beside(enum attack attack)
{
	char dir[64], command[1024], profile[128], log[128];
	char *argv[] = { (char *)pybpfprof_binary(), "-F", "199", "-d", "6", "-o", profile, NULL };
	pid_t attacker_pid, benign_pid;
	FILE *attacker, *benign;
	struct test_run_watch watch;
	uint64_t samples = 0, lost = 0, benign_cpu_ms;
	size_t benign_samples;
	double expected;
	int status;

	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(profile, "%s/out.mojo", dir);
	FORMAT(log, "%s/profiler.log", dir);
	attacker = start_attacker(dir, attack, &attacker_pid);
	FORMAT(command, "exec /usr/bin/python3 -c '"
			"import os\nprint(os.getpid(), flush=True)\n"
			"def benign_spin():\n"
			"    while True: sum(range(1000))\n"
			"benign_spin()'");
	benign = test_popen_ready(command, &benign_pid);
	benign_cpu_ms = test_cpu_ms(benign_pid);
	status = test_run_watching(argv, log, &watch);
	benign_cpu_ms = test_cpu_ms(benign_pid) - benign_cpu_ms;
	kill(attacker_pid, SIGKILL);
	kill(benign_pid, SIGKILL);
	pclose(attacker);
	pclose(benign);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	read_totals(log, &samples, &lost);
	benign_samples = samples_with_frame(profile, "benign_spin");
	/* The samples its CPU time calls for at 199 Hz in the 6 s sampled (its CPU in the profiler's
	 * start-up and end, outside them, taken out in proportion). */
	expected = 199.0 * (double)benign_cpu_ms / 1000.0 * 6000.0 / (double)(watch.wall_ms > 6000 ? watch.wall_ms : 6000);
	print_message("profiler peak RSS %ld KiB; %" PRIu64 " samples, %" PRIu64 " lost; %zu of the benign Python (its "
		      "CPU time calls for %.0f); the draining thread waited for a CPU %.1f%% of the run\n",
		      watch.peak_kib, samples, lost, benign_samples, expected, 100.0 * watch.cpu_wait_share);
	assert_true(watch.peak_kib < PEAK_RSS_LIMIT_KIB);
	/* the attack leaves the benign process its samples, however busy the host */
	assert_true((double)benign_samples * 4.0 >= expected);
	/* Losses say what the attack cost only when the draining thread had a CPU: on a host that
	 * starves it (other work, not the attack: its parsing runs in the worker) the ring fills
	 * whatever was mapped. */
	if (watch.cpu_wait_share <= 0.05)
		assert_true(lost * 100 <= samples);
	else
		print_message("losses not judged: the host kept the draining thread from a CPU\n");
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* A 1.2 MB ELF whose 2,000 note sections of 1 MiB all overlap. */
static void note_bomb_costs_the_profiler_nothing(void **state)
{
	(void)state;
	profile_beside(NOTE_BOMB);
}

/* Five sparse 510 MiB ELFs (a few KiB on disk) whose tables span the file. */
static void sparse_files_cost_the_profiler_nothing(void **state)
{
	(void)state;
	profile_beside(SPARSE_FILES_ATTACK);
}

/* A sparse file whose tables span it is judged unread from its section headers: its tables
 * are not read, in the worker either, however often it is touched. */
static void sparse_tables_are_not_read(void **state)
{
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats stats;
	struct py_runtime_file verdict;
	struct proc_maps maps;
	const struct proc_map *map = NULL;
	char dir[64], path[128], command[256];
	void *mapped;
	int fd;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(path, "%s/libsparse.so", dir);
	write_sparse_spanning(path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	mapped = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(mapped != MAP_FAILED);
	close(fd);
	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count && !map; i++)
		if (strstr(maps.maps[i].path, "/libsparse.so"))
			map = &maps.maps[i];
	assert_non_null(map);
	assert_int_equal(py_runtime_file_cache_new(&cache, 16), 0);
	assert_int_equal(py_runtime_file_lookup(cache, getpid(), map, &verdict), 0);
	assert_int_equal(verdict.verdict, PY_RUNTIME_NONE);
	assert_int_equal(verdict.unread, -EFBIG);
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.examined, 1);
	assert_int_equal(stats.bad, 0);
	py_runtime_file_cache_free(cache);
	proc_maps_free(&maps);
	munmap(mapped, 4096);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* A sparse ELF of 32 MiB whose .symtab (30 MiB of symbols) is read for its verdict. */
static void write_large_symtab(const char *path)
{
	static const char names[] = "\0.symtab\0.strtab\0.shstrtab";
	const uint64_t names_at = 4096, headers_at = 8192, symbols_at = 16384;
	const off_t size = (off_t)32 << 20;
	Elf64_Shdr sections[4];
	Elf64_Ehdr header;
	Elf64_Phdr segment = whole_file_segment(size);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(fd >= 0);
	memset(sections, 0, sizeof(sections));
	elf_header(&header, headers_at, 4, 3);
	sections[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_SYMTAB, .sh_offset = symbols_at,
				    .sh_size = (uint64_t)30 << 20, .sh_link = 2, .sh_entsize = sizeof(Elf64_Sym) };
	sections[2] = (Elf64_Shdr){ .sh_name = 9, .sh_type = SHT_STRTAB, .sh_offset = names_at, .sh_size = 1 };
	sections[3] = (Elf64_Shdr){ .sh_name = 17, .sh_type = SHT_STRTAB, .sh_offset = names_at,
				    .sh_size = sizeof(names) };
	write_at(fd, &header, sizeof(header), 0);
	write_at(fd, &segment, sizeof(segment), sizeof(header));
	write_at(fd, names, sizeof(names), (off_t)names_at);
	write_at(fd, sections, sizeof(sections), (off_t)headers_at);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

/* The mapping of path in this process's maps. */
static const struct proc_map *mapping_of(const struct proc_maps *maps, const char *path)
{
	for (size_t i = 0; i < maps->count; i++)
		if (strcmp(maps->maps[i].path, path) == 0)
			return &maps->maps[i];
	fail_msg("%s is not mapped", path);
	return NULL;
}

/*
 * A file the worker overruns its time on (here: a 1 ms budget, and 30 MiB of symbols to read)
 * is bad: touching it does not have it read again; rewriting it to another size does.
 */
static void bad_file_stays_bad_when_touched(void **state)
{
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats stats;
	struct py_runtime_file verdict;
	struct proc_maps maps;
	char dir[64], path[128], command[256];
	void *mapped;
	int fd;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(path, "%s/libslow.so", dir);
	write_large_symtab(path);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	mapped = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(mapped != MAP_FAILED);
	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	assert_int_equal(py_runtime_file_cache_new(&cache, 16), 0);
	assert_int_equal(py_runtime_file_cache_set_timeout(cache, 1), 0);
	assert_int_equal(py_runtime_file_lookup(cache, getpid(), mapping_of(&maps, path), &verdict), 0);
	assert_int_equal(verdict.unread, -ECHILD);
	assert_int_equal(futimens(fd, NULL), 0);
	assert_int_equal(py_runtime_file_lookup(cache, getpid(), mapping_of(&maps, path), &verdict), 0);
	assert_int_equal(verdict.unread, -ECHILD);
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.examined, 1);
	assert_int_equal(stats.bad, 1);
	assert_int_equal(ftruncate(fd, ((off_t)32 << 20) + 4096), 0);
	assert_int_equal(py_runtime_file_lookup(cache, getpid(), mapping_of(&maps, path), &verdict), 0);
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.examined, 2);
	py_runtime_file_cache_free(cache);
	proc_maps_free(&maps);
	munmap(mapped, 4096);
	close(fd);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}


/* A file a --selftest worker dies on (parser_protocol.h): a 64-bit ELF header, then the mark. */
static void write_selftest_file(const char *path, const char *mark)
{
	Elf64_Ehdr header;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(fd >= 0);
	elf_header(&header, 0, 0, 0);
	header.e_phoff = 0;
	header.e_phnum = 0;
	write_at(fd, &header, sizeof(header), 0);
	write_at(fd, mark, strlen(mark), PARSER_SELFTEST_FILE_OFFSET);
	assert_int_equal(ftruncate(fd, 4096), 0);
	close(fd);
}

static void *map_executable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *mapped;

	assert_true(fd >= 0);
	mapped = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(mapped != MAP_FAILED);
	close(fd);
	return mapped;
}

static bool path_listed(const struct proc_map *const *list, size_t count, const char *path)
{
	for (size_t i = 0; i < count; i++)
		if (!strcmp(list[i]->path, path))
			return true;
	return false;
}

/* What a user would compare of two verdicts on one file. */
static bool same_verdict(const struct py_runtime_file *a, const struct py_runtime_file *b)
{
	return a->verdict == b->verdict && a->unread == b->unread && a->major == b->major && a->minor == b->minor &&
	       a->sym.runtime == b->sym.runtime && a->sym.interp_head == b->sym.interp_head;
}

/*
 * Discovery asks about a process's files in one request. Among this process's own files (up
 * to a full batch), one that kills the worker, one that has it run out of memory and the note
 * bomb: each other file is judged as a worker of its own judges it, the two the worker died
 * on are bad and read no more, and the batch took three round trips (the files after each
 * death asked again), not one a file.
 */
static void batch_costs_only_the_files_the_worker_dies_on(void **state)
{
	enum { CRASH, BLOAT, NOTES, HOSTILE };
	static const size_t positions[HOSTILE] = { 2, 7, 4 };
	const struct proc_map *list[PARSER_MAX_BATCH_FILES];
	struct py_runtime_file expected[PARSER_MAX_BATCH_FILES], verdict;
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats stats;
	struct proc_maps maps;
	char dir[64], paths[HOSTILE][128], command[256];
	void *mapped[HOSTILE];
	size_t count = 0, read;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(paths[CRASH], "%s/libcrash.so", dir);
	FORMAT(paths[BLOAT], "%s/libbloat.so", dir);
	FORMAT(paths[NOTES], "%s/libnotes.so", dir);
	write_selftest_file(paths[CRASH], PARSER_SELFTEST_FILE_CRASH);
	write_selftest_file(paths[BLOAT], PARSER_SELFTEST_FILE_BLOAT);
	write_note_bomb(paths[NOTES]);
	for (int i = 0; i < HOSTILE; i++)
		mapped[i] = map_executable(paths[i]);
	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count && count < PARSER_MAX_BATCH_FILES - HOSTILE; i++) {
		const struct proc_map *map = &maps.maps[i];

		if (map->path[0] == '/' && strchr(map->perms, 'x') && strncmp(map->path, dir, strlen(dir)) &&
		    !path_listed(list, count, map->path))
			list[count++] = map;
	}
	assert_true(count >= positions[BLOAT]);
	for (int k = 0; k < HOSTILE; k++) {
		size_t at = positions[k];

		memmove(&list[at + 1], &list[at], (count - at) * sizeof(list[0]));
		list[at] = mapping_of(&maps, paths[k]);
		count++;
	}
	/* each file alone, by a worker of its own, as the reference */
	for (size_t i = 0; i < count; i++)
		if (list[i] != mapping_of(&maps, paths[CRASH]) && list[i] != mapping_of(&maps, paths[BLOAT]))
			assert_int_equal(py_runtime_file_lookup(NULL, getpid(), list[i], &expected[i]), 0);

	assert_int_equal(py_runtime_file_cache_new(&cache, 64), 0);
	assert_int_equal(py_runtime_file_cache_set_worker(
				 cache, &(struct parser_client_options){ .memory_bytes = 96 << 20, .selftest = true }),
			 0);
	read = py_runtime_file_prefetch(cache, getpid(), list, count, 64);
	py_runtime_file_cache_stats(cache, &stats);
	print_message("%zu files: %zu read in %" PRIu64 " requests, %" PRIu64 " bad\n", count, read, stats.requests,
		      stats.bad);
	assert_int_equal(read, count);
	assert_int_equal(stats.examined, count);
	assert_int_equal(stats.bad, 2);
	assert_int_equal(stats.requests, 3);
	for (size_t i = 0; i < count; i++) {
		bool died_on = list[i] == mapping_of(&maps, paths[CRASH]) || list[i] == mapping_of(&maps, paths[BLOAT]);

		assert_int_equal(py_runtime_file_lookup(cache, getpid(), list[i], &verdict), 0);
		if (died_on)
			assert_int_equal(verdict.unread, -ECHILD);
		else if (!same_verdict(&verdict, &expected[i]))
			fail_msg("%s: verdict %d unread %d in the batch, %d unread %d alone", list[i]->path,
				 (int)verdict.verdict, verdict.unread, (int)expected[i].verdict, expected[i].unread);
	}
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.examined, count);
	assert_int_equal(stats.requests, 3);
	py_runtime_file_cache_free(cache);
	proc_maps_free(&maps);
	for (int i = 0; i < HOSTILE; i++)
		munmap(mapped[i], 4096);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/*
 * The drain attacker, as nobody: 2,000 tiny ELF files named like libpython (discovery
 * reads every such file, whatever their number), and a stream of Python children, each of
 * which touches them all (a verdict is re-read when its file changes), maps them executable
 * and spins a while: every child is a new process to discover, then a target whose maps (its
 * 2,000 mappings, their files opened) are read, then read again as its walks stop in
 * the files it maps. Its pid once the files are written.
 */
static const char churn_attacker_source[] =
	"import mmap, os, struct, subprocess, sys, time\n"
	"d = sys.argv[1]\n"
	"names = [os.path.join(d, 'libpython3.99-%d.so' % i) for i in range(2000)]\n"
	"def spin(seconds):\n"
	"    end = time.time() + seconds\n"
	"    while time.time() < end: sum(range(1000))\n"
	"if len(sys.argv) > 2:\n"
	"    keep = []\n"
	"    for name in names:\n"
	"        fd = os.open(name, os.O_RDONLY)\n"
	"        os.utime(fd)\n"
	"        keep.append(mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC))\n"
	"        os.close(fd)\n"
	"    spin(1.5)\n"
	"    sys.exit(0)\n"
	"elf = bytearray(4096)\n"
	"elf[0:64] = struct.pack('<4sBBBBB7xHHIQQQIHHHHHH', b'\\x7fELF', 2, 1, 1, 0, 0, 3, 62, 1, 0, 64, 0, 0, 64, 56, 1, 64, 0, 0)\n"
	"elf[64:120] = struct.pack('<IIQQQQQQ', 1, 5, 0, 0, 0, 4096, 4096, 4096)\n"
	"for name in names:\n"
	"    with open(name, 'wb') as f: f.write(elf)\n"
	"print(os.getpid(), flush=True)\n"
	"children = []\n"
	"while True:\n"
	"    children = [c for c in children if c.poll() is None]\n"
	"    if len(children) < 8:\n"
	"        children.append(subprocess.Popen([sys.executable, sys.argv[0], d, 'child']))\n"
	"    time.sleep(0.05)\n";

/* The -v summary's drain line: records and microseconds per record, and the longest drain. */
static void read_drain(const char *log, double *us_per_record, double *longest_ms)
{
	char line[1024];
	FILE *file = fopen(log, "r");
	unsigned long long records;

	assert_non_null(file);
	*us_per_record = *longest_ms = -1;
	while (fgets(line, sizeof(line), file))
		if (sscanf(line, "pybpfprof: drain: %llu records, %lf us each on average; the longest drain %lf ms",
			   &records, us_per_record, longest_ms) == 3)
			break;
	fclose(file);
}

/*
 * nobody churns Python processes that map thousands of files while a benign Python spins; the
 * whole host is profiled. The loop that drains the ring hands every process's discovery and
 * maps read to other threads: the ring never fills (at most 1% of the samples lost, with
 * the benign one's share of them), and the benign Python keeps at least a quarter of the samples its
 * CPU time in the run calls for (the run's start-up and end take their share of that time, and
 * its discovery waits its turn behind the host's other new processes).
 */
static void churning_mappers_leave_the_drain_free(void **state)
{
	char dir[64], command[1024], profile[128], log[128], script[128];
	char *argv[] = { (char *)pybpfprof_binary(), "-v", "-F", "199", "-d", "8", "-o", profile, NULL };
	pid_t attacker_pid, benign_pid;
	FILE *attacker, *benign, *out;
	uint64_t samples = 0, lost = 0, benign_cpu_ms;
	uint64_t start_ms, wall_ms;
	double us_per_record, longest_ms, expected;
	size_t benign_samples;
	long peak;
	int status;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(profile, "%s/out.mojo", dir);
	FORMAT(log, "%s/profiler.log", dir);
	FORMAT(script, "%s/churn.py", dir);
	out = fopen(script, "w");
	assert_non_null(out);
	assert_true(fputs(churn_attacker_source, out) >= 0);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(chmod(script, 0644), 0);
	FORMAT(command, "exec setsid setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 %s %s", script,
	       dir);
	attacker = test_popen_ready(command, &attacker_pid);
	/* raised, so that a loaded host still gives it the CPU (and samples) to judge by */
	benign = test_popen_ready("exec nice -n -10 /usr/bin/python3 -c '"
				  "import os\nprint(os.getpid(), flush=True)\n"
				  "def benign_spin():\n"
				  "    while True: sum(range(1000))\n"
				  "benign_spin()'",
				  &benign_pid);
	benign_cpu_ms = test_cpu_ms(benign_pid);
	start_ms = clock_monotonic_ms();
	status = test_run_watching_peak_rss(argv, log, &peak);
	wall_ms = clock_monotonic_ms() - start_ms;
	benign_cpu_ms = test_cpu_ms(benign_pid) - benign_cpu_ms;
	/* the attacker and every child it started (its own session) */
	kill(-attacker_pid, SIGKILL);
	kill(benign_pid, SIGKILL);
	pclose(attacker);
	pclose(benign);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	read_totals(log, &samples, &lost);
	read_drain(log, &us_per_record, &longest_ms);
	benign_samples = samples_with_frame(profile, "benign_spin");
	/* its CPU time spread evenly over the profiler's run, of which 8 s sampled */
	expected = 199.0 * (double)benign_cpu_ms / 1000.0 * 8000.0 / (double)(wall_ms > 8000 ? wall_ms : 8000);
	print_message("%" PRIu64 " samples, %" PRIu64 " lost; the benign Python: %zu samples of %.0f its CPU time (%"
		      PRIu64 " ms in %" PRIu64 " ms) calls for; drain %.1f us per record, longest %.1f ms; peak RSS %ld KiB\n",
		      samples, lost, benign_samples, expected, benign_cpu_ms, wall_ms, us_per_record, longest_ms, peak);
	assert_true(lost * 100 <= samples);
	assert_true((double)benign_samples >= 0.25 * expected);
	assert_true(peak < PEAK_RSS_LIMIT_KIB);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/*
 * The mapping hoarder, as nobody: one tiny ELF mapped executable 20,000 times (each mapping a
 * line of /proc/PID/maps: a read of them costs tens to hundreds of ms), then a child forked
 * every quarter second, each a new target with all those mappings, computing CRCs in libz
 * (a native frame to name) for 0.4 s. Its pid once mapped.
 */
static const char hoarder_source[] =
	"import ctypes, mmap, os, struct, sys, time, zlib\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"libc.mmap.restype = ctypes.c_void_p\n"
	"libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)\n"
	"elf = bytearray(4096)\n"
	"elf[0:64] = struct.pack('<4sBBBBB7xHHIQQQIHHHHHH', b'\\x7fELF', 2, 1, 1, 0, 0, 3, 62, 1, 0, 64, 0, 0, 64, 56, 1, 64, 0, 0)\n"
	"elf[64:120] = struct.pack('<IIQQQQQQ', 1, 5, 0, 0, 0, 4096, 4096, 4096)\n"
	"name = os.path.join(sys.argv[1], 'libhoard.so')\n"
	"with open(name, 'wb') as f: f.write(elf)\n"
	"fd = os.open(name, os.O_RDONLY)\n"
	"for _ in range(20000):\n"
	"    if libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, fd, 0) in (None, 2**64 - 1):\n"
	"        sys.exit('mmap: %d' % ctypes.get_errno())\n"
	"os.close(fd)\n"
	"data = b'h' * (1 << 20)\n"
	"def hoard_crc(seconds):\n"
	"    end = time.time() + seconds\n"
	"    while time.time() < end: zlib.crc32(data)\n"
	"print(os.getpid(), flush=True)\n"
	"while True:\n"
	"    child = os.fork()\n"
	"    if child == 0:\n"
	"        hoard_crc(0.4)\n"
	"        os._exit(0)\n"
	"    time.sleep(0.25)\n"
	"    os.waitpid(child, 0)\n";

/* The -v summary's maps counts of the symbolizer: asked of the maps thread, taken from it, read
 * on the draining thread. */
static bool read_symbolizer_maps(const char *log, uint64_t counts[3])
{
	char line[2048];
	FILE *file = fopen(log, "r");
	bool found = false;

	assert_non_null(file);
	while (!found && fgets(line, sizeof(line), file)) {
		const char *maps = strstr(line, "; maps: ");

		found = strncmp(line, "pybpfprof: parser worker: ", 26) == 0 && maps &&
			sscanf(maps, "; maps: %" SCNu64 " reads asked of the maps thread, %" SCNu64
				     " taken from it, %" SCNu64 " read on the draining thread",
			       &counts[0], &counts[1], &counts[2]) == 3;
	}
	fclose(file);
	return found;
}

static bool has_named_crc(const struct pf_sample *sample, const void *unused)
{
	(void)unused;
	return has_frame_named(sample, "hoard_crc") && has_frame_named(sample, "crc32_z");
}

/*
 * nobody's processes each map 20,000 files; they are profiled with their children. Every
 * child's maps are read on the maps thread, and the loop that drains the ring takes them from
 * there instead of reading each child's 20,000 lines itself (which held it some 200 ms a child).
 * The names do not suffer: the children's libz frames are named, their records waiting for
 * the read (the most loaded run here named 100%; half is asked).
 */
static void mapping_hoarders_are_read_off_the_drain(void **state)
{
	char dir[64], command[1024], profile[128], log[128], script[128], pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "-v", "-C", "-p", pid_text, "-d", "8", "-o", profile, NULL };
	uint64_t maps[3];
	size_t crc_samples, named;
	pid_t attacker_pid;
	FILE *attacker, *out;
	long peak;
	int status;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(profile, "%s/out.mojo", dir);
	FORMAT(log, "%s/profiler.log", dir);
	FORMAT(script, "%s/hoard.py", dir);
	out = fopen(script, "w");
	assert_non_null(out);
	assert_true(fputs(hoarder_source, out) >= 0);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(chmod(script, 0644), 0);
	/* raised, so that a loaded host still gives its children the CPU (and samples) to judge by */
	FORMAT(command, "exec setsid nice -n -10 setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 %s %s",
	       script, dir);
	attacker = test_popen_ready(command, &attacker_pid);
	FORMAT(pid_text, "%d", (int)attacker_pid);
	status = test_run_watching_peak_rss(argv, log, &peak);
	kill(-attacker_pid, SIGKILL);
	pclose(attacker);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	if (!read_symbolizer_maps(log, maps))
		fail_msg("no symbolizer maps counts in %s", log);
	crc_samples = samples_with_frame(profile, "hoard_crc");
	named = test_count_samples(profile, has_named_crc, NULL);
	print_message("maps: %" PRIu64 " asked of the maps thread, %" PRIu64 " taken, %" PRIu64
		      " read on the draining thread; %zu of %zu CRC samples named; peak RSS %ld KiB\n",
		      maps[0], maps[1], maps[2], named, crc_samples, peak);
	assert_int_equal(maps[2], 0);
	assert_true(maps[1] > 0);
	assert_true(crc_samples >= 100);
	assert_true(named * 2 >= crc_samples);
	assert_true(peak < PEAK_RSS_LIMIT_KIB);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sparse_tables_are_not_read),
		cmocka_unit_test(bad_file_stays_bad_when_touched),
		cmocka_unit_test(batch_costs_only_the_files_the_worker_dies_on),
		cmocka_unit_test(note_bomb_costs_the_profiler_nothing),
		cmocka_unit_test(sparse_files_cost_the_profiler_nothing),
		cmocka_unit_test(churning_mappers_leave_the_drain_free),
		cmocka_unit_test(mapping_hoarders_are_read_off_the_drain),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("test_hardening_discovery: needs root (the attacker runs as nobody)\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
