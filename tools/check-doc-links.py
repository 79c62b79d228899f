#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every relative link of the documentation resolves.

    tools/check-doc-links.py [ROOT]

Reads ROOT/README.md and ROOT/doc/*.md (ROOT: the checkout, by default the current
directory). Each relative link [text](path), [text](path#anchor) or [text](#anchor) must
name a file or folder that exists under ROOT, and an anchor must be a heading of the
Markdown file it points into (GitHub's rule: lower case, punctuation dropped, spaces to
hyphens, a repeated heading numbered -1, -2...). Links in code blocks and code spans are
text, not links. Prints one line per broken link (FILE:LINE: the link and what is wrong)
and exits 1, or prints "ok" and exits 0.
"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\".*\")?\s*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML goes
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def markdown_lines(path):
    """(line number, line) outside fenced code blocks, code spans blanked."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            opened = FENCE.match(line)
            if fence:
                if opened and opened.group(1) == fence:
                    fence = None
                continue
            if opened:
                fence = opened.group(1)
                continue
            yield number, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


_anchors = {}


def anchors(path):
    """The anchors a Markdown file's headings make."""
    if path not in _anchors:
        seen, found = {}, set()
        for _, line in markdown_lines(path):
            heading = HEADING.match(line)
            if not heading:
                continue
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else "%s-%d" % (base, count))
        for _, line in markdown_lines(path):
            # An explicit <a name="x"> or id="x" anchor counts too.
            found.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
        _anchors[path] = found
    return _anchors[path]


def links(path):
    for number, line in markdown_lines(path):
        for match in LINK.finditer(line):
            yield number, match.group(1)
        reference = REFERENCE.match(line)
        if reference:
            yield number, reference.group(1)


def problem(root, source, target):
    """What is wrong with one link of source, or None."""
    if EXTERNAL.match(target) or target.startswith("//"):
        return None
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        return "an absolute path: links are relative to the file"
    resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
    if not os.path.realpath(resolved).startswith(os.path.realpath(root) + os.sep):
        return "points outside the checkout"
    if not os.path.exists(resolved):
        return "no such file or folder: %s" % os.path.relpath(resolved, root)
    if anchor:
        if not resolved.endswith(".md") or os.path.isdir(resolved):
            return None  # an anchor into source (#L12) or HTML is not checked
        if anchor not in anchors(resolved):
            return "no heading makes #%s in %s" % (anchor, os.path.relpath(resolved, root))
    return None


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    sources = [os.path.join(root, "README.md")]
    doc = os.path.join(root, "doc")
    if os.path.isdir(doc):
        sources += sorted(os.path.join(doc, name) for name in os.listdir(doc) if name.endswith(".md"))
    broken = 0
    for source in sources:
        for number, target in links(source):
            why = problem(root, source, target)
            if why:
                print("%s:%d: (%s): %s" % (os.path.relpath(source, root), number, target, why))
                broken += 1
    if broken:
        print("%d broken link%s" % (broken, "" if broken == 1 else "s"))
        return 1
    print("ok: every relative link of README.md and doc/*.md resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
