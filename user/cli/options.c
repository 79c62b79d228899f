// SPDX-License-Identifier: MIT
/* The commands' shared option values, and the hints for a mistyped option (options.h). */
#include "cli/options.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "sampler/perf_events.h"
#include "sampler/syscall_names.h"
#include "util/exit_status.h"
#include "util/text_quote.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPTIONS_PROGRAM "pybpfprof"

void options_print_prefix(FILE *out, const char *program)
{
	size_t len = strlen(OPTIONS_PROGRAM);

	fputs(OPTIONS_PROGRAM ": ", out);
	if (program && strncmp(program, OPTIONS_PROGRAM " ", len + 1) == 0 && program[len + 1])
		fprintf(out, "%s: ", program + len + 1);
}

void options_usage_error(const struct argp_state *state, const char *format, ...)
{
	va_list args;

	options_print_prefix(stderr, state->name);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fputc('\n', stderr);
	argp_state_help(state, stderr, ARGP_HELP_STD_ERR);
}

int options_parse_count(const char *text, unsigned long long min, unsigned long long max,
			unsigned long long *value)
{
	char *end;

	/* strtoull takes blanks, a sign and wraps negatives round: digits only. */
	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	*value = strtoull(text, &end, 10);
	return errno || *end || *value < min || *value > max ? -EINVAL : 0;
}

int options_parse_pid(const char *text, pid_t *pid)
{
	unsigned long long value;

	if (options_parse_count(text, 1, INT_MAX, &value))
		return -EINVAL;
	*pid = (pid_t)value;
	return 0;
}

int options_parse_pid_list(const char *list, pid_t *pids, size_t *count, size_t max, const char **bad,
			   int *bad_len)
{
	const char *item = list;

	for (;;) {
		size_t len = strcspn(item, ",");
		char digits[24];
		pid_t pid;

		*bad = item;
		*bad_len = (int)(len < INT_MAX ? len : INT_MAX);
		if (len == 0 || len >= sizeof(digits))
			return -EINVAL;
		memcpy(digits, item, len);
		digits[len] = 0;
		if (options_parse_pid(digits, &pid))
			return -EINVAL;
		if (*count == max)
			return -E2BIG;
		pids[(*count)++] = pid;
		if (!item[len])
			return 0;
		item += len + 1;
	}
}

static const struct {
	const char *name;
	enum session_mode mode;
} modes[] = {
	{ "cpu", SESSION_MODE_CPU },
	{ "wall", SESSION_MODE_WALL },
	{ "gil", SESSION_MODE_GIL },
	{ "memory", SESSION_MODE_MEMORY },
	{ "exception", SESSION_MODE_EXCEPTION },
};

int options_parse_mode(const char *text, enum session_mode *mode)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(text, modes[i].name) == 0) {
			*mode = modes[i].mode;
			return 0;
		}
	return -EINVAL;
}

const char *options_mode_name(enum session_mode mode)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (modes[i].mode == mode)
			return modes[i].name;
	return "stacks";
}

const char *options_mode_names(void)
{
	static char names[128];
	size_t count = sizeof(modes) / sizeof(modes[0]), used = 0;

	for (size_t i = 0; i < count && used < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
					 i == 0 ? "" : i + 1 == count ? " or " : ", ", modes[i].name);
	return names;
}

int options_parse_rate_hz(const char *text, unsigned max_hz, unsigned *hz)
{
	unsigned long long value, scale = 1;
	char digits[24];
	size_t len = strspn(text, "0123456789");
	const char *unit = text + len;

	if (len == 0 || len >= sizeof(digits))
		return -EINVAL;
	if (*unit == 'k' || *unit == 'K') {
		scale = 1000;
		unit++;
	}
	if (*unit && strcasecmp(unit, "hz") != 0)
		return -EINVAL;
	memcpy(digits, text, len);
	digits[len] = 0;
	if (options_parse_count(digits, 1, max_hz, &value) || value * scale > max_hz)
		return -EINVAL;
	*hz = (unsigned)(value * scale);
	return 0;
}

/* A positive finite number and the unit after it; *unit points into text. */
static int parse_scaled(const char *text, double *value, const char **unit)
{
	char *end;

	if (!isdigit((unsigned char)text[0]) && text[0] != '.')
		return -EINVAL;
	*value = strtod(text, &end);
	*unit = end;
	return end == text || !(*value > 0) || !isfinite(*value) ? -EINVAL : 0;
}

int options_parse_interval_us(const char *text, double *interval_us)
{
	const char *unit;
	double value;

	if (parse_scaled(text, &value, &unit))
		return -EINVAL;
	if (*unit == 0 || strcmp(unit, "us") == 0)
		*interval_us = value;
	else if (strcmp(unit, "ms") == 0)
		*interval_us = value * 1e3;
	else if (strcmp(unit, "s") == 0)
		*interval_us = value * 1e6;
	else
		return -EINVAL;
	return 0;
}

int options_parse_seconds(const char *text, double *seconds)
{
	const char *unit;
	double value;

	if (parse_scaled(text, &value, &unit))
		return -EINVAL;
	if (*unit == 0 || strcmp(unit, "s") == 0)
		*seconds = value;
	else if (strcmp(unit, "ms") == 0)
		*seconds = value / 1e3;
	else if (strcmp(unit, "m") == 0)
		*seconds = value * 60;
	else
		return -EINVAL;
	return isfinite(*seconds) ? 0 : -EINVAL;
}

int options_parse_compression(const char *text, int *level)
{
	unsigned long long value;

	if (strcmp(text, "none") == 0) {
		*level = 0;
		return 0;
	}
	if (options_parse_count(text, 1, PF_COMPRESSION_LEVEL_MAX, &value))
		return -EINVAL;
	*level = (int)value;
	return 0;
}

/* ---- did you mean ---- */

/* Option names and command words are short: longer words are no typo of them. */
#define OPTIONS_MAX_WORD 64
#define OPTIONS_MAX_FORMATS 32

const struct pf_format *options_format_named(const char *name, const char *program)
{
	const struct pf_format *format = format_registry_find_name(name);
	const char *candidates[OPTIONS_MAX_FORMATS], *nearest;
	char names[512], list[512], *save = NULL;
	size_t count = 0;

	if (format)
		return format;
	format_registry_names(names, sizeof(names), "|", "|");
	for (char *item = strtok_r(names, "|", &save); item && count < OPTIONS_MAX_FORMATS;
	     item = strtok_r(NULL, "|", &save))
		candidates[count++] = item;
	nearest = options_nearest(name, strlen(name), candidates, count);
	options_print_prefix(stderr, program);
	fputs("unknown format '", stderr);
	fput_escaped(stderr, name);
	fprintf(stderr, "' (use %s)", format_registry_names(list, sizeof(list), ", ", " or "));
	if (nearest)
		fprintf(stderr, "; did you mean %s?", nearest);
	fputc('\n', stderr);
	return NULL;
}

size_t options_edit_distance(const char *a, size_t a_len, const char *b, size_t b_len)
{
	/* Three rows of the optimal-string-alignment table (Damerau's swap of neighbours). */
	size_t rows[3][OPTIONS_MAX_WORD + 1], *before = rows[0], *previous = rows[1], *current = rows[2];

	if (a_len > OPTIONS_MAX_WORD || b_len > OPTIONS_MAX_WORD)
		return SIZE_MAX;
	for (size_t j = 0; j <= b_len; j++)
		previous[j] = j;
	for (size_t i = 1; i <= a_len; i++) {
		size_t *spare = before;

		current[0] = i;
		for (size_t j = 1; j <= b_len; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t best = previous[j - 1] + cost;

			if (previous[j] + 1 < best)
				best = previous[j] + 1;
			if (current[j - 1] + 1 < best)
				best = current[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && before[j - 2] + 1 < best)
				best = before[j - 2] + 1;
			current[j] = best;
		}
		before = previous;
		previous = current;
		current = spare;
	}
	return previous[b_len];
}

const char *options_nearest(const char *word, size_t word_len, const char *const *candidates, size_t count)
{
	/* One edit in a short word, two from five letters, three from ten: beyond that a
	 * suggestion is a guess ("--bogus" is no typo of anything). */
	size_t allowed = 1 + (word_len >= 5) + (word_len >= 10), best_distance = SIZE_MAX;
	const char *best = NULL;

	for (size_t i = 0; i < count; i++) {
		size_t distance = options_edit_distance(word, word_len, candidates[i], strlen(candidates[i]));

		if (distance <= allowed && distance < best_distance) {
			best = candidates[i];
			best_distance = distance;
		}
	}
	return best;
}

/* argp's own long options, beside every command's table. */
static const char *const argp_builtin_names[] = { "help", "usage", "version" };

#define OPTIONS_MAX_NAMES 96

/* The long names of options (visible ones in suggest, all in every), argp's own at the end. */
static size_t long_names(const struct argp_option *options, const char **every, const char **suggest,
			 size_t *suggest_count)
{
	size_t count = 0;

	*suggest_count = 0;
	for (const struct argp_option *option = options; option->name || option->key || option->doc; option++) {
		if (!option->name || (option->flags & OPTION_DOC) || count == OPTIONS_MAX_NAMES)
			continue;
		every[count++] = option->name;
		if (!(option->flags & OPTION_HIDDEN))
			suggest[(*suggest_count)++] = option->name;
	}
	for (size_t i = 0; i < sizeof(argp_builtin_names) / sizeof(argp_builtin_names[0]); i++) {
		every[count++] = argp_builtin_names[i];
		suggest[(*suggest_count)++] = argp_builtin_names[i];
	}
	return count;
}

/* The entry a long name (or getopt's abbreviation of one) selects: NULL if none or several. */
static const struct argp_option *long_option(const struct argp_option *options, const char *name, size_t len,
					     bool *known)
{
	const struct argp_option *found = NULL, *owner = NULL;
	size_t matches = 0;

	*known = false;
	for (const struct argp_option *option = options; option->name || option->key || option->doc; option++) {
		if (!(option->flags & OPTION_ALIAS))
			owner = option;
		if (!option->name || strncmp(option->name, name, len) != 0)
			continue;
		*known = true;
		if (option->name[len] == 0)
			return owner;
		found = owner;
		matches++;
	}
	for (size_t i = 0; i < sizeof(argp_builtin_names) / sizeof(argp_builtin_names[0]); i++)
		*known |= strncmp(argp_builtin_names[i], name, len) == 0;
	return matches == 1 ? found : NULL;
}

static const struct argp_option *short_option(const struct argp_option *options, char key)
{
	const struct argp_option *owner = NULL;

	for (const struct argp_option *option = options; option->name || option->key || option->doc; option++) {
		if (!(option->flags & OPTION_ALIAS))
			owner = option;
		if (option->key == key && !(option->flags & OPTION_DOC))
			return owner;
	}
	return NULL;
}

static bool takes_next_word(const struct argp_option *option)
{
	return option && option->arg && !(option->flags & OPTION_ARG_OPTIONAL);
}

/* argv[*index]'s short options, -abc or -oFILE: *index moves past a value in the next word. */
static void skip_short_cluster(const struct argp_option *options, int argc, char **argv, int *index)
{
	for (const char *key = argv[*index] + 1; *key; key++) {
		const struct argp_option *option = short_option(options, *key);

		if (takes_next_word(option)) {
			if (!key[1] && *index + 1 < argc)
				(*index)++;
			return;
		}
	}
}

int options_refuse_misspelled(const struct argp_option *options, int argc, char **argv, const char *program,
			      bool in_order)
{
	const char *every[OPTIONS_MAX_NAMES + 3], *suggest[OPTIONS_MAX_NAMES + 3];
	size_t suggest_count;

	long_names(options, every, suggest, &suggest_count);
	for (int i = 1; i < argc; i++) {
		const char *word = argv[i], *name = word + 2, *nearest;
		size_t len = strcspn(name, "=");
		bool known;
		const struct argp_option *option;

		if (strcmp(word, "--") == 0 || (in_order && (word[0] != '-' || !word[1])))
			break;
		if (word[0] != '-' || !word[1])
			continue;
		if (word[1] != '-') {
			skip_short_cluster(options, argc, argv, &i);
			continue;
		}
		option = long_option(options, name, len, &known);
		if (known) {
			if (!name[len] && takes_next_word(option) && i + 1 < argc)
				i++;
			continue;
		}
		nearest = options_nearest(name, len, suggest, suggest_count);
		if (!nearest)
			continue;
		options_print_prefix(stderr, program);
		fputs("unrecognized option '", stderr);
		fput_escaped(stderr, word);
		fprintf(stderr, "'; did you mean --%s?\n", nearest);
		return -EINVAL;
	}
	return 0;
}

/* ---- outputs ---- */

/* The directory part of path, "." if none, resolved where it exists. */
static void output_directory(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	char spelled[PATH_MAX];
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (!slash)
		snprintf(spelled, sizeof(spelled), ".");
	else if (len == 0)
		snprintf(spelled, sizeof(spelled), "/");
	else
		snprintf(spelled, sizeof(spelled), "%.*s", (int)(len < PATH_MAX ? len : PATH_MAX - 1), path);
	if (size >= PATH_MAX && realpath(spelled, dir))
		return;
	snprintf(dir, size, "%s", spelled);
}

bool options_same_output(const char *a, const char *b)
{
	const char *a_slash = strrchr(a, '/'), *b_slash = strrchr(b, '/');
	char a_dir[PATH_MAX], b_dir[PATH_MAX];

	if (strcmp(a_slash ? a_slash + 1 : a, b_slash ? b_slash + 1 : b) != 0)
		return false;
	output_directory(a, a_dir, sizeof(a_dir));
	output_directory(b, b_dir, sizeof(b_dir));
	return strcmp(a_dir, b_dir) == 0;
}

void options_warn_repeated_output(const char *program, const char *path, const char *earlier)
{
	options_print_prefix(stderr, program);
	fputs("warning: -o ", stderr);
	fput_escaped(stderr, path);
	if (strcmp(path, earlier) != 0) {
		fputs(" given twice (as ", stderr);
		fput_escaped(stderr, earlier);
		fputs("): written once\n", stderr);
	} else {
		fputs(" given twice: written once\n", stderr);
	}
}

char *options_format_help(int key, const char *text, bool every_extension)
{
	char list[512], *filtered;

	if (key == 'o')
		format_registry_extensions(list, sizeof(list), every_extension);
	else if (key == 'f')
		format_registry_names(list, sizeof(list), ", ", " or ");
	else
		return (char *)text;
	if (asprintf(&filtered, "%s %s", text, list) < 0)
		return (char *)text;
	return filtered;
}

/* The one-line complaint about a name in --event syscall:LIST, with the name it is most likely a
 * typo of; exits with the usage status. */
static void unknown_syscall(const char *name, size_t len, const char *list, struct argp_state *state)
{
	const char *known[PBP_SYSCALL_MAX];
	size_t count = syscall_known_names(known, PBP_SYSCALL_MAX);
	const char *nearest = options_nearest(name, len, known, count);

	argp_failure(state, EXIT_STATUS_USAGE, 0, "unknown system call '%.*s' in --event syscall:%s%s%s%s", (int)len,
		     name, list, nearest ? "; did you mean " : " (names as in man 2 syscalls: write, openat, ...)",
		     nearest ? nearest : "", nearest ? "?" : "");
}

/* syscall:NAME[,NAME...][:bytes|:latency] after "syscall:" (NULL: nothing after "syscall"). */
static int parse_syscalls(struct session_options *session, char *list, struct argp_state *state)
{
	struct syscall_filter *filter = &session->syscalls;
	char *weight = list ? strchr(list, ':') : NULL, *name, *save = NULL;

	if (!list || !*list || list[0] == ':')
		argp_failure(state, EXIT_STATUS_USAGE, 0,
			     "--event syscall needs the calls: syscall:NAME[,NAME...][:bytes|:latency] (e.g. syscall:write)");
	if (weight)
		*weight++ = 0;
	memset(filter, 0, sizeof(*filter));
	if (weight && strcmp(weight, "bytes") == 0)
		filter->weight = PBP_SYSCALL_BYTES;
	else if (weight && strcmp(weight, "latency") == 0)
		filter->weight = PBP_SYSCALL_LATENCY;
	else if (weight)
		argp_failure(state, EXIT_STATUS_USAGE, 0,
			     "unknown weight '%s' in --event syscall:%s:%s (bytes or latency; none: each call counts one)",
			     weight, list, weight);
	if (snprintf(filter->text, sizeof(filter->text), "syscall:%s", list) >= (int)sizeof(filter->text))
		argp_failure(state, EXIT_STATUS_USAGE, 0, "--event syscall: the list of calls is too long");
	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int number = syscall_number(name);

		/* a name of i386 only (socketcall, mmap2) still matches x86_64's 32-bit callers: it
		 * goes to the compat bitmap alone, below */
		if (number < 0 && syscall_number_compat_only(name) < 0)
			unknown_syscall(name, strlen(name), filter->text + strlen("syscall:"), state);
		if (filter->weight == PBP_SYSCALL_BYTES && !syscall_returns_bytes(name))
			argp_failure(state, EXIT_STATUS_USAGE, 0,
				     "--event %s:bytes: %s returns no bytes moved (bytes weighs read, write, send, "
				     "recv and their kin; latency or a count weighs any call)",
				     filter->text, name);
		syscall_filter_add(filter, number);
		syscall_filter_add_ia32(filter, name);
	}
	return 0;
}

int options_parse_event(char *arg, struct session_options *session, struct options_event_seen *seen,
			struct argp_state *state)
{
	char *colon = strchr(arg, ':'), names[512];
	unsigned long long period;

	if (colon)
		*colon = 0;
	session->event = perf_event_find(arg);
	if (!session->event)
		options_usage_error(state, "unknown event '%s' (%s)", arg, perf_event_names(names, sizeof(names)));
	if (perf_event_is_syscalls(session->event))
		return parse_syscalls(session, colon ? colon + 1 : NULL, state);
	if (colon && session->event->off_cpu) {
		if (options_parse_count(colon + 1, 0, PERF_EVENT_MAX_OFF_CPU_US, &period) || period == 0)
			options_usage_error(state, "invalid shortest block '%s' in --event %s:%s (1-%llu us)", colon + 1, arg,
				   colon + 1, PERF_EVENT_MAX_OFF_CPU_US);
	} else if (colon && (options_parse_count(colon + 1, 0, PERF_EVENT_MAX_PERIOD, &period) || period == 0)) {
		options_usage_error(state, "invalid period '%s' in --event %s:%s (1-%llu occurrences)", colon + 1, arg,
			   colon + 1, PERF_EVENT_MAX_PERIOD);
	}
	if (colon) {
		seen->period_given_twice |= session->event_period != 0;
		session->event_period = period;
	}
	return 0;
}

int options_parse_event_period(const char *arg, struct session_options *session, struct options_event_seen *seen,
			       struct argp_state *state)
{
	unsigned long long period;

	if (options_parse_count(arg, 1, PERF_EVENT_MAX_PERIOD, &period))
		options_usage_error(state, "invalid --event-period '%s' (1-%llu occurrences)", arg, PERF_EVENT_MAX_PERIOD);
	seen->period_given_twice |= session->event_period != 0;
	seen->period_option = true;
	session->event_period = period;
	return 0;
}

const char *options_event_clash(const struct session_options *session, const struct options_event_seen *seen)
{
	if (!session->event)
		return session->event_period ? "--event-period goes with --event NAME" : NULL;
	if (seen->period_given_twice)
		return "--event NAME:PERIOD and --event-period both set the period: give one";
	if (session->event->off_cpu && seen->period_option)
		return "--event off-cpu:MIN_US gives its shortest block; --event-period is for perf events";
	if (session->mode == SESSION_MODE_MEMORY)
		return "--event weighs an event's occurrences, --mode memory the resident memory's change at every tick: give one";
	if (session->mode == SESSION_MODE_EXCEPTION)
		return "--event samples on an event's occurrences, --mode exception on the clock's ticks while an exception is raised or handled: give one";
	if (session->mode == SESSION_MODE_WALL)
		return "--event samples threads as the event happens to them, --mode wall every thread at every interval: give one";
	if (session->mode != SESSION_MODE_CPU)
		return "--event samples threads as the event happens to them, --mode gil the GIL holder at every interval: give one";
	if (seen->rate_given)
		return "--event samples every PERIOD occurrences, not at a rate: give the period with --event NAME:PERIOD or --event-period, not -F or -i";
	return NULL;
}
