#!/usr/bin/env python3
"""Two "hosts" on one machine, for tests that need separate nodes.

Each host is a network namespace (joined to the other by a veth pair,
10.231.0.1 and 10.231.0.2) plus, for every process started on it, its own
mount namespace with a private /dev/shm, its own host name (UTS), IPC and
PID namespaces: shared memory, SysV segments and CMA cannot reach across,
exactly as between two machines. Tests (--test):

  lanes         ucp_soak between the hosts with the default transports: the
                endpoints must use tcp only, every byte must arrive; and
                with UCX_TLS=posix,sysv,cma,self both sides must fail to
                connect (unreachable), quickly, instead of hanging.
  ompi          a 2-rank Open MPI job across the hosts (mpirun's rsh agent
                enters the other host's namespaces instead of ssh): the ranks
                run on hostA and hostB, and mpi_p2p passes over pml ucx.
  linkcut-busy  ucp_soak with peer error handling; the link is cut
                (ip link set down) while data flows both ways: both sides
                must report the peer's failure within --max-detect seconds
                and every request must end.
  linkcut-idle  the same on an idle connection (every send completed,
                receives posted).
  stopped-peer  the server side is stopped (SIGSTOP) for 3 s while data
                flows: its kernel still acknowledges, so no failure may be
                reported (the short TCP_USER_TIMEOUT must not misfire) and
                the run passes.

Needs root, iproute2 and util-linux unshare; without them it exits 77
(skipped) and says why. Namespaces get unique names per run and are
removed on exit, on SIGTERM/SIGINT (meson's timeout), and when a later run
finds those of a run whose process is gone.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

SKIP = 77
PREFIX = "ucxng-mh-"
ADDR = {"hostA": "10.231.0.1", "hostB": "10.231.0.2"}
VETH = {"hostA": "veth-a", "hostB": "veth-b"}
SOAK_PORT = 13337   # each host has a network namespace of its own: no clashes


def run(cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found (iproute2 / util-linux)"
    probe = f"{PREFIX}probe-{os.getpid()}"
    r = run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"cannot create a network namespace: {r.stdout.strip()}"
    run(["ip", "netns", "del", probe], check=False)
    return None


def sweep_stale():
    """Removes the namespaces of earlier runs whose process is gone."""
    r = run(["ip", "netns", "list"], check=False)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(rf"{re.escape(PREFIX)}(?:probe-)?(\d+)", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            # Processes a killed run left inside, then the namespace itself.
            for pid in run(["ip", "netns", "pids", name], check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", name], check=False)
            shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)
            shutil.rmtree(f"/tmp/{PREFIX}{m.group(1)}", ignore_errors=True)


class Terminated(Exception):
    pass


def on_signal(signum, _frame):
    raise Terminated(f"signal {signum}")


class Process:
    """A process on a host, its output collected line by line."""

    def __init__(self, name, cmd, env):
        self.name = name
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append((time.time(), line.rstrip("\n")))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_line(self, pattern, timeout):
        """The first output line matching pattern, waiting up to timeout s."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for _, line in self.lines:
                    if rx.search(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    return None
                self.cond.wait(min(left, 0.5))

    def wait(self, timeout):
        """Exit code, or None if still running after timeout s."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.reader.join(5)
        return code

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def output(self):
        with self.cond:
            return "\n".join(f"[{self.name}] {line}" for _, line in self.lines)


class Hosts:
    """hostA and hostB: namespaces, a veth pair, /etc/netns/<ns>/hosts."""

    def __init__(self):
        tag = f"{os.getpid()}"
        self.ns = {"hostA": f"{PREFIX}{tag}-a", "hostB": f"{PREFIX}{tag}-b"}
        self.processes = []
        self.tmpdir = None

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def _setup(self):
        a, b = self.ns["hostA"], self.ns["hostB"]
        for host, ns in self.ns.items():
            run(["ip", "netns", "add", ns])
            # ip netns exec binds /etc/netns/<ns>/hosts over /etc/hosts.
            os.makedirs(f"/etc/netns/{ns}", exist_ok=True)
            with open(f"/etc/netns/{ns}/hosts", "w") as f:
                f.write("127.0.0.1 localhost\n")
                for h, addr in ADDR.items():
                    f.write(f"{addr} {h}\n")
        # Created straight inside the namespaces: no name clash in the root one.
        run(["ip", "link", "add", VETH["hostA"], "netns", a, "type", "veth",
             "peer", "name", VETH["hostB"], "netns", b])
        for host, ns in self.ns.items():
            run(["ip", "-n", ns, "addr", "add", ADDR[host] + "/24", "dev", VETH[host]])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            run(["ip", "-n", ns, "link", "set", VETH[host], "up"])
        self.tmpdir = f"/tmp/{PREFIX}{os.getpid()}"
        os.makedirs(self.tmpdir, exist_ok=True)
        self._wait_running()

    def _wait_running(self, timeout=10):
        """The kernel reports carrier (RUNNING) a little after 'up' (link
        watch); tcp skips interfaces that are not running yet."""
        deadline = time.monotonic() + timeout
        for host, ns in self.ns.items():
            while "state UP" not in run(["ip", "-n", ns, "-o", "link", "show", "dev",
                                         VETH[host]], check=False).stdout:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{VETH[host]} in {ns} did not come up")
                time.sleep(0.05)   # polling a kernel state, bounded by the deadline

    def cleanup(self):
        for p in self.processes:
            p.kill()
        for ns in self.ns.values():
            run(["ip", "netns", "del", ns], check=False)   # takes the veth pair along
            shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def enter(self, host):
        """Command prefix that runs a command as a process of `host`."""
        return ["ip", "netns", "exec", self.ns[host],
                "unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--mount-proc",
                "--propagation", "private",
                "sh", "-c", 'mount -t tmpfs -o size=2g tmpfs /dev/shm && hostname "$0" '
                            '&& exec "$@"', host]

    def start(self, host, argv, env, name=None):
        p = Process(name or host, self.enter(host) + argv, env)
        self.processes.append(p)
        return p

    def rsh_agent(self):
        """A script for mpirun's plm_rsh_agent: 'ssh HOST CMD' enters HOST."""
        path = os.path.join(self.tmpdir, "netns_rsh_agent.sh")
        cases = "".join(f'  {h}) ns={ns} ;;\n' for h, ns in self.ns.items())
        with open(path, "w") as f:
            f.write("#!/bin/sh\n"
                    "# mpirun's ssh: run the command as a process of the named host.\n"
                    'host="$1"; shift\n'
                    'case "$host" in\n' + cases +
                    '  *) echo "netns_rsh_agent: unknown host $host" >&2; exit 255 ;;\n'
                    "esac\n"
                    'exec ip netns exec "$ns" unshare --mount --uts --ipc --pid --fork '
                    "--mount-proc --propagation private sh -c "
                    "'mount -t tmpfs -o size=2g tmpfs /dev/shm && hostname \"$0\" && "
                    "exec sh -c \"$1\"' \"$host\" \"$*\"\n")
        os.chmod(path, 0o755)
        return path

    def cut_link(self, how):
        ns = self.ns["hostA"]
        if how == "down":
            run(["ip", "-n", ns, "link", "set", VETH["hostA"], "down"])
        else:
            run(["ip", "-n", ns, "link", "del", VETH["hostA"]])


def environment(args):
    env = dict(os.environ)
    if args.libdir:
        env["LD_LIBRARY_PATH"] = args.libdir
    return env


def soak_pair(hosts, args, extra, env):
    """ucp_soak: server on hostB, client on hostA."""
    base = [args.soak] + args.soak_arg + extra
    server = hosts.start("hostB", base + ["--server", str(SOAK_PORT)], env)
    client = hosts.start("hostA", base + ["--client", f"{ADDR['hostB']}:{SOAK_PORT}"], env)
    return client, server


def fail(msg, *procs):
    for p in procs:
        print(p.output())
    print(f"FAIL: {msg}")
    return 1


def lane_transports(proc):
    """Transport names of the lanes in ucp_ep_print_info output (ours or UCX's)."""
    names = []
    for _, line in proc.lines:
        m = re.search(r"lane\[\d+\]:\s+(?:\d+:)?([A-Za-z0-9_]+)/", line)
        if m:
            names.append(m.group(1))
    return names


def test_lanes(hosts, args):
    env = environment(args)
    env.pop("UCX_TLS", None)
    client, server = soak_pair(hosts, args, ["--duration", "3", "--print-lanes"], env)
    codes = (client.wait(args.timeout), server.wait(args.timeout))
    if codes != (0, 0):
        return fail(f"ucp_soak between the hosts exited with {codes}", client, server)
    if client.wait_line(r"^soak: result=PASS .* bytes=[1-9]", 0) is None:
        return fail("no passing soak result with data", client, server)
    lanes = {"hostA": lane_transports(client), "hostB": lane_transports(server)}
    print(client.output())
    print(f"lanes: {lanes}")
    for host, names in lanes.items():
        if not names or any(n != "tcp" for n in names):
            return fail(f"{host}'s endpoint must use tcp lanes only, has {names}")

    # Without tcp nothing reaches the other host: a clean, quick failure.
    env["UCX_TLS"] = "posix,sysv,cma,self"
    start = time.monotonic()
    client, server = soak_pair(hosts, args, ["--duration", "1"], env)
    codes = (client.wait(args.timeout), server.wait(args.timeout))
    took = time.monotonic() - start
    if None in codes or 0 in codes:
        return fail(f"with UCX_TLS={env['UCX_TLS']} both sides must fail, exit codes "
                    f"{codes}", client, server)
    print(f"UCX_TLS={env['UCX_TLS']}: both sides failed to connect in {took:.1f} s "
          f"(exit codes {codes}), as they must")
    print("PASS multihost lanes")
    return 0


def test_ompi(hosts, args):
    if shutil.which("mpirun.openmpi") is None or not args.mpi_program:
        print("SKIP: mpirun.openmpi or the MPI test program is missing")
        return SKIP
    if not os.access(args.mpi_program, os.X_OK):
        print(f"SKIP: {args.mpi_program} was not built")
        return SKIP
    env = environment(args)
    libdirs = env.get("LD_LIBRARY_PATH", "")
    env["RUNTIME_TEST_UCP_DIR"] = args.expect_ucp_dir or libdirs.split(":")[0]
    env["RUNTIME_TEST_UCX_DIRS"] = libdirs
    env["RUNTIME_TEST_VERBOSE"] = "1"
    env["RUNTIME_TEST_SKIP_UCX113_BUGS"] = "0"
    mpirun = ["mpirun.openmpi", "--allow-run-as-root", "--host", "hostA,hostB", "-np", "2",
              "--mca", "plm_rsh_agent", hosts.rsh_agent()]
    forwarded = ["LD_LIBRARY_PATH", "RUNTIME_TEST_UCP_DIR", "RUNTIME_TEST_UCX_DIRS",
                 "RUNTIME_TEST_VERBOSE", "RUNTIME_TEST_SKIP_UCX113_BUGS"]
    forwarded += sorted(k for k in env if k.startswith("UCX_"))
    for name in forwarded:
        mpirun += ["-x", name]

    # Where the ranks run: one on each host.
    job = hosts.start("hostA", mpirun + ["hostname"], env, "mpirun")
    code = job.wait(args.timeout)
    names = sorted(line for _, line in job.lines if line in ADDR)
    if code != 0 or names != ["hostA", "hostB"]:
        return fail(f"ranks must run on hostA and hostB: exit {code}, hosts {names}", job)

    job = hosts.start("hostA", mpirun + ["--mca", "pml", "ucx", "--mca", "osc", "ucx",
                                         "--mca", "pml_ucx_tls", "any",
                                         "--mca", "pml_ucx_devices", "any",
                                         args.mpi_program], env, "mpirun")
    code = job.wait(args.timeout)
    print(job.output())
    program = os.path.basename(args.mpi_program).split("_", 1)[-1]
    if code is None:
        return fail(f"mpirun still running after {args.timeout} s")
    if code != 0 or job.wait_line(rf"^PASS {re.escape(program)} ", 0) is None:
        return fail(f"mpirun exited with {code} without 'PASS {program}'")
    print("PASS multihost ompi")
    return 0


def test_linkcut(hosts, args, idle):
    env = environment(args)
    # Each side gives up on its own once the cut is long past.
    extra = ["--expect-failure", "--duration", str(int(args.max_detect * 2 + 30)),
             "--report", "0.5", "--drain", str(args.max_detect)]
    if idle:
        extra += ["--quiet-after", "1.5"]
    client, server = soak_pair(hosts, args, extra, env)
    # Data must flow both ways (or, idle, every send must have ended) first.
    ready = r"quiet: every send completed" if idle else r"received .* / [1-9]\d{1,} msgs"
    for p in (client, server):
        if p.wait_line(ready, 30) is None:
            return fail(f"{p.name} never got to '{ready}'", client, server)
    t_cut = time.time()
    hosts.cut_link(args.cut)
    print(f"link cut ({args.cut}) at unix time {t_cut:.6f}")

    bound = args.max_detect * 2 + 10
    codes = (client.wait(bound), server.wait(bound))
    detect, status = {}, {}
    for p in (client, server):
        line = p.wait_line(r"failure_unix_time=", 0)
        if line:
            detect[p.name] = float(line.rsplit("=", 1)[1]) - t_cut
            status[p.name] = re.search(r"failure: (.*) \(", line).group(1)
    print(client.output())
    print(server.output())
    for host in ("hostA", "hostB"):
        if host not in detect:
            return fail(f"{host} reported no failure within {bound} s of the cut")
        print(f"{host}: failure reported {detect[host]:.3f} s after the link was cut "
              f"({status[host]})")
        if args.expect_status and not re.fullmatch(args.expect_status, status[host]):
            return fail(f"{host} reported '{status[host]}', not '{args.expect_status}'")
    if codes != (0, 0):
        return fail(f"soak sides exited with {codes} (requests must end after the failure)")
    slow = {h: t for h, t in detect.items() if t > args.max_detect}
    if slow:
        return fail(f"detection slower than {args.max_detect} s: {slow}")
    kind = "idle" if idle else "busy"
    print(f"PASS multihost linkcut-{kind} detection_s hostA={detect['hostA']:.3f} "
          f"hostB={detect['hostB']:.3f}")
    return 0


def test_stopped_peer(hosts, args):
    """A peer that is alive but stopped keeps its kernel acknowledging: the
    short TCP_USER_TIMEOUT must not report it failed."""
    env = environment(args)
    pause = 3.0
    client, server = soak_pair(hosts, args, ["--peer-errors", "--duration", "8",
                                             "--report", "0.5"], env)
    for p in (client, server):
        if p.wait_line(r"received .* / [1-9]\d{1,} msgs", 30) is None:
            return fail(f"{p.name} never got traffic going", client, server)
    os.killpg(server.proc.pid, signal.SIGSTOP)
    print(f"hostB's soak stopped (SIGSTOP) for {pause} s")
    time.sleep(pause)     # the scenario itself: a peer that does not run for a while
    os.killpg(server.proc.pid, signal.SIGCONT)
    codes = (client.wait(args.timeout), server.wait(args.timeout))
    print(client.output())
    if codes != (0, 0) or client.wait_line(r"^soak: result=PASS", 0) is None:
        return fail(f"the stopped peer was not survived: exit codes {codes}", server)
    print(f"PASS multihost stopped-peer ({pause} s stop, no failure reported)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test", required=True,
                        choices=["lanes", "ompi", "linkcut-busy", "linkcut-idle",
                                 "stopped-peer"])
    parser.add_argument("--soak", help="the ucp_soak program")
    parser.add_argument("--soak-arg", action="append", default=[],
                        help="extra ucp_soak argument (repeat), e.g. --allow-missing-imm-info")
    parser.add_argument("--mpi-program", help="Open MPI test program (tests/runtimes)")
    parser.add_argument("--libdir", help="LD_LIBRARY_PATH for the processes (colon-separated)")
    parser.add_argument("--expect-ucp-dir", help="where the MPI program's libucp must come from")
    parser.add_argument("--max-detect", type=float, default=5.0,
                        help="seconds within which a cut link must be reported (default 5)")
    parser.add_argument("--expect-status",
                        help="linkcut: regular expression the status text of both sides "
                             "must match")
    parser.add_argument("--cut", choices=["down", "delete"], default="down",
                        help="how the link is cut: ip link set down, or deleted")
    parser.add_argument("--timeout", type=float, default=60,
                        help="bound for each program (s)")
    args = parser.parse_args()

    reason = skip_reason()
    if reason:
        print(f"SKIP: multihost tests: {reason}")
        return SKIP
    if args.test != "ompi" and not args.soak:
        parser.error("--soak is needed")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sweep_stale()
    try:
        with Hosts() as hosts:
            if args.test == "lanes":
                return test_lanes(hosts, args)
            if args.test == "ompi":
                return test_ompi(hosts, args)
            if args.test == "stopped-peer":
                return test_stopped_peer(hosts, args)
            return test_linkcut(hosts, args, idle=(args.test == "linkcut-idle"))
    except Terminated as e:
        print(f"FAIL: terminated ({e}); namespaces removed")
        return 1


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main())
