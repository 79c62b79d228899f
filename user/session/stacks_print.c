// SPDX-License-Identifier: MIT
/* The threads of one wall pass, printed for a reader (text) or a program (JSON). */
#include "session/stacks_print.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/array.h"
#include "util/text_quote.h"

/* A task name as JSON gives it: ASYNC_TASKS_NAME_CHARS characters of UTF-8 at most. */
#define ASYNC_NAME_JSON_MAX (256 * 4 + 1)

/* A comm is at most 15 bytes (TASK_COMM_LEN - 1); threading's name is cut to fit. */
#define THREAD_NAME_MAX 64

struct stacks_thread {
	uint64_t tid;
	uint32_t status;           /* PF_STATUS_* */
	char kernel_state;         /* the kernel's state letter when its stack was taken, '?' if unknown */
	bool on_a_cpu;             /* running on a CPU then (its kernel stack unreadable) */
	char name[THREAD_NAME_MAX]; /* its name (threading's, or its comm), "" if unread */
	size_t first_frame;        /* into frames, root first as the sample had them */
	size_t frame_count;
};

/* An asyncio task of a thread's event loop. */
struct stacks_task {
	uint64_t tid, address;
	uint64_t awaiters[STACKS_PRINT_AWAITERS_MAX]; /* the tasks awaiting it, the sample stacks' first */
	size_t awaiter_count;
	const char *name;          /* "<task NAME>" */
	bool running;
	size_t first_frame, frame_count; /* into frames: where it is suspended, root first */
};

/* A task tree deeper than this is printed flat below it (a hostile awaited_by chain). */
#define TASK_TREE_DEPTH_MAX 64

struct stacks_print {
	pid_t pid;
	struct stacks_task *tasks;
	size_t task_count, task_capacity;
	struct pf_python_version version;
	struct stacks_thread *threads;
	size_t thread_count, thread_capacity;
	struct pf_frame *frames;
	size_t frame_count, frame_capacity;
};

int stacks_print_new(struct stacks_print **out, pid_t pid, const struct pf_python_version *version)
{
	struct stacks_print *print = calloc(1, sizeof(*print));

	*out = print;
	if (!print)
		return -ENOMEM;
	print->pid = pid;
	print->version = *version;
	return 0;
}

void stacks_print_free(struct stacks_print *print)
{
	if (!print)
		return;
	free(print->threads);
	free(print->tasks);
	free(print->frames);
	free(print);
}

/* The whole of a small /proc file into buffer, NUL-terminated; its length or -errno. */
static ssize_t read_task_file(pid_t pid, uint64_t tid, const char *name, char *buffer, size_t size)
{
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%" PRIu64 "/%s", (int)pid, tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buffer, size - 1);
	if (got < 0)
		got = -errno;
	close(fd);
	buffer[got > 0 ? got : 0] = '\0';
	return got;
}

static void read_thread_name(pid_t pid, struct stacks_thread *thread)
{
	ssize_t len = read_task_file(pid, thread->tid, "comm", thread->name, sizeof(thread->name));

	if (len > 0 && thread->name[len - 1] == '\n')
		thread->name[len - 1] = '\0';
}

int stacks_print_add(struct stacks_print *print, const struct pf_sample *sample)
{
	struct stacks_thread *thread;

	if (ARRAY_RESERVE(print->threads, print->thread_capacity, print->thread_count + 1) ||
	    ARRAY_RESERVE(print->frames, print->frame_capacity, print->frame_count + sample->frame_count))
		return -ENOMEM;
	thread = &print->threads[print->thread_count++];
	/* The state of the moment the stack was taken: /proc, read later, may say another. */
	*thread = (struct stacks_thread){ .tid = sample->tid, .status = sample->status,
					  .kernel_state = sample->task_state ? sample->task_state : '?',
					  .on_a_cpu = sample->on_a_cpu,
					  .first_frame = print->frame_count,
					  .frame_count = sample->frame_count };
	memcpy(print->frames + print->frame_count, sample->frames, sample->frame_count * sizeof(*sample->frames));
	print->frame_count += sample->frame_count;
	if (sample->thread_name && sample->thread_name[0])
		snprintf(thread->name, sizeof(thread->name), "%s", sample->thread_name);
	else
		read_thread_name(print->pid, thread);
	return 0;
}

int stacks_print_add_task(struct stacks_print *print, uint64_t tid, uint64_t address, const uint64_t *awaiters,
			  size_t awaiter_count, const char *name, const struct pf_frame *frames, size_t frame_count,
			  bool running)
{
	struct stacks_task *task;

	if (ARRAY_RESERVE(print->tasks, print->task_capacity, print->task_count + 1) ||
	    ARRAY_RESERVE(print->frames, print->frame_capacity, print->frame_count + frame_count))
		return -ENOMEM;
	task = &print->tasks[print->task_count++];
	*task = (struct stacks_task){
		.tid = tid, .address = address, .name = name, .running = running,
		.first_frame = print->frame_count, .frame_count = frame_count,
		.awaiter_count = awaiter_count < STACKS_PRINT_AWAITERS_MAX ? awaiter_count : STACKS_PRINT_AWAITERS_MAX,
	};
	memcpy(task->awaiters, awaiters, task->awaiter_count * sizeof(*awaiters));
	memcpy(print->frames + print->frame_count, frames, frame_count * sizeof(*frames));
	print->frame_count += frame_count;
	return 0;
}

size_t stacks_print_thread_count(const struct stacks_print *print)
{
	return print->thread_count;
}

static int compare_tids(const void *a, const void *b)
{
	const struct stacks_thread *left = a, *right = b;

	return left->tid < right->tid ? -1 : left->tid > right->tid;
}

static const char *kernel_state_name(char letter)
{
	switch (letter) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "tracing stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	default: return "unknown";
	}
}

/* Running: on a CPU, or runnable (woken, or preempted) and waiting for one. */
static bool thread_running(const struct stacks_thread *thread)
{
	return (thread->status & PF_STATUS_ON_CPU) != 0;
}

/* What a running thread was doing: on a CPU, or runnable and waiting for one (its kernel stack,
 * if any, is where it will go on from). */
static const char *running_how(const struct stacks_thread *thread)
{
	return thread->on_a_cpu || thread->kernel_state == '?' ? "running" : "runnable, waiting for a CPU";
}

static const char *frame_kind_name(enum pf_frame_kind kind)
{
	switch (kind) {
	case PF_FRAME_PYTHON: return "python";
	case PF_FRAME_NATIVE: return "native";
	case PF_FRAME_KERNEL: return "kernel";
	default: return "invalid";
	}
}

/* A library by its file name, as py-spy shows it: the directory tells a reader little. */
static const char *file_base_name(const char *file)
{
	const char *slash = strrchr(file, '/');

	return slash && slash[1] ? slash + 1 : file;
}

/* py-spy's forms: `function (file:line)`, `function (library)`, `function [kernel]`. */
static void write_text_frame(FILE *out, const struct pf_frame *frame)
{
	fputs("    ", out);
	switch (frame->kind) {
	case PF_FRAME_PYTHON:
		fput_escaped(out, frame->name);
		fputs(" (", out);
		fput_escaped(out, frame->file);
		if (frame->line >= 0)
			fprintf(out, ":%" PRId32, frame->line);
		fputs(")\n", out);
		break;
	case PF_FRAME_NATIVE:
		fput_escaped(out, frame->name);
		/* A function no symbol names already reads `[library+0xoffset]`. */
		if (frame->file[0] && frame->name[0] != '[') {
			fputs(" (", out);
			fput_escaped(out, file_base_name(frame->file));
			fputc(')', out);
		}
		fputc('\n', out);
		break;
	case PF_FRAME_KERNEL:
		fput_escaped(out, frame->name);
		fputs(" [kernel]\n", out);
		break;
	default:
		fputs("(the stack could not be read further)\n", out);
		break;
	}
}

static void write_text_thread(const struct stacks_print *print, FILE *out, const struct stacks_thread *thread)
{
	fprintf(out, "\nThread %" PRIu64 " ", thread->tid);
	fput_quoted_cstr(out, thread->name);
	if (thread_running(thread))
		fprintf(out, " (%s", running_how(thread));
	else
		fprintf(out, " (idle: %c %s", thread->kernel_state, kernel_state_name(thread->kernel_state));
	if (thread->status & PF_STATUS_HAS_GIL)
		fputs(", holds the GIL", out);
	if (thread->status & PF_STATUS_UNKNOWN)
		fputs(", no Python thread state", out);
	fputs(")\n", out);
	for (size_t i = thread->frame_count; i-- > 0;)
		write_text_frame(out, &print->frames[thread->first_frame + i]);
}

/* The bare NAME of a task's "<task NAME>", cut to fit name. */
static void task_bare_name(const char *shown, char *name, size_t size)
{
	size_t len = strlen(shown);

	if (len >= 7 && !strncmp(shown, "<task ", 6) && shown[len - 1] == '>')
		snprintf(name, size, "%.*s", (int)(len - 7), shown + 6);
	else
		snprintf(name, size, "%s", shown);
}

/* A task's name as text: the target chose it, control bytes and all. */
static void fput_task_name(FILE *out, const char *shown)
{
	char name[ASYNC_NAME_JSON_MAX];

	task_bare_name(shown, name, sizeof(name));
	fput_escaped(out, name);
}

/* The listed task of tid at address, NULL if none. */
static const struct stacks_task *listed_task(const struct stacks_print *print, uint64_t tid, uint64_t address)
{
	for (size_t i = 0; i < print->task_count; i++)
		if (print->tasks[i].tid == tid && print->tasks[i].address == address)
			return &print->tasks[i];
	return NULL;
}

/* The first task awaiting task that is listed for its thread (its tree is printed in full
 * there), NULL if none: a root. */
static const struct stacks_task *first_listed_awaiter(const struct stacks_print *print, const struct stacks_task *task)
{
	for (size_t i = 0; i < task->awaiter_count; i++) {
		const struct stacks_task *awaiter = listed_task(print, task->tid, task->awaiters[i]);

		if (awaiter)
			return awaiter;
	}
	return NULL;
}

/* Whether task awaits child. */
static bool awaits(const struct stacks_task *task, const struct stacks_task *child)
{
	for (size_t i = 0; i < child->awaiter_count; i++)
		if (child->awaiters[i] == task->address)
			return true;
	return false;
}

static void write_text_task(const struct stacks_print *print, FILE *out, const struct stacks_task *task,
			    unsigned depth);

/* A task awaited by several, under one that is not its first listed awaiter: one line naming
 * where its tree is (in full under each, a hostile web of shared tasks would print without end). */
static void write_text_shared_task(FILE *out, const struct stacks_task *task, const struct stacks_task *first,
				   unsigned depth)
{
	unsigned indent = 4 + 4 * (depth < TASK_TREE_DEPTH_MAX ? depth : TASK_TREE_DEPTH_MAX);

	fprintf(out, "%*s(T) ", indent, "");
	fput_task_name(out, task->name);
	fprintf(out, " (shared: awaited by %zu tasks, shown under ", task->awaiter_count);
	fput_task_name(out, first->name);
	fputs(")\n", out);
}

/* The tasks task awaits, each under it (a shared one in full under its first listed awaiter). */
static void write_text_children(const struct stacks_print *print, FILE *out, const struct stacks_task *task,
				unsigned depth)
{
	for (size_t i = 0; i < print->task_count; i++) {
		const struct stacks_task *child = &print->tasks[i], *first;

		if (child->tid != task->tid || child == task || !awaits(task, child))
			continue;
		first = first_listed_awaiter(print, child);
		if (first == task)
			write_text_task(print, out, child, depth + 1);
		else if (first)
			write_text_shared_task(out, child, first, depth + 1);
	}
}

static void write_text_task(const struct stacks_print *print, FILE *out, const struct stacks_task *task,
			    unsigned depth)
{
	unsigned indent = 4 + 4 * (depth < TASK_TREE_DEPTH_MAX ? depth : TASK_TREE_DEPTH_MAX);

	fprintf(out, "%*s(T) ", indent, "");
	fput_task_name(out, task->name);
	if (task->running)
		fputs(" (running)", out);
	if (task->awaiter_count > 1)
		fprintf(out, " (shared: awaited by %zu tasks)", task->awaiter_count);
	fputc('\n', out);
	for (size_t i = 0; i < task->frame_count; i++) {
		fprintf(out, "%*s", indent + 4, "");
		write_text_frame(out, &print->frames[task->first_frame + i]);
	}
	if (depth < TASK_TREE_DEPTH_MAX)
		write_text_children(print, out, task, depth);
}

/* The tree of the thread's tasks: those awaited by none of them at its roots. */
static void write_text_tasks(const struct stacks_print *print, FILE *out, const struct stacks_thread *thread)
{
	bool any = false;

	for (size_t i = 0; i < print->task_count; i++) {
		const struct stacks_task *task = &print->tasks[i];

		if (task->tid != thread->tid || first_listed_awaiter(print, task))
			continue;
		if (!any)
			fputs("  asyncio tasks (awaited by the task above them, suspended where its frames say):\n", out);
		any = true;
		write_text_task(print, out, task, 0);
	}
}

static void write_text(const struct stacks_print *print, FILE *out)
{
	fprintf(out, "Process %d: Python %u.%u.%u\n", (int)print->pid, print->version.major, print->version.minor,
		print->version.micro);
	for (size_t i = 0; i < print->thread_count; i++) {
		write_text_thread(print, out, &print->threads[i]);
		write_text_tasks(print, out, &print->threads[i]);
	}
}

static void write_json_frame(FILE *out, const struct pf_frame *frame)
{
	fputs("{\"kind\": ", out);
	fput_json_string(out, frame_kind_name(frame->kind));
	fputs(", \"name\": ", out);
	fput_json_string(out, frame->name);
	fputs(", \"file\": ", out);
	fput_json_string(out, frame->file);
	if (frame->line >= 0)
		fprintf(out, ", \"line\": %" PRId32 "}", frame->line);
	else
		fputs(", \"line\": null}", out);
}

static void write_json_thread(const struct stacks_print *print, FILE *out, const struct stacks_thread *thread)
{
	char state[2] = { thread->kernel_state, '\0' };

	fprintf(out, "{\"tid\": %" PRIu64 ", \"name\": ", thread->tid);
	fput_json_string(out, thread->name);
	fprintf(out, ", \"state\": \"%s\", \"on_cpu\": %s, \"kernel_state\": ",
		thread_running(thread) ? "running" : "idle", thread_running(thread) && thread->on_a_cpu ? "true" : "false");
	fput_json_string(out, state);
	fprintf(out, ", \"gil\": %s, \"python_thread\": %s, \"frames\": [",
		thread->status & PF_STATUS_HAS_GIL ? "true" : "false",
		thread->status & PF_STATUS_UNKNOWN ? "false" : "true");
	for (size_t i = thread->frame_count; i-- > 0;) {
		write_json_frame(out, &print->frames[thread->first_frame + i]);
		fputs(i ? ", " : "", out);
	}
	fputs("]}", out);
}

static void write_json_task(const struct stacks_print *print, FILE *out, const struct stacks_task *task)
{
	char name[ASYNC_NAME_JSON_MAX];

	task_bare_name(task->name, name, sizeof(name));
	fprintf(out, "{\"address\": \"0x%" PRIx64 "\", \"thread\": %" PRIu64 ", \"name\": ", task->address, task->tid);
	fput_json_string(out, name);
	if (task->awaiter_count)
		fprintf(out, ", \"awaited_by\": \"0x%" PRIx64 "\"", task->awaiters[0]);
	else
		fputs(", \"awaited_by\": null", out);
	/* every task awaiting it: awaited_by is the first, the one its samples' stacks go up through */
	fputs(", \"awaited_by_all\": [", out);
	for (size_t i = 0; i < task->awaiter_count; i++)
		fprintf(out, "%s\"0x%" PRIx64 "\"", i ? ", " : "", task->awaiters[i]);
	fputc(']', out);
	fprintf(out, ", \"running\": %s, \"frames\": [", task->running ? "true" : "false");
	for (size_t i = 0; i < task->frame_count; i++) {
		write_json_frame(out, &print->frames[task->first_frame + i]);
		fputs(i + 1 < task->frame_count ? ", " : "", out);
	}
	fputs("]}", out);
}

static void write_json(const struct stacks_print *print, FILE *out)
{
	fprintf(out, "{\"pid\": %d, \"python\": \"%u.%u.%u\", \"threads\": [", (int)print->pid,
		print->version.major, print->version.minor, print->version.micro);
	for (size_t i = 0; i < print->thread_count; i++) {
		fputs(i ? ",\n  " : "\n  ", out);
		write_json_thread(print, out, &print->threads[i]);
	}
	/* asyncio tasks, each with the one awaiting it: a tree for whoever reads them */
	fputs("\n], \"tasks\": [", out);
	for (size_t i = 0; i < print->task_count; i++) {
		fputs(i ? ",\n  " : "\n  ", out);
		write_json_task(print, out, &print->tasks[i]);
	}
	fputs("\n]}\n", out);
}

int stacks_print_write(struct stacks_print *print, FILE *out, bool json)
{
	qsort(print->threads, print->thread_count, sizeof(*print->threads), compare_tids);
	if (json)
		write_json(print, out);
	else
		write_text(print, out);
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}
