/* SPDX-License-Identifier: MIT */
/*
 * Root's side of the parser worker (parser_worker.h, doc/security.md): starts it (our own
 * binary again, with the hidden command), sends it one request at a time with the descriptors
 * it is about (one, or a batch of files each answered on its own), and reads each answer
 * within a byte budget and a time budget. A worker that dies (a crash, its memory limit, its
 * seccomp filter) or overruns the time budget is killed and reaped;
 * the request fails with -ECHILD (that file is bad: the caller does not ask again), and the
 * next request starts a fresh worker. Not thread-safe: one thread owns a client.
 */
#ifndef PYBPFPROF_PARSER_CLIENT_H
#define PYBPFPROF_PARSER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "parser/parser_protocol.h"

/* The worker's address space (RLIMIT_AS): the largest file it parses is a MiniDebugInfo of
 * 64 MiB with an xz dictionary of up to 80 MiB, on top of its own mappings (about 40 MiB). */
#define PARSER_CLIENT_DEFAULT_MEMORY ((uint64_t)256 << 20)
/* What one request may take before the worker is killed: libpython takes some 20 ms, and a
 * debug file's CRC32 of 512 MiB about a second. */
#define PARSER_CLIENT_DEFAULT_TIMEOUT_MS 5000
/* How long a worker may take to start and say it is ready (whatever a request's budget). */
#define PARSER_CLIENT_START_TIMEOUT_MS 5000
/* Starts that fail in a row (no binary to run, no uid free) before the client stops trying. */
#define PARSER_CLIENT_MAX_START_FAILURES 3

struct parser_client_options {
	const char *executable; /* the pybpfprof binary; NULL: parser_client_set_default_executable's */
	uint64_t memory_bytes;  /* 0: PARSER_CLIENT_DEFAULT_MEMORY */
	unsigned timeout_ms;    /* 0: PARSER_CLIENT_DEFAULT_TIMEOUT_MS */
	bool selftest;          /* tests only: the worker accepts the PARSER_REQUEST_SELFTEST_ kinds */
};

struct parser_client_stats {
	uint64_t requests;
	uint64_t worker_starts;
	uint64_t start_failures;
	uint64_t lost_files;   /* requests whose worker died, overran or answered nonsense */
	uint64_t timeouts;     /* of which: overran the time budget */
	uint64_t out_of_memory; /* of which: hit its memory limit (and said so, or exited for it) */
};

struct parser_client;

/* Where the worker's binary is for clients that name none: pybpfprof's main sets /proc/self/exe;
 * unset, no worker is started (and no file parsed). Kept, not copied. */
void parser_client_set_default_executable(const char *path);

/* 0 or -ENOMEM; the worker starts at the first request. */
int parser_client_new(const struct parser_client_options *options, struct parser_client **out);
void parser_client_free(struct parser_client *client);

/*
 * One request about fd (not taken: the caller closes it; -1: none). On 0, *payload (malloc'd,
 * at most reply_budget bytes, unchecked: the caller checks it as its kind says) and *len.
 * Else the worker's own negative errno (-E2BIG: the answer is past reply_budget; -ENOMEM: past
 * its memory limit), -ECHILD (the worker died, overran or answered nonsense: the file is bad),
 * -ENOSYS (no worker can be started).
 */
int parser_client_request(struct parser_client *client, enum parser_request_kind kind, int fd, uint64_t arg,
			  uint32_t reply_budget, void **payload, size_t *len);

/* One file's answer in a request about several (parser_client_request_each). */
struct parser_file_answer {
	int status;    /* as parser_client_request's */
	void *payload; /* malloc'd, unchecked, at status 0 */
	size_t len;
};

/*
 * One request (a kind about several files, PARSER_REQUEST_PY_RUNTIMES) about count files (fds,
 * not taken; 1 to PARSER_MAX_BATCH_FILES), each answered on its own within reply_budget
 * bytes and the time budget (counted per file, from the answer before). *answered: how many of
 * answers, in order, are set; those past it were not asked (the worker died on the last one
 * answered, which reads -ECHILD: ask them again). 0, or -ENOSYS (no worker can be started:
 * none answered), -EINVAL (count).
 */
int parser_client_request_each(struct parser_client *client, enum parser_request_kind kind, const int *fds,
			       size_t count, uint32_t reply_budget, struct parser_file_answer *answers,
			       size_t *answered);

/* The last answer did not check out (the caller's check of its payload): the worker that gave
 * it is killed and replaced at the next request, and the file counted as lost. */
void parser_client_distrust(struct parser_client *client);

/* Starts a worker now if none runs (the first request then does not wait for it). 0 or -ENOSYS. */
int parser_client_prepare(struct parser_client *client);

/* The running worker's pid, 0 when none runs. */
pid_t parser_client_worker_pid(const struct parser_client *client);
/* The worker's uid (chosen at its first start; 0 before). */
uid_t parser_client_worker_uid(const struct parser_client *client);
void parser_client_stats(const struct parser_client *client, struct parser_client_stats *out);

#endif
