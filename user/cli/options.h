/* SPDX-License-Identifier: MIT */
/*
 * What the commands' option values mean, parsed in one place so that `-p 1,2`, `-F 1k`, `-d 2s`
 * or `--mode wall` read alike in record, top and stacks; the nearest option or command for a
 * mistyped one; whether two outputs name one file. Each parser returns 0 or -EINVAL (-E2BIG:
 * more than the caller has room for) and leaves the message, which names the option, to the
 * caller.
 */
#ifndef PYBPFPROF_CLI_OPTIONS_H
#define PYBPFPROF_CLI_OPTIONS_H

#include "session/session.h"

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* -h as well as argp's -? and --help, in every command's table; its key is handled by
 * argp_state_help(state, stdout, ARGP_HELP_STD_HELP). */
#define OPTIONS_HELP { "help", 'h', NULL, 0, "Give this help list", -1 }

/*
 * Where an error line of a command begins (doc/internals.md, "Error messages"): "pybpfprof: ",
 * then "CMD: " when program, the argv[0] a command gives argp, is "pybpfprof CMD".
 */
void options_print_prefix(FILE *out, const char *program);

/*
 * argp_error in that convention: "pybpfprof: CMD: MESSAGE", then argp's line naming --help,
 * and the exit with argp_err_exit_status (unless the parse has ARGP_NO_EXIT).
 */
__attribute__((format(printf, 2, 3))) void options_usage_error(const struct argp_state *state,
								const char *format, ...);

/* The highest -F: samples per second per CPU. */
#define OPTIONS_MAX_FREQUENCY_HZ 100000

/* A decimal number from min to max, digits only (no sign, no blanks). */
int options_parse_count(const char *text, unsigned long long min, unsigned long long max,
			unsigned long long *value);

/* A process id: 1 to INT_MAX. */
int options_parse_pid(const char *text, pid_t *pid);

/* PID[,PID...] appended to pids (*count of them already there, room for max). On -EINVAL,
 * *bad and *bad_len the item that is not a process id. */
int options_parse_pid_list(const char *list, pid_t *pids, size_t *count, size_t max, const char **bad,
			   int *bad_len);

/* cpu, wall or gil (SESSION_MODE_STACKS is the stacks command's own, not a --mode). */
int options_parse_mode(const char *text, enum session_mode *mode);
/* The --mode that names mode ("exception"; session_mode_name says Austin's, "cpu"). */
const char *options_mode_name(enum session_mode mode);
/* "cpu, wall or gil": every --mode, for messages. */
const char *options_mode_names(void);

/* --event and --event-period, record's and top's alike. */
#define OPTIONS_EVENT_HELP                                                                                         \
	"Sample on a kernel event instead of the cpu-clock, one in PERIOD occurrences: page-faults, minor-faults, " \
	"major-faults (weighed in bytes: page size x period), context-switches, cpu-migrations, alignment-faults, "   \
	"emulation-faults, or, where the machine has a PMU, cycles, instructions, cache-references, cache-misses, "   \
	"branches, branch-misses, ... (counted); off-cpu: every block of a thread, weighed in the nanoseconds it "     \
	"waited (off-cpu:MIN_US: only blocks of at least MIN_US microseconds); syscall:NAME[,NAME...]: every call "   \
	"of a target thread to these system calls, counted (syscall:NAME:bytes: weighed in the bytes it returned, "   \
	"read/write/send/recv kin; syscall:NAME:latency: in the nanoseconds it took; a name only i386 has, such as "  \
	"socketcall or mmap2, matches only 32-bit callers); block-io: every block I/O a "                            \
	"target thread issues, weighed in bytes"
#define OPTIONS_EVENT_PERIOD_HELP                                                                                 \
	"With --event: one sample every N occurrences (perf's -c; default: 16 page faults, every major fault and "  \
	"scheduling event, 10000 cache or branch misses, 10M cycles, every call or block I/O; syscall and "         \
	"block-io: one in N on average, at random, each weighing N; not for off-cpu)"

/* What the command line said about the event beyond what session_options keeps. */
struct options_event_seen {
	bool period_given_twice; /* --event NAME:PERIOD and --event-period both */
	bool period_option;      /* --event-period given */
	bool rate_given;         /* -F or -i: set by the caller before options_event_clash */
};

/*
 * --event NAME[:PERIOD] (perf's names; off-cpu[:MIN_US]; syscall:NAME[,NAME...][:bytes|:latency];
 * block-io) and --event-period N into session's event, event_period and syscalls. Unlike the
 * parsers above these say their many mistakes themselves, through argp (one line, the usage
 * status), as they are argp option handlers; 0 otherwise.
 */
int options_parse_event(char *arg, struct session_options *session, struct options_event_seen *seen,
			struct argp_state *state);
int options_parse_event_period(const char *arg, struct session_options *session, struct options_event_seen *seen,
			       struct argp_state *state);
/* Once all options are parsed: NULL, or the line saying which option does not go with the event
 * (an event samples on occurrences, not on a clock or in another mode). */
const char *options_event_clash(const struct session_options *session, const struct options_event_seen *seen);

/* A rate: 1000, 1k, 100Hz, 1kHz; 1 to max_hz. */
int options_parse_rate_hz(const char *text, unsigned max_hz, unsigned *hz);

/* Austin's -i: 1ms, 100us, 2s, or a bare number of microseconds; more than 0. */
int options_parse_interval_us(const char *text, double *interval_us);

/* A duration: 3.5 (seconds), 2s, 500ms, 5m; more than 0. */
int options_parse_seconds(const char *text, double *seconds);

/* Tachyon's zstd level: 1 to PF_COMPRESSION_LEVEL_MAX, or none (0). */
int options_parse_compression(const char *text, int *level);

/* The format -f names (a name or an alias, any case); NULL after one line on stderr,
 * "pybpfprof: CMD: unknown format 'svgz' (use mojo, ... or jsonl); did you mean svg?" (CMD from
 * program, as options_print_prefix). */
const struct pf_format *options_format_named(const char *name, const char *program);

/* The edits (insert, delete, replace, swap two neighbours) from a to b. */
size_t options_edit_distance(const char *a, size_t a_len, const char *b, size_t b_len);

/* Of candidates, the one a typo of word would most likely be (the first of equals), or NULL
 * if none is near enough to suggest. */
const char *options_nearest(const char *word, size_t word_len, const char *const *candidates, size_t count);

/*
 * Before argp_parse(options, argc, argv): a long option in argv[1..argc) that none of options
 * (nor argp's --help, --usage, --version) starts with, but one is near, is said in one line,
 * "pybpfprof: CMD: unrecognized option '--ouptut'; did you mean --output?", and -EINVAL returned.
 * 0 otherwise: argp then says what else is wrong. Option values are skipped as getopt does;
 * in_order (ARGP_IN_ORDER): nothing after the first word that is not an option is looked at,
 * as argp stops there too.
 */
int options_refuse_misspelled(const struct argp_option *options, int argc, char **argv, const char *program,
			      bool in_order);

/* Whether two output paths name one file: the same name in the same directory, however the
 * directory was spelled (./a and a, a link to it). */
bool options_same_output(const char *a, const char *b);

/* "pybpfprof: CMD: warning: -o PATH given twice (as EARLIER): written once" on stderr. */
void options_warn_repeated_output(const char *program, const char *path, const char *earlier);

/* argp's help filter for -o and -f: their help ends with the format registry's extensions
 * (every_extension: with their aliases) and names, so a new format is listed; the text is
 * returned as it is for other keys. */
char *options_format_help(int key, const char *text, bool every_extension);

#endif
