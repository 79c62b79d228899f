#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The options of every command agree between --help, the man page, doc/usage.md and the
bash completion; the formats' names and extensions are in each place that lists them.

    tools/check-options.py [--root DIR] [--binary PYBPFPROF]
                           [--formats 'mojo|tachyon|...' --extensions '.mojo, .bin/.tachyon, ...']

--help is the source of truth: it is what the parser takes (argp prints its own table).
The commands are those `pybpfprof help` lists; `record` is the plain `pybpfprof`.

Where each command's options are written, one place per command:
  --help       `pybpfprof --help`, `pybpfprof CMD --help`: a line that starts (indented at
               most 8 spaces) with the option, names separated by ", " ("  -o, --output=FILE")
  man page     doc/pybpfprof.1: record's in `.SH OPTIONS`, CMD's in `.SS "pybpfprof CMD"`;
               each option the tag line of a `.TP` ("\\fB\\-o\\fR, \\fB\\-\\-output\\fR ...")
  usage.md     doc/usage.md: record's in the table under `## Options`, CMD's in the table
               under a heading `pybpfprof CMD` (backticks allowed); the option in the first
               cell ("`-o, --output FILE`")
  completion   contrib/pybpfprof.bash-completion: every option name as a word
-h/--help, -?, --usage, -V/--version are everywhere and need not be listed again.

--formats and --extensions (what format_registry_names and format_registry_extensions say,
in the same order; tests/e2e/test_docs.c passes them) add: every format name in the man page's
and usage.md's -f, in --help's -f, in the completion; every format's first extension in
the man page's and usage.md's -o and in --help's -o; every extension of every format
in the man page's FILE FORMATS and doc/formats.md; every name in `convert --help`.

Prints one line per disagreement, naming the option or format and where it is missing,
and exits 1; else prints "ok" and exits 0.
"""
import argparse
import os
import re
import subprocess
import sys

GENERIC = {"-h", "--help", "-?", "--usage", "-V", "--version"}
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z?][A-Za-z0-9-]*)")
HELP_LINE = re.compile(r"^ {1,8}(-\S.*)$")

problems = []


def complain(text):
    problems.append(text)


def help_environment():
    """argp lays its table out by ARGP_HELP_FMT: the default layout is the one parsed here."""
    environment = dict(os.environ, LC_ALL="C")
    environment.pop("ARGP_HELP_FMT", None)
    return environment


def run_help(binary, command):
    argv = [binary, "--help"] if command == "record" else [binary, command, "--help"]
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, env=help_environment())
    if result.returncode != 0:
        complain("`%s` exited %d" % (" ".join(argv[1:]), result.returncode))
    return result.stdout


def commands_of(binary):
    """The commands `pybpfprof help` lists."""
    text = subprocess.run([binary, "help"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    found, listing = [], False
    for line in text.splitlines():
        if line.startswith("commands:"):
            listing = True
        elif listing and re.match(r"^\s+\w", line):
            found.append(line.split()[0])
        elif listing:
            listing = False
    if "record" not in found:
        found.insert(0, "record")
    return [name for name in found if name != "help"]


def help_options(text):
    """{option name: its description} from --help's option lines."""
    options = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = HELP_LINE.match(line)
        if not match:
            continue
        spec, _, description = re.split(r"( {2,}|$)", match.group(1), maxsplit=1)
        # argp wraps a description under a long spec: the lines after, indented further.
        for more in lines[index + 1:]:
            if not more.startswith(" " * 9) or not more.strip():
                break
            description += " " + more.strip()
        for piece in spec.split(", "):
            name = OPTION.match(piece.strip())
            if name:
                options[name.group(1)] = description.strip()
    return options


def man_text(line):
    """A man page line as it reads: fonts and escapes dropped."""
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line)
    line = line.replace("\\-", "-").replace("\\(em", "-").replace("\\&", "").replace("\\e", "\\")
    line = re.sub(r"^\.(B|I|BR|IR|RB|RI|BI|IB)\s+", "", line)
    return line.replace('"', "")


def man_sections(path):
    """({section: {option: the text of its .TP}}, {section: its whole text}) where section is
    "SH NAME" or "SS NAME" (an .SH's text holds its .SS's)."""
    sections, texts, current, current_sh = {}, {}, None, None
    tag_next, entry = False, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            heading = re.match(r'^\.(SH|SS)\s+"?(.*?)"?\s*$', line)
            if heading:
                current = "%s %s" % (heading.group(1), man_text(heading.group(2)))
                if heading.group(1) == "SH":
                    current_sh = current
                sections.setdefault(current, {})
                entry = None
                continue
            if current is None:
                continue
            texts[current] = texts.get(current, "") + man_text(line) + "\n"
            if current_sh != current:
                texts[current_sh] = texts.get(current_sh, "") + man_text(line) + "\n"
            if line.startswith(".TP"):
                tag_next = True
                continue
            if tag_next:
                tag_next = False
                entry = []
                for name in OPTION.findall(man_text(line)):
                    sections[current][name] = entry
                entry.append(man_text(line))
                continue
            if entry is not None and not line.startswith("."):
                entry.append(man_text(line))
            elif line.startswith((".PP", ".SH", ".SS", ".nf")):
                entry = None
    return {section: {name: " ".join(text) for name, text in options.items()}
            for section, options in sections.items()}, texts


def strip_code(text):
    return text.replace("`", "").strip()


def usage_sections(path):
    """{heading text: {option: the row's text}} of the tables of a Markdown file."""
    sections, current = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
            if heading:
                current = strip_code(heading.group(1))
                sections.setdefault(current, {})
                continue
            if current is None or not line.startswith("|"):
                continue
            cells = line.strip().strip("|").split("|")
            first = cells[0]
            if re.match(r"^\s*:?-+:?\s*$", first):
                continue
            for span in re.findall(r"`([^`]*)`", first):
                for name in OPTION.findall(span):
                    sections[current][name] = line
    return sections


def compare(command, where, truth, documented, section_name):
    label = "pybpfprof --help" if command == "record" else "pybpfprof %s --help" % command
    for name in sorted(set(truth) - GENERIC - set(documented)):
        complain("%s: %s lacks %s, which `%s` has" % (where, section_name, name, label))
    for name in sorted(set(documented) - GENERIC - set(truth)):
        complain("%s: %s lists %s, which `%s` does not have" % (where, section_name, name, label))


def man_section_of(sections, command):
    if command == "record":
        return "SH OPTIONS"
    for section in sections:
        if re.match(r"^SS pybpfprof %s\b" % re.escape(command), section):
            return section
    return None


def usage_section_of(sections, command):
    if command == "record":
        return "Options" if "Options" in sections else None
    for section in sections:
        if re.match(r"^pybpfprof %s\b" % re.escape(command), section):
            return section
    return None


def check_options(root, binary, commands, helps):
    man_path, usage_path = "doc/pybpfprof.1", "doc/usage.md"
    completion_path = "contrib/pybpfprof.bash-completion"
    man, man_texts = man_sections(os.path.join(root, man_path))
    usage = usage_sections(os.path.join(root, usage_path))
    with open(os.path.join(root, completion_path), encoding="utf-8") as f:
        completion_words = set(re.findall(r"(?<![\w-])--?[A-Za-z?][A-Za-z0-9-]*", f.read()))
    for command in commands:
        options = helps[command]["options"]
        if not set(options) - GENERIC:
            complain("`%s --help` lists no option lines (\"  -x, --long ARG  what it does\")"
                     % ("pybpfprof" if command == "record" else "pybpfprof " + command))
        section = man_section_of(man, command)
        if section is None:
            complain('%s: no .SS "pybpfprof %s" with a .TP per option' % (man_path, command))
        else:
            compare(command, man_path, options, man[section], ".%s" % section)
        section = usage_section_of(usage, command)
        if section is None:
            complain("%s: no heading \"pybpfprof %s\" over a table of its options"
                     % (usage_path, command))
        else:
            compare(command, usage_path, options, usage[section], "the table under \"%s\"" % section)
        for name in sorted(set(options) - GENERIC - completion_words):
            complain("%s: no %s (an option of `pybpfprof%s --help`)"
                     % (completion_path, name, "" if command == "record" else " " + command))
    return man, man_texts, usage


def check_formats(root, names, extensions, helps, man, man_texts, usage):
    """Each place that lists formats or extensions lists all of them."""
    firsts = [group.split("/")[0] for group in extensions]
    every = [ext for group in extensions for ext in group.split("/")]

    def need(where, text, items, what):
        for item in items:
            if not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(item), text):
                complain("%s: %s %s is not there" % (where, what, item))

    record = helps["record"]["options"]
    need("`pybpfprof --help`, -f", record.get("-f", ""), names, "the format")
    need("`pybpfprof --help`, -o", record.get("-o", ""), firsts, "the extension")
    if "convert" in helps:
        need("`pybpfprof convert --help`", helps["convert"]["text"], names, "the format")
    man_options = man.get("SH OPTIONS", {})
    need("doc/pybpfprof.1, .TP -f", man_options.get("-f", ""), names, "the format")
    need("doc/pybpfprof.1, .TP -o", man_options.get("-o", ""), firsts, "the extension")
    need("doc/pybpfprof.1, .SH FILE FORMATS", man_texts.get("SH FILE FORMATS", ""), every,
         "the extension")
    usage_options = usage.get("Options", {})
    need("doc/usage.md, the row of -f", usage_options.get("-f", ""), names, "the format")
    need("doc/usage.md, the row of -o", usage_options.get("-o", ""), firsts, "the extension")
    for path in ("doc/formats.md", "README.md"):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        need(path, text, firsts if path == "README.md" else every, "the extension")
    with open(os.path.join(root, "contrib/pybpfprof.bash-completion"), encoding="utf-8") as f:
        need("contrib/pybpfprof.bash-completion, formats", f.read(), names, "the format")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=".")
    parser.add_argument("--binary", default=None)
    parser.add_argument("--formats", help="format names, '|' between them")
    parser.add_argument("--extensions", help="their extensions: '.a, .b/.c' (same order)")
    args = parser.parse_args()
    binary = args.binary or os.path.join(args.root, "pybpfprof")
    commands = commands_of(binary)
    helps = {}
    for command in commands:
        text = run_help(binary, command)
        helps[command] = {"text": text, "options": help_options(text)}
    man, man_texts, usage = check_options(args.root, binary, commands, helps)
    if args.formats and args.extensions:
        names = [name.strip() for name in args.formats.split("|") if name.strip()]
        extensions = [group.strip() for group in args.extensions.split(",") if group.strip()]
        if len(names) != len(extensions):
            complain("--formats has %d names, --extensions %d groups" % (len(names), len(extensions)))
        else:
            check_formats(args.root, names, extensions, helps, man, man_texts, usage)
    for problem in problems:
        print(problem)
    if problems:
        print("%d disagreement%s between --help and the documentation (tools/check-options.py says "
              "where each command's options are written)" % (len(problems), "" if len(problems) == 1 else "s"))
        return 1
    print("ok: %s agree with --help" % ", ".join(
        ["doc/pybpfprof.1", "doc/usage.md", "contrib/pybpfprof.bash-completion"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
