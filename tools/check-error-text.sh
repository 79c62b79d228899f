#!/usr/bin/env bash
# The error-text convention of user/ (doc/internals.md, "Error messages"): a line on stderr
# begins "pybpfprof: ", then the command ("dump: ") for the file commands, then context and
# detail, one line, lowercase, no closing period; a warning says "warning: " after the prefix.
# This refuses the ways a line has left it before, each precise enough to match nothing else:
#
#   argp_error(...)                      argp's own prefix, "pybpfprof dump: " (options_usage_error)
#   perror, err, errx, warn, warnx, error, error_at_line
#                                        libc's prefixes, from whatever argv[0] was
#   "pybpfprof dump: ...", "pybpfprof:x" a prefix spelled by hand another way
#   fprintf(stderr, "%s: ...", program)  a prefix from argv[0] (options_print_prefix)
#   "Error: ...", "WARNING: ...", "Fatal: ..."
#                                        a label other than "warning: "
#   "... failed." on a line that writes an error
#                                        a closing period
#
# Usage: tools/check-error-text.sh [USER_DIR]   (default: user/ of this checkout)
# Prints every outlier as FILE:LINE: WHY: TEXT and exits 1; prints "error texts: N files, ok"
# and exits 0 otherwise.
set -u
root=${1:-"$(dirname "$0")/../user"}
[ -d "$root" ] || { echo "check-error-text: no such directory: $root" >&2; exit 2; }

# why|extended regular expression, matched line by line
rules=(
	'argp_error prints argp'"'"'s prefix: use options_usage_error|(^|[^_[:alnum:]])argp_error[[:space:]]*\('
	'libc'"'"'s error helpers print their own prefix|(^|[^_[:alnum:].>])(perror|errx?|warnx?|verrx?|vwarnx?|error|error_at_line)\('
	'a prefix other than "pybpfprof: "|"(\\r\\033\[K)?pybpfprof( [a-z][a-z-]*:|:[^ "])'
	'a prefix from argv[0]: use options_print_prefix|"%s: [^"]*"[[:space:]]*,[[:space:]]*(program|argv\[0\]|state->name|program_invocation(_short)?_name)[[:space:]]*[,)]'
	'a label other than "warning: "|"(pybpfprof: )?([^"]*: )?(Error|ERROR|error|Warning|WARNING|Fatal|FATAL|fatal|Note|NOTE):'
	'a closing period|(stderr|errbuf_set|errbuf_format|options_usage_error|report_error|cli_error_print).*[[:lower:][:digit:])]\.(\\n)?"'
)

bad=0 files=0
while IFS= read -r file; do
	files=$((files + 1))
	for rule in "${rules[@]}"; do
		why=${rule%%|*}
		pattern=${rule#*|}
		while IFS= read -r hit; do
			[ -n "$hit" ] || continue
			echo "$file:${hit%%:*}: $why: ${hit#*:}"
			bad=1
		done < <(grep -nE -- "$pattern" "$file")
	done
done < <(find "$root" -name '*.[ch]' | sort)

[ "$bad" = 0 ] || exit 1
echo "error texts: $files files, ok"
