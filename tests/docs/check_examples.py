#!/usr/bin/env python3
"""docs.examples: every xferbench example of the manual runs, and prints what it shows.

    check_examples.py [--bin XFERBENCH] [--launcher MPIEXEC] [--list] [--only TEXT]
                      ROOT [DOC...]

DOCs default to README.md and the pages under docs/ (but DESIGN.md, the
contributor's, and RESULTS.md, a record of past runs); CONTRIBUTING.md too.

What an example is. In a fenced code block (``` or ```sh/console/shell/
bash; other languages such as ```json are data, not run):
  - a block with `$ ` prompts is a session: each `$ ` line is a command (a
    trailing `\\` continues it on the next line) and the lines after it, up
    to the next prompt, are its output as the document shows it;
  - a block without prompts is a list of commands, one a line.
A command is an example when its program (after any VAR=value assignments)
is `xferbench`, or a launcher (`mpiexec`, `mpirun`, `srun`, `salloc`)
that starts `xferbench`. Other lines (`printf ... > hosts`, `head -3 FILE`,
comments) are not run. A line that looks like an example but sits in an
indented code block is an error: every example must be where this test
sees it.

How it runs. Each document's examples run in order, in one scratch folder
(so `-o a.json` written by one example is there for `plot a.json` after
it), with bash, on the host backend: the word `xferbench` becomes the
binary under test (--bin), the word `mpiexec` the launcher of the MPI that
binary is built with (the `launcher:` line of `xferbench --version`, or
--launcher), and `build/default/` the binary's build folder (for the fake
CANN runtime under build/default/tests/fake_cann). The environment hides
every GPU (CUDA_VISIBLE_DEVICES empty) and drops ASCEND_HOME_PATH, so
`auto` takes the host backend unless an example sets it itself. A command
must exit 0 (or the code an `exit` marker gives) within 120 s.

How output is compared. Every line the document shows after a command must
be a line of what the command printed (stdout and stderr together), in any
order, once both are normalised: numbers (with their sign and decimals)
are wildcards, the host's name and its CPU's are wildcards (the documents
show the build VM's: `vm`, `AMD EPYC`, ...), `1 device` is `N devices`,
and runs of spaces are one. Not compared: lines that are `...` or start
with `...` (the document's trim marks), and lines a `vary` marker names.
Rows of doctor's and fleet's verdict tables (`Check Where Verdict ...`)
are compared by their check and where only: a verdict and its reason
depend on how busy the machine is while the test runs.

Markers: HTML comments on the lines right before a block's opening fence,
invisible on GitHub, each with the reason where it takes one:

  <!-- example: skip: REASON -->              run none of the block's commands
  <!-- example: skip "TEXT": REASON -->       run none of its commands containing TEXT
  <!-- example: sub "A" "B": REASON -->       run its commands with A replaced by B
                                              (a smaller size on the 2-core test machine)
  <!-- example: exit N -->                    its commands exit N (exit N "TEXT": those containing TEXT;
                                              exit 0,1: either)
  <!-- example: background "TEXT" -->        commands containing TEXT (a server) start in the
                                              background; after the block they must exit 0 within 30 s
  <!-- example: no-output: REASON -->         do not compare the output shown
  <!-- example: vary "TEXT": REASON -->       output lines containing TEXT are not compared
                                              ("^TEXT": the lines that start with it)

`plot` and `report` need a Python with matplotlib: where xferbench says it
has none (exit 2), that command counts as skipped, with a note.

Exit status 0 when every example passed, 1 when one failed (each failure is
printed with the document, line, command, exit code, the shown lines that
were not found and the end of the output), 2 on bad usage or a malformed
marker.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from manual_pages import manual_pages  # noqa: E402
import tempfile
import time

RUN_LANGS = {"", "sh", "shell", "console", "bash", "shell-session"}
LAUNCHERS = {"mpiexec", "mpirun", "srun", "salloc"}
MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```|~~~)\s*([\w+-]*)")
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
HEADER = re.compile(r"· (\d+) devices? · (\S+) · (.+?) \((\d+) cores\)")
# A row of doctor's or fleet's verdict table: check, where, verdict, measured figure, ...
VERDICT_ROW = re.compile(r"^(\S+\s+.+?)\s+(PASS|WARN|FAIL|-)\s+-?[\d.]+(?:e[-+]?\d+)?\s+\S+\s+\S+(\s|$)")
DOC_HOST = "vm"
DOC_CPUS = ["Intel(R) Xeon(R) Processor", "Intel Xeon @ 2.60GHz", "AMD EPYC"]
TIMEOUT_S = 120


class Marker:
    def __init__(self, kind, args, reason, where):
        self.kind, self.args, self.reason, self.where = kind, args, reason, where


def parse_marker(text, where):
    """`kind "arg" "arg": reason` (the reason may be absent where the kind needs none)."""
    m = re.match(r"^([a-z-]+)\s*(.*)$", text)
    if not m:
        raise ValueError(f"{where}: malformed example marker: {text}")
    kind, rest = m.group(1), m.group(2)
    args = []
    while True:
        rest = rest.lstrip()
        a = re.match(r'^"((?:[^"\\]|\\.)*)"', rest)
        if a:
            args.append(a.group(1).replace('\\"', '"'))
            rest = rest[a.end():]
            continue
        n = re.match(r"^(\d+(?:,\d+)*)(?=\s|:|$)", rest)
        if n and kind == "exit" and not args:
            args.append(n.group(1))
            rest = rest[n.end():]
            continue
        break
    rest = rest.strip()
    reason = rest[1:].strip() if rest.startswith(":") else rest
    need = {"skip": (0, 1, True), "sub": (2, 2, True), "exit": (1, 2, False),
            "background": (1, 1, False), "no-output": (0, 0, True), "vary": (1, 1, False)}
    if kind not in need:
        raise ValueError(f"{where}: unknown example marker kind '{kind}'")
    lo, hi, needs_reason = need[kind]
    if not lo <= len(args) <= hi:
        raise ValueError(f"{where}: marker '{kind}' takes {lo}..{hi} quoted arguments: {text}")
    if needs_reason and not reason:
        raise ValueError(f"{where}: marker '{kind}' needs a reason after ':': {text}")
    if kind == "exit" and not re.fullmatch(r"\d+(,\d+)*", args[0]):
        raise ValueError(f"{where}: exit marker needs a number first: {text}")
    return Marker(kind, args, reason, where)


class Example:
    def __init__(self, doc, line, command, shown, markers, block):
        self.doc, self.line, self.command, self.shown, self.markers = doc, line, command, shown, markers
        self.block = block  # the line of its block's opening fence

    def marked(self, kind):
        """Markers of this kind that apply to this command."""
        out = []
        for m in self.markers:
            if m.kind != kind:
                continue
            if kind in ("skip", "exit", "background") and len(m.args) > (1 if kind == "exit" else 0):
                text = m.args[-1]
                if text not in self.command:
                    continue
            out.append(m)
        return out


def strip_comment(line):
    """The command without a trailing shell comment (` # ...` outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def is_example(command):
    """True when the command's program is xferbench, or a launcher that starts it."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and ASSIGN.match(words[0]):
        words.pop(0)
    if not words:
        return False
    if words[0] == "xferbench":
        return True
    return words[0] in LAUNCHERS and "xferbench" in words


def blocks(lines):
    """(first line number, language, lines, markers) of each fenced block, and stray examples."""
    out, stray = [], []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            s = lines[i]
            if (s.startswith("    ") and i > 0 and (lines[i - 1].strip() == "" or lines[i - 1].startswith("    "))
                    and is_example(strip_comment(s.strip().removeprefix("$ ")))):
                stray.append(i + 1)
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        markers = []
        k = i - 1
        while k >= 0 and MARKER.match(lines[k]):
            markers.insert(0, (k + 1, MARKER.match(lines[k]).group(1)))
            k -= 1
        j = i + 1
        body = []
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        out.append((i + 2, lang, body, markers))
        i = j + 1
    return out, stray


def examples(doc, text):
    lines = text.split("\n")
    found, stray = blocks(lines)
    errors = [f"{doc}:{n}: an example in an indented code block: put it in a fenced block" for n in stray]
    out = []
    for first, lang, body, raw_markers in found:
        try:
            markers = [parse_marker(t, f"{doc}:{n}") for n, t in raw_markers]
        except ValueError as e:
            errors.append(str(e))
            continue
        if lang not in RUN_LANGS:
            if markers:
                errors.append(f"{doc}:{raw_markers[0][0]}: example marker on a ```{lang} block, which is not run")
            continue
        session = any(l.startswith("$ ") for l in body)
        cmds = []  # (line number, command, shown output)
        n = 0
        while n < len(body):
            line = body[n]
            if session and not line.startswith("$ "):
                if cmds:
                    cmds[-1][2].append(line)
                n += 1
                continue
            start = n
            cmd = line[2:] if session else line
            while cmd.rstrip().endswith("\\") and n + 1 < len(body):
                n += 1
                cmd = cmd.rstrip()[:-1] + " " + body[n].strip()
            cmds.append((first + start, strip_comment(cmd.strip()), []))
            n += 1
        runnable = [Example(doc, ln, c, shown, markers, first) for ln, c, shown in cmds if is_example(c)]
        if markers and not runnable:
            errors.append(f"{doc}:{raw_markers[0][0]}: example marker on a block without an xferbench example")
        for m in markers:
            if m.kind in ("sub", "background") or (m.kind in ("skip", "exit") and len(m.args) > (m.kind == "exit")):
                if not any(m.args[-1 if m.kind != "sub" else 0] in e.command for e in runnable):
                    errors.append(f"{m.where}: \"{m.args[0 if m.kind == 'sub' else -1]}\" is in no command of the block")
        out += runnable
    return out, errors


def normalise(line, host, cpus):
    line = HEADER.sub(lambda m: "· N devices · <host> · <cpu> (N cores)", line)
    for cpu in cpus:
        line = line.replace(cpu, "<cpu>")
    if host:
        line = re.sub(r"(?<![\w.-])" + re.escape(host) + r"(?![\w.-])", "<host>", line)
    line = NUMBER.sub("N", line)
    return " ".join(line.split())


def compare(shown, actual, example, env_host, env_cpu):
    """The shown lines not found in the actual output (normalised)."""
    vary = [m.args[0] for m in example.marked("vary")]
    have = set()
    rows = set()
    for line in actual.split("\n"):
        norm = normalise(line, env_host, [env_cpu])
        have.add(norm)
        v = VERDICT_ROW.match(line)
        if v:
            rows.add(normalise(v.group(1), env_host, [env_cpu]))
    missing = []
    for line in shown:
        s = line.strip()
        if not s or s.startswith("...") or any(s.startswith(t[1:]) if t.startswith("^") else t in line
                                               for t in vary):
            continue
        v = VERDICT_ROW.match(line)
        if v:
            if normalise(v.group(1), DOC_HOST, DOC_CPUS) not in rows:
                missing.append(line)
            continue
        if normalise(line, DOC_HOST, DOC_CPUS) not in have:
            missing.append(line)
    return missing


def shell_command(example, xb, launcher, build_dir):
    cmd = example.command
    for m in example.markers:
        if m.kind == "sub" and m.args[0] in cmd:
            cmd = cmd.replace(m.args[0], m.args[1])
    cmd = re.sub(r"(?<![\w/.-])xferbench(?![\w.-])", lambda _: shlex.quote(xb), cmd)
    cmd = re.sub(r"(?<![\w/.-])mpiexec(?![\w.-])", lambda _: launcher, cmd)
    cmd = re.sub(r"(?<![\w/.-])build/default/", lambda _: build_dir.rstrip("/") + "/", cmd)
    return cmd


def run_env():
    env = dict(os.environ)
    for k in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_RT_VISIBLE_DEVICES"):
        env.pop(k, None)
    env["CUDA_VISIBLE_DEVICES"] = ""
    # An Open MPI build's mpirun, as the openmpi test preset runs it.
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def start(cmd, cwd, env):
    return subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True)


def finish(proc, timeout):
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out, True


def host_and_cpu(xb, env):
    import json
    try:
        out = subprocess.run([xb, "list", "--backend", "host", "--format", "json"], env=env,
                             capture_output=True, text=True, timeout=60).stdout
        e = json.loads(out)["env"]
        return e.get("host", ""), e.get("cpu", "")
    except Exception:  # the comparison then only loses its host/CPU wildcards
        return "", ""


def launcher_of(xb):
    out = subprocess.run([xb, "--version"], capture_output=True, text=True, timeout=60).stdout
    for line in out.split("\n"):
        if line.startswith("launcher:"):
            words = line.split(":", 1)[1].split()
            if words:
                return words[0]
    return "mpiexec"


def default_docs(root):
    return manual_pages(root)


def main(argv):
    ap = argparse.ArgumentParser(description="run the manual's xferbench examples")
    ap.add_argument("--bin", default=None, help="the xferbench binary (default ROOT/build/default/xferbench)")
    ap.add_argument("--launcher", default=None, help="MPI launcher (default: the `launcher:` of --version)")
    ap.add_argument("--list", action="store_true", help="list the examples and what would run; run nothing")
    ap.add_argument("--only", default=None, help="run only examples whose command contains TEXT")
    ap.add_argument("root")
    ap.add_argument("docs", nargs="*")
    a = ap.parse_args(argv[1:])
    root = a.root
    xb = os.path.abspath(a.bin or os.path.join(root, "build", "default", "xferbench"))
    docs = a.docs or default_docs(root)
    all_examples, errors = [], []
    for doc in docs:
        ex, err = examples(doc, open(os.path.join(root, doc), encoding="utf-8").read())
        all_examples += ex
        errors += err
    for e in errors:
        print(e)
    if errors:
        return 2
    if a.list:
        for e in all_examples:
            skip = e.marked("skip")
            state = f"skip: {skip[0].reason}" if skip else "run"
            print(f"{e.doc}:{e.line}: [{state}] {e.command}")
        return 0
    if not os.access(xb, os.X_OK):
        print(f"docs.examples: no binary at {xb}")
        return 2
    launcher = a.launcher or launcher_of(xb)
    env = run_env()
    env_host, env_cpu = host_and_cpu(xb, env)
    build_dir = os.path.dirname(xb)
    failures, passed, skipped = [], 0, 0
    t_all = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="xferbench-docs-")
    try:
        by_doc = {}
        for e in all_examples:
            by_doc.setdefault(e.doc, []).append(e)
        for doc, exs in by_doc.items():
            cwd = os.path.join(scratch, doc.replace("/", "_"))
            os.makedirs(cwd)
            background = []  # (example, process)
            block_of = None
            for e in exs + [None]:
                block = e.block if e else None
                if background and (e is None or block != block_of):
                    for be, p in background:
                        rc, out, timed_out = finish(p, 30)
                        if timed_out or rc != 0:
                            failures.append((be, rc, out, [], "the background command did not exit 0 within 30 s"
                                             if not timed_out else "the background command was still running 30 s after its block"))
                    background = []
                if e is None:
                    break
                block_of = block
                if a.only and a.only not in e.command:
                    continue
                skips = e.marked("skip")
                if skips:
                    skipped += 1
                    print(f"skip  {e.doc}:{e.line}: {e.command}  ({skips[0].reason})")
                    continue
                cmd = shell_command(e, xb, launcher, build_dir)
                if e.marked("background"):
                    background.append((e, start(cmd, cwd, env)))
                    time.sleep(0.5)
                    print(f"bg    {e.doc}:{e.line}: {e.command}")
                    continue
                want = [int(c) for c in e.marked("exit")[0].args[0].split(",")] if e.marked("exit") else [0]
                t0 = time.monotonic()
                rc, out, timed_out = finish(start(cmd, cwd, env), TIMEOUT_S)
                dt = time.monotonic() - t0
                if (rc == 2 and re.search(r"^xferbench (plot|report)\b", e.command.split("&&")[-1].strip())
                        and "matplotlib" in out):
                    skipped += 1
                    print(f"skip  {e.doc}:{e.line}: {e.command}  (no Python with matplotlib here)")
                    continue
                missing = [] if e.marked("no-output") else compare(e.shown, out, e, env_host, env_cpu)
                if timed_out:
                    failures.append((e, rc, out, missing, f"still running after {TIMEOUT_S} s"))
                elif rc not in want:
                    failures.append((e, rc, out, missing, f"exit code {rc}, the document expects "
                                     + " or ".join(map(str, want))))
                elif missing:
                    failures.append((e, rc, out, missing, "output shown in the document not printed"))
                else:
                    passed += 1
                    print(f"ok    {e.doc}:{e.line}: {e.command}  ({dt:.1f} s)")
                    continue
                print(f"FAIL  {e.doc}:{e.line}: {e.command}  ({dt:.1f} s)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for e, rc, out, missing, why in failures:
        print(f"\n{e.doc}:{e.line}: FAILED: {why}\n  command: {e.command}")
        if missing:
            print("  shown in the document, not in the output:")
            for m in missing[:10]:
                print(f"    | {m}")
        tail = out.rstrip("\n").split("\n")[-15:]
        print("  the output ended with:")
        for t in tail:
            print(f"    > {t}")
    print(f"\ndocs.examples: {passed} passed, {len(failures)} failed, {skipped} skipped "
          f"({len(all_examples)} examples in {len(docs)} documents, {time.monotonic() - t_all:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
