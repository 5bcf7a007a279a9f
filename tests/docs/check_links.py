#!/usr/bin/env python3
"""docs.links: every relative link of the manual resolves.

    check_links.py ROOT [DOC...]   (default: README.md, CONTRIBUTING.md, docs/**/*.md)

A link is `[text](target)` or a reference definition `[name]: target`,
outside code blocks and inline code. Links with a scheme (https:, mailto:)
are not followed. For the others, the file (or folder) must exist, relative
to the document that links it, and a `#anchor` must be a heading of the
target file (or of the document itself for `(#anchor)`), by GitHub's rules:
the heading's text without its markup, lower-cased, every character that is
not a letter, digit, `_`, `-` or space dropped, spaces made `-`; the second
heading with the same anchor gets `-1`, the third `-2`. `<a id="...">` and
`<a name="...">` count as anchors too. Fails naming each broken link with
its document and line.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from manual_pages import manual_pages  # noqa: E402

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """(line number, line) for the lines outside fenced code blocks."""
    fence = None
    for i, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield i, line


def slug(heading):
    """GitHub's anchor for a heading's source text."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    t = re.sub(r"<[^>]+>", "", t)  # inline HTML
    t = t.replace("`", "")
    t = re.sub(r"(\*\*|__|\*)", "", t)  # emphasis marks (a lone _ inside a word stays)
    t = t.strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        text = open(path, encoding="utf-8").read()
        seen = {}
        out = set()
        for _, line in prose_lines(text):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                out.add(base if n == 0 else f"{base}-{n}")
                seen[base] = n + 1
            for a in HTML_ANCHOR.findall(line):
                out.add(a)
        cache[path] = out
    return cache[path]


def links(text):
    for n, line in prose_lines(text):
        bare = INLINE_CODE.sub("", line)
        for m in LINK.finditer(bare):
            yield n, m.group(2)
        m = REFDEF.match(bare)
        if m:
            yield n, m.group(1)


def default_docs(root):
    return manual_pages(root, reference=True)


def check(root, doc):
    path = os.path.join(root, doc)
    text = open(path, encoding="utf-8").read()
    errors = []
    count = 0
    for n, target in links(text):
        if SCHEME.match(target):
            continue
        count += 1
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            errors.append(f"{doc}:{n}: {target}: no such file {os.path.relpath(dest, root)}")
            continue
        if anchor:
            if os.path.isdir(dest) or not dest.endswith(".md"):
                errors.append(f"{doc}:{n}: {target}: an anchor into something that is not a markdown file")
            elif anchor not in anchors(dest):
                errors.append(f"{doc}:{n}: {target}: no heading with anchor #{anchor} in "
                              f"{os.path.relpath(dest, root)}")
    return count, errors


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    docs = argv[2:] or default_docs(root)
    total = 0
    errors = []
    for doc in docs:
        n, e = check(root, doc)
        total += n
        errors += e
    for e in errors:
        print(e)
    print(f"docs.links: {total} relative links in {len(docs)} documents, {len(errors)} broken")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
