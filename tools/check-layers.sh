#!/usr/bin/env bash
# The layering of user/: each folder may include only the folders below it.
#
#   cli -> session -> {sampler, python, unwind, symbolize, formats, push};  sampler -> unwind
#   symbolize -> {python, unwind}, profile;  formats -> profile;  everything -> util
#   python, unwind -> elf -> proc (the processes profiled: maps, memory, launch)
#   python, unwind, symbolize -> parser (root's side of the parser worker) -> util
#   cli -> worker (the sandboxed worker process) -> python, unwind, elf, parser
#   include/ (the BPF contract) only where records and configs are handled;
#   the BPF skeleton only in sampler/.
#
# Usage: tools/check-layers.sh [USER_DIR]   (default: user/ of this checkout)
# Prints every include that crosses a forbidden direction as FILE:LINE and exits 1;
# prints "layers: N files, ok" and exits 0 otherwise.
set -u
root=${1:-"$(dirname "$0")/../user"}
[ -d "$root" ] || { echo "check-layers: no such directory: $root" >&2; exit 2; }

# folder -> the folders its files may include (itself included)
declare -A allowed=(
	[util]="util"
	[profile]="profile util"
	[formats]="formats profile util"
	[parser]="parser util"
	[proc]="proc parser util"
	[elf]="elf proc util"
	[python]="python elf proc parser util"
	[unwind]="unwind elf proc parser util"
	[worker]="worker python unwind elf proc parser util"
	[sampler]="sampler unwind util"
	[push]="push util"
	[symbolize]="symbolize python unwind elf proc parser profile util"
	[session]="session push sampler python unwind elf proc symbolize parser formats profile util"
	[cli]="cli session push worker sampler python unwind elf proc symbolize parser formats profile util"
)
# folders that may include the BPF contract in include/
contract_users=" sampler python unwind symbolize session cli worker "
contract_headers=" sample_record.h py_proc_config.h proc_event.h unwind_table.h budget_usage.h syscall_events.h "

bad=0 files=0
while IFS= read -r file; do
	files=$((files + 1))
	rel=${file#"$root"/}
	layer=${rel%%/*}
	if [ -z "${allowed[$layer]+x}" ]; then
		echo "$file: folder '$layer' has no place in the layering (add it to ${0##*/})"
		bad=1
		continue
	fi
	while IFS=: read -r line header; do
		target=${header%%/*}
		if [ "$target" = "$header" ]; then
			# a bare name: the BPF contract or the skeleton
			if [ "$header" = pyperf.skel.h ]; then
				[ "$layer" = sampler ] && continue
			elif [[ $contract_headers == *" $header "* ]]; then
				[[ $contract_users == *" $layer "* ]] && continue
			fi
			echo "$file:$line: $layer/ may not include \"$header\""
			bad=1
			continue
		fi
		if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
			echo "$file:$line: $layer/ may not include \"$header\" ($layer -> ${allowed[$layer]// /, })"
			bad=1
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
	# <name.h> reaches include/ too (unwind/'s headers name the contract so)
	while IFS=: read -r line header; do
		[[ $contract_headers == *" $header "* ]] || continue
		[[ $contract_users == *" $layer "* ]] && continue
		echo "$file:$line: $layer/ may not include <$header>"
		bad=1
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' "$file" |
		sed 's/^\([0-9]*\):[^<]*<\([^>]*\)>.*/\1:\2/')
done < <(find "$root" -name '*.[ch]' | sort)

[ "$bad" -eq 0 ] || exit 1
echo "layers: $files files, ok"
