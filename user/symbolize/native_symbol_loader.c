// SPDX-License-Identifier: MIT
#include "symbolize/native_symbol_loader.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elf/debug_file.h"
#include "elf/minidebuginfo.h"
#include "elf/vdso.h"
#include "util/clock.h"
#include "util/thread.h"

struct native_symbol_loader {
	struct native_symbol_loader_options options;
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	struct work_queue jobs; /* at most NATIVE_SYMBOL_LOADER_MAX_QUEUED */
	struct native_symbol_job *done;
	bool started;
	pthread_t thread;
	pid_t worker_pid;
	struct native_symbol_loader_stats stats;
	/* the helper's own */
	struct parser_client *client;
	uint64_t debug_bytes_left;
};

int native_symbol_loader_new(const struct native_symbol_loader_options *options, struct native_symbol_loader **out)
{
	struct native_symbol_loader *loader = calloc(1, sizeof(*loader));
	int err;

	if (!loader)
		return -ENOMEM;
	loader->options = *options;
	loader->debug_bytes_left = options->debug_bytes;
	err = parser_client_new(&options->parser, &loader->client);
	if (err) {
		free(loader);
		return err;
	}
	pthread_mutex_init(&loader->lock, NULL);
	work_queue_init(&loader->jobs, NATIVE_SYMBOL_LOADER_MAX_QUEUED);
	pthread_cond_init(&loader->done_cond, NULL);
	*out = loader;
	return 0;
}

void native_symbol_job_free(struct native_symbol_job *job)
{
	if (!job)
		return;
	elf_symbols_free(&job->result.symbols);
	free(job->result.function_ranges);
	free(job->map.path);
	free(job);
}

static struct native_symbol_job *job_of(struct work_item *item)
{
	return WORK_QUEUE_ENTRY(item, struct native_symbol_job, queued);
}

static void free_jobs(struct native_symbol_job *job)
{
	while (job) {
		struct native_symbol_job *next = job->next;

		native_symbol_job_free(job);
		job = next;
	}
}

void native_symbol_loader_free(struct native_symbol_loader *loader)
{
	if (!loader)
		return;
	if (loader->started) {
		pthread_mutex_lock(&loader->lock);
		work_queue_close(&loader->jobs);
		pthread_mutex_unlock(&loader->lock);
		pthread_join(loader->thread, NULL);
	}
	for (struct work_item *item; (item = work_queue_pop(&loader->jobs));)
		native_symbol_job_free(job_of(item));
	free_jobs(loader->done);
	parser_client_free(loader->client);
	work_queue_destroy(&loader->jobs);
	pthread_cond_destroy(&loader->done_cond);
	pthread_mutex_destroy(&loader->lock);
	free(loader);
}

/* The worker's answer of one kind about fd, checked: 0 with *payload and *symbols, else the
 * request's error (a payload that does not check out: -ECHILD, as a worker that lied). */
static int ask(struct native_symbol_loader *loader, enum parser_request_kind kind, int fd, uint64_t arg,
	       void **payload, struct parser_symbols *symbols)
{
	size_t len;
	int err = parser_client_request(loader->client, kind, fd, arg, loader->options.reply_bytes, payload, &len);

	if (err)
		return err;
	if (parser_symbols_check(*payload, len, symbols)) {
		free(*payload);
		*payload = NULL;
		parser_client_distrust(loader->client);
		return -ECHILD;
	}
	return 0;
}

/* The answer's functions as a source (names copied out of the payload); false if none. */
static bool take_source(const struct parser_symbols *answer, struct elf_symbols_source *source)
{
	uint32_t count = answer->head->function_count;

	*source = (struct elf_symbols_source){ 0 };
	if (!count)
		return false;
	source->names = malloc(answer->head->names_len);
	source->functions = calloc(count, sizeof(*source->functions));
	if (!source->names || !source->functions) {
		free(source->names);
		free(source->functions);
		*source = (struct elf_symbols_source){ 0 };
		return false;
	}
	memcpy(source->names, answer->names, answer->head->names_len);
	for (uint32_t i = 0; i < count; i++) {
		const struct parser_function *function = &answer->functions[i];

		source->functions[i] = (struct elf_function){ function->addr, function->size,
							      source->names + function->name_offset };
	}
	source->count = count;
	return true;
}

static bool same_file(int left, int right)
{
	struct stat a, b;

	return !fstat(left, &a) && !fstat(right, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* One file's debug file search (debug_file_search's callbacks). */
struct candidate_search {
	struct native_symbol_loader *loader;
	const struct debug_identity *identity;
	int file_fd;
	struct elf_symbols_source *source;
	bool has_symbols;
};

/* The most of a debuglink candidate the worker may read for its CRC32 (it reads it whole);
 * used up from the run's budget. */
static uint64_t crc_allowance(struct native_symbol_loader *loader, int fd)
{
	struct stat info;
	uint64_t size;

	if (fstat(fd, &info))
		return 0;
	size = (uint64_t)info.st_size;
	if (size > loader->debug_bytes_left)
		return 0;
	loader->debug_bytes_left -= size;
	return size;
}

static bool try_candidate(void *context, pid_t root_pid, const char *path, bool by_build_id)
{
	struct candidate_search *search = context;
	struct parser_symbols answer;
	void *payload = NULL;
	bool matched;
	int fd = elf_file_candidate_fd(root_pid, path, by_build_id);
	int err;

	if (fd < 0) {
		if (fd != -ENOENT && fd != -ENOTDIR && fd != -ESRCH) {
			pthread_mutex_lock(&search->loader->lock);
			search->loader->stats.candidates_refused++;
			pthread_mutex_unlock(&search->loader->lock);
		}
		return false;
	}
	if (same_file(fd, search->file_fd)) {
		close(fd);
		return false;
	}
	err = ask(search->loader, PARSER_REQUEST_DEBUG_SYMBOLS, fd,
		  by_build_id ? 0 : crc_allowance(search->loader, fd), &payload, &answer);
	close(fd);
	if (err == -ECHILD) {
		pthread_mutex_lock(&search->loader->lock);
		search->loader->stats.candidates_lost++;
		pthread_mutex_unlock(&search->loader->lock);
	}
	if (err)
		return false;
	matched = debug_file_matches(search->identity, answer.head->build_id, answer.head->build_id_len, by_build_id,
				     answer.head->crc_known ? &answer.head->crc : NULL);
	if (matched)
		search->has_symbols = answer.head->has_symtab && take_source(&answer, search->source);
	free(payload);
	return matched;
}

static void identity_of(const struct parser_symbols *answer, struct debug_identity *identity)
{
	*identity = (struct debug_identity){ .build_id_len = answer->head->build_id_len };
	memcpy(identity->build_id, answer->head->build_id, answer->head->build_id_len);
	if (answer->head->has_debuglink) {
		identity->has_link = true;
		identity->link_crc = answer->head->debuglink_crc;
		snprintf(identity->link_name, sizeof(identity->link_name), "%s", answer->head->debuglink);
	}
}

/* The MiniDebugInfo's functions, within what the run may still expand. */
static bool read_minidebuginfo(struct native_symbol_loader *loader, int fd, struct elf_symbols_source *source)
{
	uint64_t allowed = loader->debug_bytes_left < MINIDEBUGINFO_MAX_BYTES ? loader->debug_bytes_left
									     : MINIDEBUGINFO_MAX_BYTES;
	struct parser_symbols answer;
	void *payload = NULL;
	bool found;

	if (!allowed || ask(loader, PARSER_REQUEST_MINIDEBUGINFO, fd, allowed, &payload, &answer))
		return false;
	loader->debug_bytes_left -= answer.head->expanded_bytes < allowed ? answer.head->expanded_bytes : allowed;
	found = take_source(&answer, source);
	free(payload);
	return found;
}

/* Where the file's own table leaves its static functions out: a debug file's, else MiniDebugInfo's. */
static bool read_debug_symbols(struct native_symbol_loader *loader, const struct native_symbol_job *job, int fd,
			       const struct parser_symbols *own, struct elf_symbols_source *source)
{
	struct debug_identity identity;
	struct debug_file_place place = { .pid = job->pid, .path_in_target = job->map.path,
					  .debug_dir = job->debug_dir };
	struct candidate_search search = { .loader = loader, .identity = &identity, .file_fd = fd, .source = source };

	identity_of(own, &identity);
	if ((identity.build_id_len || identity.has_link) && debug_file_search(&identity, &place, try_candidate, &search))
		return search.has_symbols;
	return read_minidebuginfo(loader, fd, source);
}

/* Whether ranges (count of them, from the worker) are sorted by start, each not ending before it starts. */
static bool function_ranges_valid(const struct parser_function_range *ranges, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (ranges[i].end < ranges[i].start || (i && ranges[i].start < ranges[i - 1].start))
			return false;
	return true;
}

/* Where a stripped file's functions begin and end, by its FDEs (none is no error). */
static void read_function_ranges(struct native_symbol_loader *loader, int fd, struct native_symbols *result)
{
	const uint32_t budget = (uint32_t)(sizeof(struct parser_unwind_head) +
					   (size_t)UNWIND_TABLE_MAX_ROWS * sizeof(struct parser_function_range));
	const struct parser_function_range *ranges;
	struct parser_unwind_head head = { 0 };
	void *payload = NULL;
	size_t len;

	if (parser_client_request(loader->client, PARSER_REQUEST_FUNCTION_RANGES, fd, 0, budget, &payload, &len))
		return;
	if (len >= sizeof(head))
		memcpy(&head, payload, sizeof(head));
	/* malloc's alignment and an 8-byte head: the ranges are aligned */
	ranges = (const struct parser_function_range *)((const char *)payload + sizeof(head));
	if (len < sizeof(head) || len != sizeof(head) + (size_t)head.row_count * sizeof(*ranges) ||
	    !function_ranges_valid(ranges, head.row_count)) {
		parser_client_distrust(loader->client);
		free(payload);
		return;
	}
	result->function_ranges = head.row_count ? calloc(head.row_count, sizeof(*result->function_ranges)) : NULL;
	for (uint32_t i = 0; result->function_ranges && i < head.row_count; i++)
		result->function_ranges[i] = (struct unwind_function_range){ ranges[i].start, ranges[i].end };
	result->function_range_count = result->function_ranges ? head.row_count : 0;
	free(payload);
}

static int file_fd(const struct native_symbol_job *job)
{
	int fd;

	if (!job->vdso)
		return elf_file_map_fd(job->pid, &job->map);
	fd = vdso_image_fd();
	return fd < 0 ? fd : dup(fd);
}

static int load(struct native_symbol_loader *loader, struct native_symbol_job *job)
{
	struct elf_symbols_source sources[ELF_SYMBOLS_MAX_SOURCES];
	struct parser_symbols own;
	void *payload = NULL;
	int source_count = 0, err;
	int fd = file_fd(job);

	if (fd < 0)
		return -ENOENT;
	err = ask(loader, PARSER_REQUEST_FILE_SYMBOLS, fd, 0, &payload, &own);
	if (err) {
		close(fd);
		return err;
	}
	job->result.segment_count = own.head->segment_count;
	for (uint32_t i = 0; i < own.head->segment_count; i++)
		job->result.segments[i] = (struct elf_load_segment){ own.segments[i].vaddr, own.segments[i].offset,
								     own.segments[i].filesz };
	source_count += take_source(&own, &sources[source_count]);
	/* A file with its .symtab names its static functions already: nothing else is read. */
	if (!own.head->has_symtab && !job->vdso && read_debug_symbols(loader, job, fd, &own, &sources[source_count]))
		source_count++;
	if (!own.head->has_symtab)
		read_function_ranges(loader, fd, &job->result);
	free(payload);
	close(fd);
	return elf_symbols_merge(&job->result.symbols, sources, source_count);
}

static struct native_symbol_job *next_job(struct native_symbol_loader *loader)
{
	struct native_symbol_job *job = NULL;

	pthread_mutex_lock(&loader->lock);
	if (work_queue_wait(&loader->jobs, &loader->lock))
		job = job_of(work_queue_pop(&loader->jobs));
	pthread_mutex_unlock(&loader->lock);
	return job;
}

static void finish(struct native_symbol_loader *loader, struct native_symbol_job *job)
{
	pthread_mutex_lock(&loader->lock);
	if (!job->status)
		loader->stats.files_loaded++;
	else if (job->status == -ECHILD || job->status == -E2BIG || job->status == -ENOMEM)
		loader->stats.files_bad++;
	parser_client_stats(loader->client, &loader->stats.parser);
	loader->worker_pid = parser_client_worker_pid(loader->client);
	job->next = loader->done;
	loader->done = job;
	pthread_cond_broadcast(&loader->done_cond);
	pthread_mutex_unlock(&loader->lock);
}

static void *run(void *arg)
{
	struct native_symbol_loader *loader = arg;
	struct native_symbol_job *job;

	/* the worker starts while the first files are being found */
	parser_client_prepare(loader->client);
	pthread_mutex_lock(&loader->lock);
	loader->worker_pid = parser_client_worker_pid(loader->client);
	parser_client_stats(loader->client, &loader->stats.parser);
	pthread_mutex_unlock(&loader->lock);
	while ((job = next_job(loader))) {
		job->status = load(loader, job);
		finish(loader, job);
	}
	return NULL;
}

/* The helper thread, started once; the caller holds the lock. */
static int start_locked(struct native_symbol_loader *loader)
{
	int err = 0;

	if (!loader->started) {
		err = thread_start_without_signals(&loader->thread, run, loader);
		loader->started = !err;
	}
	return err;
}

int native_symbol_loader_start(struct native_symbol_loader *loader)
{
	int err;

	pthread_mutex_lock(&loader->lock);
	err = start_locked(loader);
	pthread_mutex_unlock(&loader->lock);
	return err;
}

int native_symbol_loader_submit(struct native_symbol_loader *loader, struct native_symbol_job *job)
{
	int err;

	pthread_mutex_lock(&loader->lock);
	err = start_locked(loader);
	if (!err)
		err = work_queue_push(&loader->jobs, &job->queued);
	pthread_mutex_unlock(&loader->lock);
	return err;
}

struct native_symbol_job *native_symbol_loader_take_done(struct native_symbol_loader *loader, uint64_t deadline_ms)
{
	struct native_symbol_job *done;

	pthread_mutex_lock(&loader->lock);
	while (!loader->done && loader->started) {
		uint64_t now = clock_monotonic_ms();
		struct timespec until;

		if (now >= deadline_ms)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)((deadline_ms - now) / 1000);
		until.tv_nsec += (long)((deadline_ms - now) % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&loader->done_cond, &loader->lock, &until);
	}
	done = loader->done;
	loader->done = NULL;
	pthread_mutex_unlock(&loader->lock);
	return done;
}

void native_symbol_loader_stats(struct native_symbol_loader *loader, struct native_symbol_loader_stats *out)
{
	pthread_mutex_lock(&loader->lock);
	*out = loader->stats;
	pthread_mutex_unlock(&loader->lock);
}

pid_t native_symbol_loader_worker_pid(struct native_symbol_loader *loader)
{
	pid_t pid;

	pthread_mutex_lock(&loader->lock);
	pid = loader->worker_pid;
	pthread_mutex_unlock(&loader->lock);
	return pid;
}
