#!/usr/bin/python3
"""Engine soak on loopback: one `xferbench engine serve`, well-behaved clients
in a loop (each verified), and meanwhile a hostile mix: garbage bytes,
truncated and oversized frames, bad headers and hellos, wrong tokens,
connect-and-vanish, clients killed (SIGKILL) mid-transfer, and slow readers
that stall in the middle of a frame past the server's I/O timeout.

    soak.py [--xferbench XB] [--minutes M | --rounds N] [--tls shm|tcp] [--seed S]

A round: --clients-at-once well-behaved clients, --victims clients killed
once the server has accepted them, and one of each quick hostile input, all
at once. Every --slow-every seconds a round starts with a slow reader, which
stalls the single-threaded server for its I/O timeout (10 s) while the
round's clients arrive; --slow-overlap runs slow readers on their own clock
instead, where a client message already waiting when a stall starts times
out (head-of-line blocking). Over TCP, UCX 1.13 aborts the server when a
client dies while the server's worker is not progressing, so there
(--kill-during-stall auto) no client is killed during a stall;
--kill-during-stall yes shows it.

The server exits once --clients sessions have ended (served + failed;
rejected connections do not count), and --clients is also its slot count.
The soak plans rounds * (clients + victims) + 1 sessions; whatever a
time-bounded run leaves unused is filled at the end by small well-behaved
clients, the last of which (alone) shows the server still serves and makes
it exit.

One JSON document on stdout, a short summary on stderr. Exit 0 when no
well-behaved transfer was lost, all were verified, the final client
succeeded, the server exited with the expected code (1 when a client was
killed) and its RSS grew by less than --max-rss-growth-mib; 1 otherwise;
2 for bad arguments.
"""
import argparse
import collections
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

KIB = 1024
MIB = 1024 * KIB
MAGIC = b"XBEN"
VERSION = 2
MAX_PAYLOAD = 1 << 20
HEADER = 12
SERVER_IO_TIMEOUT = 10.0  # the server's bootstrap I/O timeout (ServerConfig::io_timeout_s)
SLOW_LEAD = 0.3  # seconds a slow reader holds the server before a round's clients start
SLOW_HOLD = SERVER_IO_TIMEOUT + 1.5  # seconds a slow reader keeps its connection
SLOT = 512 * KIB  # bytes per client slot; clients move at most this per loop
VICTIM_LOOPS = 1000000  # victims run "forever"; their --loops (+ index) tags them in the log

MSG_HELLO, MSG_ACCEPT, MSG_REJECT, MSG_VERIFY, MSG_VERIFIED, MSG_BYE = range(1, 7)

RE_LISTEN = re.compile(r"listening on \S+:(\d+) ")
RE_ACCEPT = re.compile(r"client (\S+) accepted into slot (\d+) \([^)]*\) · (.*)$")
RE_DONE = re.compile(r"client (\S+) \(slot (\d+)\) done$")
RE_FAILED = re.compile(r"client (\S+) \(slot (\d+)\) failed: (.*)$")
RE_REJECTED = re.compile(r"rejected (\S+): (.*)$")
RE_SUMMARY = re.compile(r"done: (\d+) served, (\d+) failed, (\d+) rejected")


def frame(msg_type, payload=b"", length=None, version=VERSION, magic=MAGIC):
    n = len(payload) if length is None else length
    return magic + struct.pack("<HHI", version, msg_type, n) + payload


def lp_str(b):  # the wire's length-prefixed string: u64 length, bytes
    return struct.pack("<Q", len(b)) + b


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def norm_reason(reason):
    """'oversized message (123 bytes, limit 1048576)' -> 'oversized message (N bytes, limit N)'."""
    return re.sub(r"\d+", "N", reason)


class ServerLog:
    """Reads the server's stderr on a thread and keeps the tallies."""

    def __init__(self, stream, path):
        self.lines = []
        self.cond = threading.Condition()
        self.port = None
        self.accepted = {}  # who -> digest (latest)
        self.by_loops = {}  # the digest's loops= -> who (tags the victims)
        self.open = set()  # accepted, not ended
        self.n_accepted = 0
        self.done = collections.Counter()  # who -> count
        self.failed = {}  # who -> reason (latest)
        self.failed_reasons = collections.Counter()
        self.n_done = 0
        self.n_failed = 0
        self.rejected = collections.defaultdict(list)  # who -> [reason]
        self.n_rejected = 0
        self.summary = None
        self.other = []
        self._file = open(path, "w")  # the lines, with seconds since the server started
        self._t0 = time.monotonic()
        self._t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._t.start()

    def _read(self, stream):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._file.write(f"{time.monotonic() - self._t0:9.3f} {line}\n")
            self._file.flush()
            with self.cond:
                self.lines.append(line)
                self._parse(line)
                self.cond.notify_all()
        self._file.close()

    def _parse(self, line):
        body = line[len("engine: "):] if line.startswith("engine: ") else None
        if body is None:
            self.other.append(line)
            return
        m = RE_LISTEN.search(body)
        if m:
            self.port = int(m.group(1))
            return
        m = RE_ACCEPT.match(body)
        if m:
            self.accepted[m.group(1)] = m.group(3)
            lm = re.search(r"\bloops=(\d+)", m.group(3))
            if lm:
                self.by_loops[int(lm.group(1))] = m.group(1)
            self.open.add(m.group(1))
            self.n_accepted += 1
            return
        m = RE_DONE.match(body)
        if m:
            self.done[m.group(1)] += 1
            self.open.discard(m.group(1))
            self.n_done += 1
            return
        m = RE_FAILED.match(body)
        if m:
            self.failed[m.group(1)] = m.group(3)
            self.failed_reasons[norm_reason(m.group(3))] += 1
            self.open.discard(m.group(1))
            self.n_failed += 1
            return
        m = RE_REJECTED.match(body)
        if m:
            self.rejected[m.group(1)].append(m.group(2))
            self.n_rejected += 1
            return
        m = RE_SUMMARY.match(body)
        if m:
            self.summary = body
            return
        if body.startswith("wrote a new token") or body.startswith("token "):
            return
        self.other.append(line)

    def wait_for(self, pred, timeout):
        """Waits until pred() (called under the lock) is true; returns its value or None."""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                v = pred()
                if v:
                    return v
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.5))

    def ended(self):
        with self.cond:
            return self.n_done + self.n_failed

    def join(self, timeout):
        self._t.join(timeout)


class Soak:
    def __init__(self, args):
        self.a = args
        self.rng = random.Random(args.seed)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.abort_reason = None
        self.work = tempfile.mkdtemp(prefix="xb-soak-", dir=args.workdir)
        self.token_file = os.path.join(self.work, "token")
        self.env = dict(os.environ)
        self.env.pop("XFERBENCH_TOKEN", None)
        if args.tls == "tcp":
            self.env["UCX_TLS"] = "tcp"
        else:
            self.env.pop("UCX_TLS", None)  # UCX's default: shared memory on one host
        self.hostile = collections.Counter()  # kind -> inputs sent
        self.hostile_ports = collections.defaultdict(list)  # kind -> [local port]
        self.hostile_order = []  # (kind, local port), in the order of connection
        self.hostile_notes = collections.Counter()  # unexpected hostile outcomes
        self.wb_runs = 0
        self.wb_verified = 0
        self.wb_lost = []  # details of lost well-behaved runs
        self.wb_fill = 0
        self.transports = collections.Counter()
        self.victims = collections.Counter()
        self.victim_whos = []
        self.wrong_token_runs = 0
        self.connections = 0
        self.rounds_run = 0
        self.seq = 0
        self.procs = set()  # live client processes, killed on abort
        # Kills and slow readers: a slow reader stalls the server's only thread; over TCP,
        # a client killed while the server's UCX worker is not progressing aborts the server
        # (UCX 1.13: "Fatal: unexpected error: Endpoint timeout" in ucp_get/put_req_handler).
        self.kill_during_stall = (args.kill_during_stall == "yes" or
                                  args.kill_during_stall == "auto" and args.tls == "shm")
        self.gate = threading.Condition()
        self.stalling = False  # a slow reader holds the server
        self.pending_kills = 0  # victims killed, the server not yet past them

    # ---- helpers ----------------------------------------------------------
    def note(self, counter, key, n=1):
        with self.lock:
            counter[key] += n

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def fail_now(self, why):
        with self.lock:
            if self.abort_reason is None:
                self.abort_reason = why
        self.stop.set()

    def halted(self):  # the server died or the soak is aborting
        return self.server.poll() is not None or self.abort_reason is not None

    def server_alive(self):
        return self.server.poll() is None

    def popen(self, cmd, env, **kw):
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, **kw)
        with self.lock:
            self.procs.add(p)
            self.connections += 1
        return p

    def reap(self, p):
        with self.lock:
            self.procs.discard(p)

    def client_cmd(self, out, op, total, block, steps, loops, extra=()):
        return [self.a.xferbench, "engine", "client", "--connect", f"127.0.0.1:{self.port}",
                "--token-file", self.token_file, "--op", op, "-t", str(total), "-k", str(block),
                "--block-steps", str(steps), "--loops", str(loops), "--connect-timeout", "10",
                "--format", "json", "-o", out, "-q", *extra]

    # ---- the server -------------------------------------------------------
    def start_server(self, n_total):
        self.n_total = n_total
        self.size = n_total * SLOT
        accept_wait = self.planned_s + 900
        cmd = [self.a.xferbench, "engine", "serve", "--listen", "127.0.0.1:0", "--size",
               str(self.size), "--clients", str(n_total), "--token-file", self.token_file,
               "--accept-wait", str(int(accept_wait))]
        self.server_cmd = cmd
        self.server = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log = ServerLog(self.server.stderr, os.path.join(self.work, "server.log"))
        if not self.log.wait_for(lambda: self.log.port or self.server.poll() is not None, 60):
            raise RuntimeError("the server did not start listening within 60 s")
        if self.log.port is None:
            raise RuntimeError(f"the server exited with {self.server.poll()} before listening")
        self.port = self.log.port
        end = time.monotonic() + 10
        while not (os.path.exists(self.token_file) and os.path.getsize(self.token_file) > 0):
            if time.monotonic() > end:
                raise RuntimeError("no token file from the server")
            time.sleep(0.05)
        self.rss_start = rss_kib(self.server.pid)
        self.rss_samples = [self.rss_start]

    # ---- well-behaved clients ---------------------------------------------
    def wb_params(self, rng, small=False):
        if small:
            return "read,write", 64 * KIB, 64 * KIB, 1, 1, []
        op = rng.choice(["read", "write", "read,write", "read,write"])
        total = rng.choice([128 * KIB, 256 * KIB, 512 * KIB])
        block = rng.choice([4 * KIB, 16 * KIB, 64 * KIB, 128 * KIB])
        steps = 1
        while steps < 3 and block << steps <= total and rng.random() < 0.5:
            steps += 1
        loops = rng.randint(1, 3)
        extra = []
        if rng.random() < 0.4:
            extra = ["--async", "--batch", str(rng.choice([1, 4, 16]))]
        if rng.random() < 0.3 and (block << (steps - 1)) * 2 <= total:
            extra += ["--lanes", "2"]  # two lanes (workers, endpoints, threads) in one slot
        return op, total, block, steps, loops, extra

    def run_wb(self, seed, kind="wb"):
        """One well-behaved client; True when it exited 0 with every record ok and verified."""
        rng = random.Random(seed)
        n = self.next_seq()
        out = os.path.join(self.work, f"{kind}{n}.json")
        op, total, block, steps, loops, extra = self.wb_params(rng, small=kind != "wb")
        cmd = self.client_cmd(out, op, total, block, steps, loops, extra)
        t0 = time.monotonic()
        p = self.popen(cmd, self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = p.communicate(timeout=self.a.client_timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate(timeout=10)
            rc = "timeout"
        finally:
            self.reap(p)
        why = None
        if rc != 0:
            why = f"exit {rc}"
        else:
            try:
                with open(out) as f:
                    d = json.load(f)
                res = d.get("results", [])
                if not res:
                    why = "no records"
                elif not all(r.get("status") == "ok" and r.get("verified") is True for r in res):
                    why = "a record not ok or not verified: " + json.dumps(
                        [(r.get("case"), r.get("status"), r.get("verified"), r.get("reason"))
                         for r in res])
                else:
                    self.note(self.transports, d.get("summary", {}).get("transports", "?"))
            except (OSError, ValueError) as e:
                why = f"bad JSON output: {e}"
        with self.lock:
            self.wb_runs += 1
            if kind == "fill":
                self.wb_fill += 1
            if why is None:
                self.wb_verified += 1
            else:
                self.wb_lost.append({
                    "kind": kind, "why": why, "cmd": " ".join(cmd[2:]),
                    "seconds": round(time.monotonic() - t0, 2),
                    "stderr": err.decode("utf-8", "replace")[-2000:]})
        if why is None:
            try:
                os.unlink(out)
            except OSError:
                pass
        return why is None

    # ---- victims: clients killed mid-transfer -----------------------------
    def run_victim(self, seed, in_transfer=None, kill_now=None):
        """A client killed mid-transfer. With events: sets `in_transfer` once it is well into
        its transfers, then waits for `kill_now` (a round's slow reader stalls the server)."""
        rng = random.Random(seed)
        n = self.next_seq()
        gated = False
        loops = VICTIM_LOOPS + n
        op = rng.choice(["read", "write", "read,write"])
        extra = ["--async", "--batch", "8"] if rng.random() < 0.5 else []
        cmd = self.client_cmd(os.path.join(self.work, f"victim{n}.json"), op, SLOT, 16 * KIB, 1,
                              loops, extra)
        p = self.popen(cmd, self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.note(self.victims, "started")
        try:
            self.log.wait_for(lambda: loops in self.log.by_loops or p.poll() is not None
                              or self.halted(), 40)
            with self.log.cond:
                who = self.log.by_loops.get(loops)
            if p.poll() is not None:
                self.note(self.victims, f"exited by itself (rc {p.returncode})")
                return
            if not who:
                self.note(self.victims, "not accepted within 40 s (killed)")
                return
            time.sleep(rng.uniform(0.1, 0.8))  # well into its transfers
            if in_transfer is not None:
                in_transfer.set()
                kill_now.wait(SLOW_HOLD + 70)
            if p.poll() is not None:
                self.note(self.victims, f"exited by itself (rc {p.returncode})")
                return
            with self.gate:  # see --kill-during-stall
                if not self.kill_during_stall:
                    self.gate.wait_for(lambda: not self.stalling or self.halted(),
                                       2 * SERVER_IO_TIMEOUT + 10)
                self.pending_kills += 1
                gated = True
                p.send_signal(signal.SIGKILL)
                if self.stalling:
                    self.note(self.victims, "of which while a slow reader stalled the server")
            self.note(self.victims, "killed mid-transfer")
            with self.lock:
                self.victim_whos.append(who)
            got = self.log.wait_for(lambda: who in self.log.failed or who not in self.log.open
                                    or self.halted(), SERVER_IO_TIMEOUT + 20)
            if self.server.poll() is not None and who not in self.log.failed:
                self.note(self.victims, "server died before logging its failure")
            elif not got:
                self.note(self.victims, "server did not log its failure within 30 s")
            if not self.kill_during_stall:
                time.sleep(0.5)  # the server's UCX worker gets past the dead peer
        finally:
            if in_transfer is not None:
                in_transfer.set()
            if gated:
                with self.gate:
                    self.pending_kills -= 1
                    self.gate.notify_all()
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.reap(p)

    # ---- hostile inputs from sockets ---------------------------------------
    def sock(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.settimeout(5)
        with self.lock:
            self.connections += 1
        return s

    def hostile_send(self, kind, data, want_reply=False, linger0=False):
        try:
            s = self.sock()
        except OSError as e:
            self.note(self.hostile_notes, f"{kind}: connect failed: {e}")
            return
        try:
            with self.lock:
                self.hostile_ports[kind].append(s.getsockname()[1])
                self.hostile_order.append((kind, s.getsockname()[1]))
            if data:
                s.sendall(data)
            self.note(self.hostile, kind)
            if want_reply:  # a slow reader may stall the server for its I/O timeout
                s.settimeout(2 * SERVER_IO_TIMEOUT + 5)
                got = b""
                try:
                    while len(got) < HEADER:
                        b = s.recv(HEADER - len(got))
                        if not b:
                            break
                        got += b
                except OSError:
                    pass
                if len(got) < HEADER or got[:4] != MAGIC or \
                        struct.unpack("<H", got[6:8])[0] != MSG_REJECT:
                    self.note(self.hostile_notes, f"{kind}: no reject frame ({got[:12]!r})")
            if linger0:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError as e:
            self.note(self.hostile_notes, f"{kind}: {type(e).__name__}")
        finally:
            s.close()

    def hostile_round(self, seed):
        rng = random.Random(seed)
        kinds = ["garbage", "truncated", "oversized", "bad_header", "bad_hello", "no_hello",
                 "vanish", "wrong_token"]
        rng.shuffle(kinds)
        for kind in kinds:
            if self.stop.is_set():
                return
            if kind == "garbage":
                if rng.random() < 0.3:
                    data = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"
                else:
                    data = bytes(rng.getrandbits(8) for _ in range(rng.randint(HEADER, 2048)))
                    if data[:4] == MAGIC:
                        data = b"xben" + data[4:]
                self.hostile_send(kind, data)
            elif kind == "truncated":
                length = rng.choice([8, 64, 4096, MAX_PAYLOAD])
                data = frame(rng.choice([MSG_HELLO, MSG_VERIFY]), length=length)
                self.hostile_send(kind, data + os.urandom(rng.randrange(0, min(length, 4096))))
            elif kind == "oversized":
                length = rng.choice([MAX_PAYLOAD + 1, 1 << 24, 0x7FFFFFFF, 0xFFFFFFFF])
                self.hostile_send(kind, frame(MSG_HELLO, length=length) + b"x" * 64)
            elif kind == "bad_header":
                if rng.random() < 0.5:
                    data = frame(MSG_HELLO, b"", version=rng.choice([0, 1, 3, 0xFFFF]))
                else:
                    data = frame(rng.choice([0, 7, 99, 0xFFFF]), b"")
                self.hostile_send(kind, data)
            elif kind == "bad_hello":
                payloads = [os.urandom(rng.randint(0, 64)),
                            lp_str(b"x" * 5000) + lp_str(b"") + lp_str(b"host"),  # token too long
                            struct.pack("<Q", 1 << 62),  # string longer than the message
                            lp_str(b"tok") + lp_str(b"d") + lp_str(b"host") + b"tail"]
                self.hostile_send(kind, frame(MSG_HELLO, rng.choice(payloads)), want_reply=True)
            elif kind == "no_hello":
                t = rng.choice([MSG_VERIFY, MSG_BYE, MSG_ACCEPT])
                payload = struct.pack("<QQQ", 0, 4096, 1) if t == MSG_VERIFY else b""
                self.hostile_send(kind, frame(t, payload), want_reply=True)
            elif kind == "vanish":
                self.hostile_send(kind, b"", linger0=rng.random() < 0.5)
            elif kind == "wrong_token":
                self.run_wrong_token(rng)
            time.sleep(rng.uniform(0, 0.05))

    def run_wrong_token(self, rng):
        env = dict(self.env)
        env["XFERBENCH_TOKEN"] = "wrong-" + "%08x" % rng.getrandbits(32)
        cmd = [self.a.xferbench, "engine", "client", "--connect", f"127.0.0.1:{self.port}",
               "-t", "64K", "-k", "64K", "--loops", "1", "-q"]
        p = self.popen(cmd, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = p.communicate(timeout=SERVER_IO_TIMEOUT * 3 + 10)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate(timeout=10)
        finally:
            self.reap(p)
        self.note(self.hostile, "wrong_token")
        with self.lock:
            self.wrong_token_runs += 1
        if p.returncode != 2 or b"wrong token" not in err:
            self.note(self.hostile_notes,
                      f"wrong_token: exit {p.returncode}: "
                      f"{err.decode('utf-8', 'replace').strip()[-200:]}")

    # ---- slow readers: one at a time, each stalls the server -------------
    def slow_loop(self, seed):
        """--slow-overlap: slow readers on their own clock, whatever the clients are doing."""
        rng = random.Random(seed)
        next_t = time.monotonic() + self.a.slow_first
        while not self.stop.is_set():
            # Start one only if it ends before the planned end (a run stays bounded).
            if self.deadline is not None and \
                    max(time.monotonic(), next_t) + SLOW_HOLD > self.deadline:
                return
            if time.monotonic() < next_t:
                self.stop.wait(min(0.2, next_t - time.monotonic()))
                continue
            self.slow_one(rng.getrandbits(48))
            next_t = time.monotonic() + self.a.slow_every

    def slow_one(self, seed, started=None):
        """One slow reader: part of a frame, then silence past the server's I/O timeout.
        `started` is set once the server holds it (or it failed)."""
        rng = random.Random(seed)
        with self.gate:  # see --kill-during-stall
            if not self.kill_during_stall:
                self.gate.wait_for(lambda: self.pending_kills == 0 or self.halted(), 60)
            self.stalling = True
        s = None
        try:
            s = self.sock()
            port = s.getsockname()[1]
            with self.lock:
                self.hostile_ports["slow_reader"].append(port)
                self.hostile_order.append(("slow_reader", port))
            if rng.random() < 0.5:
                s.sendall(frame(MSG_HELLO, length=64)[:rng.randint(1, HEADER - 1)])
            else:
                s.sendall(frame(MSG_HELLO, length=64) + b"\0" * rng.randint(0, 63))
            self.note(self.hostile, "slow_reader")
            time.sleep(SLOW_LEAD)  # the server is in its blocking read by now
            if started:
                started.set()
            who = f"127.0.0.1:{port}"
            if not self.log.wait_for(lambda: who in self.log.rejected or self.halted(),
                                     SLOW_HOLD + 5) and not self.halted():
                self.note(self.hostile_notes, "slow_reader: not rejected in time")
        except OSError as e:
            self.note(self.hostile_notes, f"slow_reader: {type(e).__name__}: {e}")
        finally:
            if started:
                started.set()
            if s is not None:
                s.close()
            with self.gate:
                self.stalling = False
                self.gate.notify_all()

    # ---- rounds -----------------------------------------------------------
    def round(self, r, slow=False, stall_victim=False):
        """One round. With `slow`, a slow reader stalls the server first and the others
        arrive during the stall: a client's bootstrap deadline (10 s, like the server's I/O
        timeout) then starts after the stall did (see --slow-overlap)."""
        base = self.rng.getrandbits(48)
        threads = []
        if slow:
            kill_now = None
            if stall_victim:
                # A victim accepted before the stall, killed during it.
                in_transfer, kill_now = threading.Event(), threading.Event()
                t = self.spawn(self.run_victim, base + 400, in_transfer, kill_now)
                t.start()
                in_transfer.wait(60)
                threads.append(t)
            started = threading.Event()
            t = self.spawn(self.slow_one, base + 300, started)
            t.start()
            started.wait(SLOW_HOLD + 70)
            threads.append(t)
            if kill_now is not None:
                kill_now.set()
        for i in range(self.a.clients_at_once):
            threads.append(self.spawn(self.run_wb, base + i))
        for i in range(self.a.victims):
            threads.append(self.spawn(self.run_victim, base + 100 + i))
        if not self.a.no_hostile:
            threads.append(self.spawn(self.hostile_round, base + 200))
        for t in threads:
            if not t.is_alive():
                t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)
                if self.server.poll() is not None:
                    self.fail_now(f"the server exited early (code {self.server.returncode}) "
                                  f"in round {r}")
                    self.kill_clients()
                if time.monotonic() > self.hard_deadline:
                    self.fail_now("hard deadline passed during a round")
                    self.kill_clients()
        self.rounds_run += 1

    def spawn(self, fn, *args):
        """A daemon thread (not started) whose exception fails the soak, never a hang."""
        def guarded():
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001
                self.fail_now(f"soak thread {fn.__name__}: {type(e).__name__}: {e}")
        return threading.Thread(target=guarded, daemon=True)

    def kill_clients(self):
        with self.lock:
            procs = list(self.procs)
        for p in procs:
            if p.poll() is None:
                p.kill()

    def fill_and_finish(self):
        """Ends the remaining sessions with well-behaved clients, the last one alone."""
        final_ok = False
        for _ in range(self.n_total + 20):
            if not self.server_alive():
                break
            if not self.log.wait_for(lambda: not self.log.open, 30):
                self.fail_now(f"sessions still open at the end: {sorted(self.log.open)}")
                break
            remaining = self.n_total - self.log.ended()
            if remaining <= 0:
                break
            if remaining == 1:
                final_ok = self.run_wb(self.rng.getrandbits(48), kind="final")
                self.log.wait_for(lambda: self.log.summary or not self.server_alive(), 15)
                if final_ok or self.server.poll() is not None:
                    break
                continue
            k = min(self.a.clients_at_once, remaining - 1)
            ts = [self.spawn(self.run_wb, self.rng.getrandbits(48), "fill") for _ in range(k)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(self.a.client_timeout + 20)
            if time.monotonic() > self.hard_deadline:
                self.fail_now("hard deadline passed while filling the remaining sessions")
                break
        return final_ok

    # ---- the whole soak ---------------------------------------------------
    def run(self):
        a = self.a
        per_round = a.clients_at_once + a.victims
        slow_on = a.slow_every > 0 and not a.no_hostile
        if a.rounds is not None:
            rounds = a.rounds
            self.planned_s = rounds * a.pace * 3 + 60
            self.deadline = None
            n_slow = rounds // 20 + 2
        else:
            self.planned_s = a.minutes * 60
            # Each slow reader stalls the server (and the rounds) for its I/O timeout.
            stall, t, n_slow = 0.0, a.slow_first, 0
            while slow_on and t + SLOW_HOLD <= self.planned_s:
                stall += SERVER_IO_TIMEOUT
                t += SLOW_HOLD + a.slow_every
                n_slow += 1
            rounds = max(1, int((self.planned_s - stall) / a.pace + 0.999))
        # Sessions for the victims killed during a stall (one per slow round, at most).
        stall_victims = n_slow if slow_on and self.kill_during_stall and a.victims > 0 else 0
        rounds = min(rounds, (4096 - 1 - stall_victims) // per_round)
        n_total = rounds * per_round + stall_victims + 1
        t0 = time.monotonic()
        self.hard_deadline = t0 + self.planned_s + 600
        self.start_server(n_total)
        self.deadline = None if a.rounds is not None else t0 + self.planned_s
        slow = None
        if slow_on and a.slow_overlap:
            slow = self.spawn(self.slow_loop, self.rng.getrandbits(48))
            slow.start()
        next_slow = t0 + a.slow_first
        last_progress = time.monotonic()
        rss_warm = None
        for r in range(rounds):
            if self.stop.is_set():
                break
            if self.deadline is not None and time.monotonic() >= self.deadline:
                break
            round_start = time.monotonic()
            with_slow = slow_on and not a.slow_overlap and round_start >= next_slow and (
                self.deadline is None or round_start + SLOW_HOLD + 1 <= self.deadline)
            stall_victim = with_slow and stall_victims > 0
            stall_victims -= stall_victim
            self.round(r, with_slow, stall_victim)
            if with_slow:
                next_slow = time.monotonic() + a.slow_every
            self.rss_samples.append(rss_kib(self.server.pid))
            if r == 0:
                rss_warm = self.rss_samples[-1]
            if self.wb_lost and a.stop_on_loss:
                self.fail_now("a well-behaved client was lost")
            if time.monotonic() - last_progress > 60:
                last_progress = time.monotonic()
                print(f"soak: {time.monotonic() - t0:.0f} s, {self.rounds_run} rounds, "
                      f"{self.wb_verified} verified, {len(self.wb_lost)} lost, server RSS "
                      f"{self.rss_samples[-1]} KiB", file=sys.stderr, flush=True)
            if self.deadline is not None:  # pace the rounds over the run
                wait = round_start + a.pace - time.monotonic()
                if wait > 0:
                    self.stop.wait(wait)
        # A rounds-bound run lets the slow reader in flight finish; a timed one is bounded
        # by its deadline already.
        self.deadline = time.monotonic()
        if slow is not None:
            slow.join(SERVER_IO_TIMEOUT + 15)
        self.stop.set()
        self.rss_end = rss_kib(self.server.pid) if self.server_alive() else None
        final_ok = False
        fill_t0 = time.monotonic()
        if self.abort_reason is None and self.server_alive():
            final_ok = self.fill_and_finish()
        self.fill_s = time.monotonic() - fill_t0
        try:  # an aborted soak leaves sessions unused: the server would wait for them
            code = self.server.wait(timeout=1 if self.abort_reason else 30)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait(timeout=10)
            code = "killed by the soak (still running at the end)"
        self.kill_clients()
        self.log.join(10)
        return self.report(time.monotonic() - t0, final_ok, code, rss_warm)

    def report(self, duration, final_ok, code, rss_warm):
        a, log = self.a, self.log
        failures = []
        if self.abort_reason:
            failures.append(self.abort_reason)
        if self.wb_lost:
            failures.append(f"{len(self.wb_lost)} well-behaved transfers lost")
        if self.wb_verified != self.wb_runs:
            failures.append("not every well-behaved client verified")
        if not final_ok:
            failures.append("the final well-behaved client did not succeed")
        expected_code = 1 if log.n_failed > 0 else 0
        if code != expected_code:
            failures.append(f"server exit code {code}, expected {expected_code}")
        if log.summary is None:
            failures.append("no summary line from the server")
        growth = None
        if self.rss_start is not None and self.rss_end is not None:
            growth = self.rss_end - self.rss_start
            if growth >= a.max_rss_growth_mib * 1024:
                failures.append(f"server RSS grew by {growth} KiB")
        else:
            failures.append("server RSS not measured at the end")
        # Every hostile connection must have been rejected by the server, by its port.
        unmatched = collections.Counter()
        reasons = collections.defaultdict(collections.Counter)
        used = collections.Counter()  # a port comes back after TIME_WAIT: match in order
        for kind, port in self.hostile_order:
            who = f"127.0.0.1:{port}"
            rs = [r for r in log.rejected.get(who, []) if r != "wrong token"]
            if used[who] < len(rs):
                reasons[kind][norm_reason(rs[used[who]])] += 1
                used[who] += 1
            else:
                unmatched[kind] += 1
        wrong = sum(1 for rs in log.rejected.values() for r in rs if r == "wrong token")
        reasons["wrong_token"]["wrong token"] = wrong
        if unmatched and not self.abort_reason:
            failures.append(f"hostile connections the server did not log as rejected: "
                            f"{dict(unmatched)}")
        if self.hostile_notes and not self.abort_reason:
            failures.append(f"unexpected hostile outcomes: {dict(self.hostile_notes)}")
        killed = self.victims.get("killed mid-transfer", 0)
        if not self.abort_reason and log.summary and not self.wb_lost and log.n_failed != killed:
            failures.append(f"server counted {log.n_failed} failed sessions, {killed} clients "
                            "were killed")
        rejected_expected = sum(len(p) for p in self.hostile_ports.values()) + self.wrong_token_runs
        if log.n_rejected != rejected_expected and not self.abort_reason:
            failures.append(f"server rejected {log.n_rejected}, the soak sent "
                            f"{rejected_expected} inputs to reject")
        out = {
            "ok": not failures,
            "failures": failures,
            "tls": a.tls,
            "kill_during_stall": self.kill_during_stall,
            "slow_overlap": a.slow_overlap,
            "seed": a.seed,
            "minutes": None if a.rounds is not None else a.minutes,
            "rounds_planned": (self.n_total - 1) // (a.clients_at_once + a.victims),
            "rounds_run": self.rounds_run,
            "duration_s": round(duration, 1),
            "connections_tried": self.connections,
            "hostile_inputs": dict(sorted(self.hostile.items())),
            "hostile_inputs_total": sum(self.hostile.values()),
            "server_reasons_by_kind": {k: dict(v) for k, v in sorted(reasons.items())},
            "well_behaved": {
                "runs": self.wb_runs,
                "verified": self.wb_verified,
                "lost": len(self.wb_lost),
                "fill_runs": self.wb_fill,
                "fill_and_final_s": round(self.fill_s, 1),
                "transports": dict(self.transports),
                "lost_details": self.wb_lost[:20],
            },
            "killed_clients": dict(self.victims),
            "still_serving": final_ok,
            "server": {
                "command": " ".join(self.server_cmd[1:]),
                "clients": self.n_total,
                "size_bytes": self.size,
                "exit_code": code,
                "summary": log.summary,
                "log_counts": {"accepted": log.n_accepted, "done": log.n_done,
                               "failed": log.n_failed, "rejected": log.n_rejected},
                "failed_reasons": dict(log.failed_reasons),
                "rss_kib": {"start": self.rss_start, "after_first_round": rss_warm,
                            "end": self.rss_end, "growth": growth,
                            "max": max((x for x in self.rss_samples if x), default=None)},
                "fatal": next((l for l in log.other if "Fatal" in l or "Assertion" in l), None),
                "other_stderr": log.other[:40],
                "other_stderr_lines": len(log.other),
            },
            "workdir": self.work,
        }
        print(json.dumps(out, indent=2))
        h = out["hostile_inputs"]
        print(f"soak ({a.tls}, seed {a.seed}, kills during stalls: "
              f"{'yes' if self.kill_during_stall else 'no'}): {'PASS' if out['ok'] else 'FAIL'} in "
              f"{duration:.0f} s, {self.rounds_run} rounds, {self.connections} connections\n"
              f"  well-behaved: {self.wb_verified}/{self.wb_runs} verified, "
              f"{len(self.wb_lost)} lost ({self.wb_fill} fill); "
              f"transports {', '.join(self.transports) or '-'}\n"
              f"  hostile: {sum(h.values())} ({', '.join(f'{k} {v}' for k, v in h.items())}); "
              f"killed clients {killed}\n"
              f"  server: {log.summary or 'no summary'}, exit {code}, RSS "
              f"{self.rss_start} -> {self.rss_end} KiB, still serving: {final_ok}",
              file=sys.stderr)
        for f in failures:
            print(f"  FAIL: {f}", file=sys.stderr)
        for d in self.wb_lost[:3]:
            print(f"  lost: {d['why']} ({d['cmd']}): {d['stderr'].strip()[-300:]}",
                  file=sys.stderr)
        if log.other:
            print(f"  server stderr, other lines ({len(log.other)}): "
                  + " | ".join(log.other[:5]), file=sys.stderr)
        return 0 if out["ok"] else 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--xferbench", default=os.path.join(here, "..", "..", "build", "default",
                                                       "xferbench"))
    g = p.add_mutually_exclusive_group()
    g.add_argument("--minutes", type=float, default=0.5, help="run time (default 0.5)")
    g.add_argument("--rounds", type=int, help="a number of rounds instead of a time")
    p.add_argument("--tls", choices=["shm", "tcp"], default="shm",
                   help="shm: UCX's default (shared memory); tcp: UCX_TLS=tcp everywhere")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--clients-at-once", type=int, default=3,
                   help="well-behaved clients per round, run at once (default 3)")
    p.add_argument("--victims", type=int, default=1,
                   help="clients killed mid-transfer per round (default 1)")
    p.add_argument("--pace", type=float, default=None,
                   help="seconds per round in a timed run (default 1.0 shm, 1.5 tcp)")
    p.add_argument("--slow-every", type=float, default=30.0,
                   help="seconds between slow readers (0: none; default 30)")
    p.add_argument("--slow-first", type=float, default=2.0,
                   help="seconds before the first slow reader (default 2)")
    p.add_argument("--slow-overlap", action="store_true",
                   help="slow readers on their own clock, overlapping the clients' bootstrap "
                   "and verify messages (a message already waiting when the server starts "
                   "its stall times out at the client: head-of-line blocking)")
    p.add_argument("--kill-during-stall", choices=["auto", "yes", "no"], default="auto",
                   help="may a client be killed while a slow reader stalls the server? auto: "
                   "yes over shm, no over tcp (there UCX 1.13 aborts the server then)")
    p.add_argument("--no-hostile", action="store_true",
                   help="no hostile inputs (killed clients still, see --victims)")
    p.add_argument("--client-timeout", type=float, default=120.0,
                   help="seconds a well-behaved client may take (default 120)")
    p.add_argument("--max-rss-growth-mib", type=float, default=64.0)
    p.add_argument("--stop-on-loss", action="store_true",
                   help="stop after the first round that lost a well-behaved client")
    p.add_argument("--workdir", default=None, help="parent of the scratch directory")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    a = p.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 31)
    if a.pace is None:
        a.pace = 1.0 if a.tls == "shm" else 1.5
    if a.rounds is not None and a.rounds < 1 or a.minutes <= 0 or a.clients_at_once < 1 \
            or a.victims < 0 or a.pace <= 0:
        p.error("--rounds, --minutes, --clients-at-once and --pace must be positive")
    a.xferbench = os.path.abspath(a.xferbench)
    if not os.access(a.xferbench, os.X_OK):
        p.error(f"--xferbench {a.xferbench} is not an executable")
    soak = Soak(a)
    rc = 1
    try:
        rc = soak.run()
    except Exception as e:  # report, never hang
        print(json.dumps({"ok": False, "failures": [f"soak error: {type(e).__name__}: {e}"],
                          "workdir": soak.work}), flush=True)
        print(f"soak: error: {e}", file=sys.stderr)
    finally:
        soak.stop.set()
        soak.kill_clients()
        srv = getattr(soak, "server", None)
        if srv is not None and srv.poll() is None:
            srv.kill()
            try:
                srv.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if rc == 0 and not a.keep:
            import shutil
            shutil.rmtree(soak.work, ignore_errors=True)
        elif rc != 0:
            print(f"soak: scratch files in {soak.work}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
