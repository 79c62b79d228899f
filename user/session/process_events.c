// SPDX-License-Identifier: MIT
/*
 * The processes of a run: the named pids and the host's Python processes found
 * at the start, and the fork, exec and exit notices BPF sends while it runs;
 * discovery retried while a fresh interpreter is still mapping its runtime.
 */
#include "session/session_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/async_tasks.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "proc/proc_identity.h"
#include "util/clock.h"

/* How long -p waits for a named process's runtime before giving up on it. */
#define STARTUP_DISCOVERY_MS 2000

/* Exception mode reads offsets not every version has (3.13 and 3.14 name none in
 * _Py_DebugOffsets): an empty profile would not say why, so the run does, once. */
static void say_exceptions_unknown(struct session *session, const struct target *target)
{
	if (session->options->mode != SESSION_MODE_EXCEPTION || session->options->quiet ||
	    session->exceptions_unknown_said || target->python.config.off.exc_item_value != PY_OFF_NONE)
		return;
	session->exceptions_unknown_said = true;
	report_error("warning: pid %d: where CPython %u.%u keeps its exceptions is not known: --mode exception keeps "
		     "none of its samples (3.7-3.12 and 3.15+ are known)",
		     (int)target->pid, target->python.major, target->python.minor);
}

/* Instructions are read from 3.11's inline bytecode on: an older target's frames carry none,
 * which the run says once. */
static void say_opcodes_unknown(struct session *session, const struct target *target)
{
	if (!session->options->opcodes || session->options->quiet || session->opcodes_unknown_said ||
	    target->python.config.off.lasti_kind == PY_LASTI_PTR)
		return;
	session->opcodes_unknown_said = true;
	report_error("warning: pid %d: CPython %u.%u: --opcodes needs 3.11 or later: its frames carry no instruction",
		     (int)target->pid, target->python.major, target->python.minor);
}

void process_events_target_ready(struct session *session, struct target *target)
{
	int err;

	/* 3.11-3.13: a program already running its loop has BPF name its tasks from the first
	 * sample; found later, the tasks sampled meanwhile could be looked up only at the drain,
	 * and the ones that had ended by then lost (the records before it came in one drain). */
	if (target->python.asyncio.from_callbacks && !target->python.config.current_tasks_addr)
		target->python.config.current_tasks_addr = async_tasks_find_current_tasks(&target->python);
	err = bpf_sampler_add_target(session->sampler, target->pid, &target->python.config);

	if (err) {
		report_error("pid %d: cannot start sampling: %s", (int)target->pid, strerror(-err));
		target->state = TARGET_GONE;
		return;
	}
	native_stacks_attach(session, target->pid);
	say_exceptions_unknown(session, target);
	say_opcodes_unknown(session, target);
	report_python_version(session, target);
	report_process(session, target);
}

void process_events_check_asyncio(struct session *session, struct target *target, uint64_t now_ns)
{
	struct py_target *python = &target->python;

	if (target->state != TARGET_READY || python->asyncio.known || python->asyncio.ob_type == 0 ||
	    (target->asyncio_looked_ns && now_ns - target->asyncio_looked_ns < target->asyncio_look_ns))
		return;
	target->asyncio_looked_ns = now_ns;
	target->asyncio_look_ns = target->asyncio_look_ns == 0 ? TARGET_ASYNCIO_LOOK_FIRST_NS
				  : target->asyncio_look_ns < TARGET_ASYNCIO_LOOK_LAST_NS / 2 ? 2 * target->asyncio_look_ns
											   : TARGET_ASYNCIO_LOOK_LAST_NS;
	/* its maps and files are the process's to make slow: read on discovery's thread */
	if (session->discovery)
		discovery_request_asyncio(session, target);
	else if (py_discover_asyncio(session->targets.runtime_files, python) == 0)
		(void)bpf_sampler_add_target(session->sampler, target->pid, &python->config);
}

void process_events_find_current_tasks(struct session *session, struct target *target, uint64_t now_ns)
{
	struct py_target *python = &target->python;

	if (target->state != TARGET_READY || !python->asyncio.from_callbacks || python->config.current_tasks_addr ||
	    (target->asyncio_looked_ns && now_ns - target->asyncio_looked_ns < target->asyncio_look_ns))
		return;
	target->asyncio_looked_ns = now_ns;
	target->asyncio_look_ns = target->asyncio_look_ns == 0 ? TARGET_ASYNCIO_LOOK_FIRST_NS
				  : target->asyncio_look_ns < TARGET_ASYNCIO_LOOK_LAST_NS / 2 ? 2 * target->asyncio_look_ns
											   : TARGET_ASYNCIO_LOOK_LAST_NS;
	python->config.current_tasks_addr = async_tasks_find_current_tasks(python);
	if (python->config.current_tasks_addr)
		(void)bpf_sampler_add_target(session->sampler, target->pid, &python->config);
}

static void target_ended(struct session *session, struct target *target)
{
	if (target->state == TARGET_GONE)
		return;
	target->state = TARGET_GONE;
	bpf_sampler_remove_target(session->sampler, target->pid);
	native_stacks_detach(session, target->pid);
}

/* What a discovery attempt of target ended in (err: target_set_discover's). */
static void discovery_ended(struct session *session, struct target *target, int err)
{
	if (err == 0) {
		process_events_target_ready(session, target);
		return;
	}
	if (err == -EAGAIN)
		return;
	/* A process the user named, or the launched command: tell them why it is not profiled. */
	if (target->origin != TARGET_FROM_SCAN && err != -ESRCH && !session->options->quiet)
		report_error("%s", target->last_error.text);
	bpf_sampler_remove_target(session->sampler, target->pid);
}

void process_events_discovered(struct session *session, struct target *target, const struct target_discovery *found)
{
	target->discovery_job = 0;
	/* an answer for a target that ended meanwhile, or was found by the named pids' wait */
	if (target->state != TARGET_PENDING)
		return;
	discovery_ended(session, target, target_set_discover_apply(target, found, clock_monotonic_ms()));
}

/* With discovery's thread running, the attempt is queued there: the drain goes on meanwhile. */
static void try_discover(struct session *session, struct target *target, uint64_t now_ms)
{
	if (session->discovery) {
		discovery_request_runtime(session, target);
		return;
	}
	discovery_ended(session, target, target_set_discover(&session->targets, target, now_ms));
}

void process_events_retry_pending(struct session *session, uint64_t now_ms)
{
	for (size_t i = 0; i < session->targets.count; i++) {
		struct target *target = &session->targets.items[i];

		if (target->state == TARGET_PENDING && !target->discovery_job && now_ms >= target->next_attempt_ms)
			try_discover(session, target, now_ms);
	}
}

/* How long the loop may sleep: no later than the next discovery attempt of a pending target,
 * since every moment a launched Python runs undiscovered is lost to its profile. */
int process_events_wait_budget_ms(const struct session *session, int tick_ms, uint64_t now_ms)
{
	uint64_t budget = (uint64_t)tick_ms;

	for (size_t i = 0; i < session->targets.count; i++) {
		const struct target *target = &session->targets.items[i];

		if (target->state != TARGET_PENDING || target->discovery_job)
			continue;
		if (target->next_attempt_ms <= now_ms)
			return 0;
		if (target->next_attempt_ms - now_ms < budget)
			budget = target->next_attempt_ms - now_ms;
	}
	return (int)budget;
}

/* An exited target is forgotten: what the symbolizers keep for its pid goes too. */
static void forget_process(void *ctx, const struct target *target)
{
	struct session *session = ctx;

	symbolize_py_forget_pid(session->resolver.python, target->pid);
	if (session->resolver.native)
		symbolize_native_forget_pid(session->resolver.native, target->pid);
	native_stacks_detach(session, target->pid);
	threads_seen_forget_pid(&session->threads, (uint64_t)target->pid);
	/* The outputs' per-process tables (MOJO's definitions) too: a whole-host run sees
	 * thousands of short processes. */
	for (size_t i = 0; i < session->writer_count; i++)
		pf_writer_forget_pid(session->writers[i], (uint32_t)target->pid);
}

/*
 * The names of the code objects and files forgotten go once they are most of their tables: a
 * whole host's processes each name their own functions, and keep making files of new names.
 * Between drains, where only the resolver's kept stacks and named pcs and the task chains hold
 * names; never while `stacks` collects frames to print.
 */
static void forget_unused_names(struct session *session)
{
	if (session->stacks)
		return;
	if (symbolize_py_compact_names(session->resolver.python) > 0 && session->resolver.tasks)
		async_tasks_forget_chains(session->resolver.tasks);
	if (session->resolver.native && symbolize_native_compact_names(session->resolver.native) > 0)
		sample_resolve_forget_names(&session->resolver);
}

void process_events_check_liveness(struct session *session)
{
	for (size_t i = 0; i < session->targets.count; i++) {
		struct target *target = &session->targets.items[i];

		if (target->state != TARGET_GONE && !target_set_alive(target))
			target_ended(session, target);
	}
	/* What BPF's exit hook missed, and the state of exited targets (both pace themselves). */
	bpf_sampler_reconcile_targets(session->sampler, clock_monotonic_ms());
	target_set_forget_exited(&session->targets, clock_monotonic_ms(), forget_process, session);
	forget_unused_names(session);
}

/* A new process, or a target that exec'd: start over with what it runs now. */
static void on_exec(struct session *session, pid_t pid)
{
	struct target *target = target_set_find(&session->targets, pid);
	enum target_origin origin;
	bool known = false;

	if (target) {
		if (target->state == TARGET_GONE && !session->system_wide)
			return;
		symbolize_py_forget_pid(session->resolver.python, pid);
		if (session->resolver.native)
			symbolize_native_forget_pid(session->resolver.native, pid);
		native_stacks_detach(session, pid);
		origin = target->origin;
		known = true;
	} else if (session->system_wide) {
		/* the profiler's own parser workers are not the host's processes */
		if (target_set_descends_from(pid, getpid()))
			return;
		origin = TARGET_FROM_SCAN;
	} else if (session->launched && target_set_descends_from(pid, session->launch.pid)) {
		origin = TARGET_FROM_LAUNCH;
	} else {
		return;
	}
	target = target_set_add(&session->targets, pid, origin);
	if (!target)
		return;
	target->state = TARGET_PENDING;
	target->ran_python = false;
	target->exited_ms = 0;
	target->start_ticks = target_set_start_ticks(pid);
	target->pending_since_ms = clock_monotonic_ms();
	target->next_attempt_ms = 0;
	target->late_looks = origin == TARGET_FROM_SCAN ? TARGET_SET_LATE_LOOKS : 0;
	/* what it runs now imports asyncio on its own schedule */
	target->asyncio_looked_ns = 0;
	target->asyncio_look_ns = 0;
	/* answers on their way describe the image that is gone */
	target->discovery_job = 0;
	target->asyncio_job = 0;
	/* Launched processes are sampled (kernel stacks) while their runtime is being found; a
	 * known target is marked pending here too, since a fork notice handled just before this
	 * exec notice may have given BPF the old image's description again. */
	if (origin == TARGET_FROM_LAUNCH || known)
		bpf_sampler_add_target(session->sampler, pid, NULL);
	try_discover(session, target, clock_monotonic_ms());
}

/* A target forked: BPF already samples the child with the parent's description. */
static void on_fork(struct session *session, pid_t pid, pid_t parent_pid)
{
	struct target *parent = target_set_find(&session->targets, parent_pid);
	struct py_target python;
	enum target_origin origin;
	enum target_state state;
	uint64_t parent_looked_ns, parent_look_ns;
	struct target *child;

	if (!parent || parent->state == TARGET_GONE) {
		bpf_sampler_remove_target(session->sampler, pid);
		return;
	}
	/* Copy before adding: adding may move the parent in memory. */
	python = parent->python;
	origin = parent->origin;
	state = parent->state;
	parent_looked_ns = parent->asyncio_looked_ns;
	parent_look_ns = parent->asyncio_look_ns;
	child = target_set_add(&session->targets, pid, origin);
	if (!child)
		return;
	child->python = python;
	child->python.pid = pid;
	/* its own namespace pid; the cgroup is the parent's until it moves */
	proc_identity_read(pid, &child->identity);
	child->state = state;
	/* A shell's subshell that exits before its parent execs Python never ran Python, though
	 * its description is the parent's: only a ready parent's child did. */
	child->ran_python = state == TARGET_READY;
	child->exited_ms = 0;
	child->start_ticks = target_set_start_ticks(pid);
	child->pending_since_ms = clock_monotonic_ms();
	child->next_attempt_ms = 0;
	child->asyncio_looked_ns = parent_looked_ns;
	child->asyncio_look_ns = parent_look_ns;
	/* the parent's lookups on their way are the parent's: a pending child asks its own */
	child->discovery_job = 0;
	child->asyncio_job = 0;
	/* The parent may have become ready after the fork: BPF then copied its pending entry,
	 * and nothing else would ever tell BPF that the child is ready too. */
	if (state == TARGET_READY)
		process_events_target_ready(session, child);
}

void process_events_on_proc_event(void *ctx, const struct pbp_proc_event *event)
{
	struct session *session = ctx;
	struct target *target;

	switch (event->type) {
	case PBP_PROC_FORK:
		on_fork(session, (pid_t)event->pid, (pid_t)event->parent_pid);
		break;
	case PBP_PROC_EXEC:
		on_exec(session, (pid_t)event->pid);
		break;
	case PBP_PROC_EXIT:
		target = target_set_find(&session->targets, (pid_t)event->pid);
		if (target)
			target_ended(session, target);
		break;
	default:
		break;
	}
}

/* System-wide mode starts with every Python process already running. */
void process_events_scan(struct session *session)
{
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	pid_t self = getpid();

	if (!proc)
		return;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		struct target *target;

		/* the profiler and its parser workers are not the host's processes */
		if (*end || pid <= 0 || pid == self || target_set_descends_from((pid_t)pid, self))
			continue;
		target = target_set_add(&session->targets, (pid_t)pid, TARGET_FROM_SCAN);
		if (target)
			try_discover(session, target, clock_monotonic_ms());
	}
	closedir(proc);
}

/* -p PID: each must be a Python process we can profile, before anything starts. */
int process_events_discover_named_pids(struct session *session)
{
	const struct session_options *options = session->options;

	for (size_t i = 0; i < options->pid_count; i++) {
		struct target *target = target_set_add(&session->targets, options->pids[i],
						       TARGET_FROM_PID);
		uint64_t deadline = clock_monotonic_ms() + STARTUP_DISCOVERY_MS;
		int err;

		if (!target)
			return -ENOMEM;
		for (;;) {
			err = target_set_discover(&session->targets, target, clock_monotonic_ms());
			if (err != -EAGAIN || clock_monotonic_ms() >= deadline)
				break;
			usleep(5000);
		}
		if (err == -ESRCH) {
			report_error("pid %d: no such process", (int)options->pids[i]);
			return err;
		}
		if (err) {
			report_error("%s", target->last_error.text[0] ? target->last_error.text
							      : strerror(-err));
			return err;
		}
	}
	return 0;
}

static bool is_named_pid(const struct session_options *options, pid_t pid)
{
	for (size_t i = 0; i < options->pid_count; i++)
		if (options->pids[i] == pid)
			return true;
	return false;
}

static bool descends_from_named(const struct session_options *options, pid_t pid)
{
	for (size_t i = 0; i < options->pid_count; i++)
		if (target_set_descends_from(pid, options->pids[i]))
			return true;
	return false;
}

/*
 * -C: the named processes' descendants already running join them, at any depth (a Pool's
 * workers, a forkserver's children). Forks from now on come as notices: BPF follows a
 * target's forks from the moment it is added, which for the named ones was before this
 * scan. A descendant that is not Python is skipped quietly, as the host scan does.
 */
size_t process_events_add_descendants(struct session *session)
{
	const struct session_options *options = session->options;
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	pid_t self = getpid();
	size_t added = 0;

	if (!proc)
		return 0;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		struct target *target;

		if (*end || pid <= 1 || pid == self || is_named_pid(options, (pid_t)pid) ||
		    target_set_find(&session->targets, (pid_t)pid) || !descends_from_named(options, (pid_t)pid))
			continue;
		target = target_set_add(&session->targets, (pid_t)pid, TARGET_FROM_SCAN);
		if (!target)
			break;
		added++;
		try_discover(session, target, clock_monotonic_ms());
	}
	closedir(proc);
	return added;
}

/* utime + stime of pid in clock ticks from /proc/PID/stat, 0 if gone. */
static uint64_t cpu_ticks(pid_t pid)
{
	char text[1024], *close_paren;
	unsigned long long utime = 0, stime = 0;

	if (proc_identity_read_file(pid, "stat", text, sizeof(text)) <= 0)
		return 0;
	/* The command name may hold anything, ')' too: the fields start after the last one. */
	close_paren = strrchr(text, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
				   &stime) != 2)
		return 0;
	return utime + stime;
}

/* The CPU ticks of the named pids (*named) and of every process descending from one (*descendants). */
static void named_cpu_ticks(const struct session_options *options, uint64_t *named, uint64_t *descendants)
{
	DIR *proc = opendir("/proc");
	struct dirent *entry;

	*named = *descendants = 0;
	for (size_t i = 0; i < options->pid_count; i++)
		*named += cpu_ticks(options->pids[i]);
	if (!proc)
		return;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);

		if (!*end && pid > 1 && !is_named_pid(options, (pid_t)pid) && descends_from_named(options, (pid_t)pid))
			*descendants += cpu_ticks((pid_t)pid);
	}
	closedir(proc);
}

void process_events_note_children_cpu(struct session *session)
{
	named_cpu_ticks(session->options, &session->named_ticks_start, &session->descendant_ticks_start);
}

/* Children's CPU below this (in ticks, 1/100 s on Linux) is not worth a hint. */
#define CHILDREN_HINT_MIN_TICKS 20

void process_events_hint_children(struct session *session)
{
	uint64_t named, descendants, named_used, descendants_used;
	double tick_s = 1.0 / (double)sysconf(_SC_CLK_TCK);

	named_cpu_ticks(session->options, &named, &descendants);
	named_used = named > session->named_ticks_start ? named - session->named_ticks_start : 0;
	/* Children that exited took their ticks with them: this is at least what the others used. */
	descendants_used = descendants > session->descendant_ticks_start ? descendants - session->descendant_ticks_start : 0;
	if (descendants_used < CHILDREN_HINT_MIN_TICKS || descendants_used <= named_used)
		return;
	fprintf(stderr, "pybpfprof: hint: the profiled processes' children used %.1f s of CPU, they %.1f s: "
			"-C profiles the children too\n", (double)descendants_used * tick_s, (double)named_used * tick_s);
}

bool process_events_all_ended(struct session *session)
{
	if (session->launched)
		return launch_poll_exit(&session->launch);
	if (session->system_wide)
		return false;
	for (size_t i = 0; i < session->targets.count; i++)
		if (session->targets.items[i].origin == TARGET_FROM_PID &&
		    session->targets.items[i].state != TARGET_GONE)
			return false;
	return true;
}
