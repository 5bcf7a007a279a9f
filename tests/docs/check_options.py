#!/usr/bin/env python3
"""docs.options: the manual and the `--help` texts agree on option names.

    check_options.py XFERBENCH ROOT [DOC...]

DOCs default to README.md, CONTRIBUTING.md and the pages under docs/ (but
DESIGN.md and RESULTS.md). Two checks:

1. Every `--option` a document names is an option of the command it belongs
   to, as that command's `--help` declares it (its Options: list):
   - after `xferbench CMD` (or `CMD` at the start of inline code, such as
     `doctor --checks engine`), in code or inline code: an option of CMD
     (`engine serve`, `engine client`, ... for the engine);
   - elsewhere (prose, tables, output lines): an option of one of the
     commands the page names in `<!-- help: CMD, CMD -->` or
     `<!-- help-also: CMD -->`, or of any command on a page without them;
   - options of other programs on a command line before `xferbench`
     (`srun --mpi=pmi2 xferbench ...`), or on a line of another program
     (`cmake`, `make`, `ctest`, `dnf`, ...), are not xferbench's and are
     not checked; others that a page names in prose are listed in
     `<!-- not-options: --mpi (srun's) ... -->`, with whose they are.
2. Every option of a command a page documents (`<!-- help: ... -->`, not
   `help-also`) is named on that page, but the shared options, which
   docs/running.md documents for every command (and must name).

Fails listing each option that is not where it should be, with the
document and line.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from manual_pages import manual_pages  # noqa: E402

OPTION = re.compile(r"(?<![\w-])--[a-zA-Z][\w-]*")
SHORT = re.compile(r"(?<![\w-])-[a-zA-Z](?![\w-])")
HELP_DECL = re.compile(r"^\s{2}(?:(-\w),)?(--[\w-]+)")
HELP_MARK = re.compile(r"^\s*<!--\s*help(-also)?:\s*(.*?)\s*-->\s*$")
NOT_OPTIONS = re.compile(r"^\s*<!--\s*not-options:(.*?)-->\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^\s*(```|~~~)")
COMMANDS = ["list", "topo", "copy", "remote", "latency", "coll", "engine serve", "engine client",
            "engine selftest", "engine fanin", "kv", "ep", "fleet", "gemm-ar", "doctor", "plot", "report",
            "compare"]
# Programs whose options a line of their own carries (not xferbench's).
OTHER_PROGRAMS = {"cmake", "make", "ctest", "dnf", "apt-get", "git", "srun", "salloc", "sbatch", "mpirun",
                  "mpiexec", "cpack", "ucx_perftest", "osu_latency", "nvbandwidth", "module", "bash",
                  "python3", "scontrol", "docker", "apptainer", "torchrun"}
SHARED = {"--help", "--fields", "--backend", "--format", "--output", "--quiet", "--min-bw", "--duration",
          "--cycles", "--ranks"}


def declared(xb, command):
    """The long options `xferbench COMMAND --help` declares, and {short: long} of their aliases."""
    out = subprocess.run([xb] + command.split() + ["--help"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"xferbench {command} --help exited {out.returncode}: {out.stderr.strip()}")
    opts, aliases, in_options = set(), {}, False
    for line in out.stdout.split("\n"):
        if line.startswith("Options:"):
            in_options = True
            continue
        if in_options and line and not line.startswith(" "):
            in_options = False
        if in_options:
            m = HELP_DECL.match(line)
            if m:
                opts.add(m.group(2))
                if m.group(1):
                    aliases[m.group(1)] = m.group(2)
    return opts, aliases


def command_at(words, i):
    """The xferbench command that words[i:] start with, or None."""
    two = " ".join(words[i:i + 2])
    if two in COMMANDS:
        return two
    if i < len(words) and words[i] in COMMANDS:
        return words[i]
    if i < len(words) and words[i] == "engine":
        return "engine"  # `engine --lanes` and the like: any engine subcommand
    return None


def options_in(words, short):
    out = [o for w in words for o in OPTION.findall(w)]
    if short:
        out += [o for w in words for o in SHORT.findall(w)]
    return out


def split_code(text, span=False):
    """(options owned by a command: [(cmd, opt)], options left to the page) of one code line or span.
    Short options count where a command owns them, and in a span that starts with one (`-n, --iters`)."""
    words = text.replace("`", " ").split()
    for i, w in enumerate(words):
        if re.search(r"(^|/)xferbench$", w):
            cmd = command_at(words, i + 1)
            rest = words[i + 1:]
            if cmd:
                return [(cmd, o) for o in options_in(rest, True)], []
            return [], options_in(rest, False)
    if words and (words[0] in OTHER_PROGRAMS or words[0].startswith(("bench/", "build/", "scripts/", "./"))):
        return [], []
    cmd = command_at(words, 0)
    if cmd:
        return [(cmd, o) for o in options_in(words, True)], []
    return [], options_in(words, span and bool(words) and words[0].startswith("-"))


def mentions(text):
    """(line, command or None, option) for every option a document names."""
    out = []
    fence, session = None, False
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if NOT_OPTIONS.match(line) or HELP_MARK.match(line):
            continue
        m = FENCE.match(line)
        if m:
            if fence:
                fence = None
            else:
                fence = m.group(1)
                body = []
                for later in lines[n:]:
                    if later.strip().startswith(fence):
                        break
                    body.append(later)
                session = any(b.strip().startswith("$ ") for b in body)
            continue
        if fence:
            code = line.strip()
            if session and not code.startswith("$ "):
                out += [(n, None, o) for o in OPTION.findall(code)]  # output: prose
                continue
            owned, loose = split_code(code.removeprefix("$ "))
            out += [(n, c, o) for c, o in owned] + [(n, None, o) for o in loose]
            continue
        for span in INLINE_CODE.finditer(line):
            owned, loose = split_code(span.group(2), span=True)
            out += [(n, c, o) for c, o in owned] + [(n, None, o) for o in loose]
        prose = INLINE_CODE.sub(" ", line)
        out += [(n, None, o) for o in OPTION.findall(prose)]
    return out


def default_docs(root):
    return manual_pages(root)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    xb, root = argv[1], argv[2]
    docs = argv[3:] or default_docs(root)
    helps, aliases = {}, {}
    for c in COMMANDS:
        helps[c], aliases[c] = declared(xb, c)
    helps["engine"] = set().union(*(helps[c] for c in COMMANDS if c.startswith("engine ")))
    aliases["engine"] = {k: v for c in COMMANDS if c.startswith("engine ") for k, v in aliases[c].items()}
    top, _ = declared(xb, "")  # --help, --version: valid on every page
    everything = set().union(top, *helps.values())
    errors = []
    running_named = set()
    for doc in docs:
        text = open(os.path.join(root, doc), encoding="utf-8").read()
        documented, also = [], []
        for m in filter(None, map(HELP_MARK.match, text.split("\n"))):
            names = [c.strip() for c in m.group(2).split(",") if c.strip()]
            for c in names:
                if c not in helps:
                    errors.append(f"{doc}: <!-- help: --> names '{c}', which is no command")
            (also if m.group(1) else documented).extend(c for c in names if c in helps)
        exceptions = set()
        for m in filter(None, map(NOT_OPTIONS.match, text.split("\n"))):
            exceptions |= set(OPTION.findall(m.group(1)))
        page = set().union(top, *(helps[c] for c in documented + also)) if documented + also else everything
        named = set()
        for n, cmd, opt in mentions(text):
            named.add(opt)
            if not opt.startswith("--"):  # a short option: it names its long one, for check 2
                for c in ([cmd] if cmd else documented):
                    if opt in aliases[c]:
                        named.add(aliases[c][opt])
                continue
            if opt in exceptions:
                continue
            if cmd:
                if opt not in helps[cmd]:
                    errors.append(f"{doc}:{n}: {opt} is not an option of `xferbench {cmd}` (its --help)")
            elif opt not in page:
                whose = ", ".join(documented + also) or "any command"
                errors.append(f"{doc}:{n}: {opt} is not an option of {whose} (their --help), "
                              "nor listed in <!-- not-options: -->")
        if doc == "docs/running.md":
            running_named = named | {aliases["copy"].get(o, o) for o in named}
        for c in documented:
            for opt in sorted(helps[c] - SHARED - named):
                errors.append(f"{doc}: `xferbench {c}` has {opt} (its --help), which this page never names")
    if "docs/running.md" in docs:
        for opt in sorted(SHARED - running_named):
            errors.append(f"docs/running.md: the shared option {opt} is not named")
    for e in errors:
        print(e)
    print(f"docs.options: {len(docs)} documents against the --help of {len(COMMANDS)} commands, "
          f"{len(errors)} disagreements")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
