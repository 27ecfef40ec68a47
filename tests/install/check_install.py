#!/usr/bin/env python3
"""An installed ucx-ng uses its own libraries, never a system UCX.

  check_install.py BUILD_DIR [MODULE]

Installs BUILD_DIR into a temporary DESTDIR, then, with no LD_LIBRARY_PATH:
- asks the dynamic loader which libuc*.so.0 each installed tool resolves
  (LD_TRACE_LOADED_OBJECTS) and runs them (ucx_info -v, ucx_perftest
  --loopback);
- builds a program with `pkg-config --cflags --libs ucx` and an rpath to the
  install, runs it, and reads from its /proc/self/maps which libuc* files
  it mapped.
Every libucp/libuct/libucs/libucm must come from the install's libdir. On a
machine with Debian's libucx0 (as CI has), a library without RUNPATH would
resolve its siblings from /lib instead.
With MODULE (libuct_testloop.so of the build), copies it to the install's
<libdir>/ucx and checks that the installed ucx_info finds it there with no
UCX_MODULE_DIR: the libraries look for modules next to themselves.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from install_common import MAPS_PROGRAM, clean_env, fail, failures, install

UCX_LIBS = ("libucp.so.0", "libuct.so.0", "libucs.so.0", "libucm.so.0")

def check_paths(what, paths, libdir):
    """paths: {library name: resolved path}."""
    bad = 0
    for name in UCX_LIBS:
        if name not in paths:
            continue
        real = os.path.realpath(paths[name])
        if os.path.dirname(real) != os.path.realpath(libdir):
            fail("%s: %s resolves to %s, not to the install" % (what, name, real))
            bad += 1
    if bad == 0:
        print("ok: %s: %s" % (what, ", ".join(sorted(paths)) or "no UCX library"))


def traced(tool, libdir):
    env = clean_env()
    env["LD_TRACE_LOADED_OBJECTS"] = "1"
    out = subprocess.run([tool], env=env, capture_output=True, text=True, timeout=60).stdout
    paths = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in UCX_LIBS and parts[1] == "=>":
            paths[parts[0]] = parts[2]
    return paths


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    module = os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else None
    with tempfile.TemporaryDirectory(prefix="ucx-ng-install-") as dest:
        root, opts = install(build, dest)
        libdir = os.path.join(root, opts["libdir"])
        bindir = os.path.join(root, opts["bindir"])

        tools = ["ucx_info", "uct_perf", "ucp_put_floor", "ucp_peer_failure"]
        for tool in tools:
            path = os.path.join(bindir, tool)
            if not os.path.exists(path):
                fail("%s is not installed" % tool)
                continue
            paths = traced(path, libdir)
            if "libucp.so.0" not in paths and "libuct.so.0" not in paths:
                fail("%s links no UCX library?" % tool)
            check_paths(tool, paths, libdir)

        run = subprocess.run([os.path.join(bindir, "ucx_info"), "-v"], env=clean_env(),
                             capture_output=True, text=True, timeout=60)
        if run.returncode != 0 or "Library version" not in run.stdout:
            fail("installed ucx_info -v: exit %d\n%s%s" % (run.returncode, run.stdout,
                                                           run.stderr))
        else:
            print("ok: installed ucx_info -v runs")
        run = subprocess.run([os.path.join(bindir, "ucx_perftest"), "--loopback", "-t",
                              "tag_lat", "-n", "100", "-w", "10"], env=clean_env(),
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            fail("installed ucx_perftest --loopback: exit %d\n%s%s" %
                 (run.returncode, run.stdout[-2000:], run.stderr[-2000:]))
        else:
            print("ok: installed ucx_perftest runs its UCP module")

        if module is not None:
            module_dir = os.path.join(libdir, "ucx")
            os.makedirs(module_dir, exist_ok=True)
            installed = os.path.join(module_dir, os.path.basename(module))
            shutil.copy(module, installed)
            run = subprocess.run([os.path.join(bindir, "ucx_info"), "-v", "-d"],
                                 env=clean_env(), capture_output=True, text=True, timeout=60)
            if (run.returncode != 0 or "Transport: testloop" not in run.stdout or
                    "# Module: testloop (%s)" % os.path.realpath(installed) not in run.stdout):
                fail("installed ucx_info does not find %s: exit %d\n%s%s" %
                     (installed, run.returncode, run.stdout[-3000:], run.stderr[-2000:]))
            else:
                print("ok: installed ucx_info loads a module from <libdir>/ucx")
            os.remove(installed)

        # A program built the way MPI libraries build against UCX.
        pc_dir = os.path.join(libdir, "pkgconfig")
        env = clean_env()
        env["PKG_CONFIG_PATH"] = pc_dir
        flags = subprocess.run(["pkg-config", "--define-variable=prefix=" + root,
                                "--cflags", "--libs", "ucx"], env=env, capture_output=True,
                               text=True, check=True).stdout.split()
        src = os.path.join(dest, "probe.c")
        exe = os.path.join(dest, "probe")
        with open(src, "w") as f:
            f.write(MAPS_PROGRAM)
        cc = shutil.which("cc") or "gcc"
        subprocess.run([cc, src, "-o", exe] + flags + ["-Wl,-rpath," + libdir], check=True)
        run = subprocess.run([exe], env=clean_env(), capture_output=True, text=True,
                             timeout=60)
        if run.returncode != 0:
            fail("pkg-config program: exit %d\n%s" % (run.returncode, run.stderr))
        mapped = {}
        for line in run.stdout.splitlines():
            path = line.split()[-1]
            name = os.path.basename(path)
            for lib in UCX_LIBS:
                if name.startswith(lib):
                    mapped[lib] = path
        for lib in ("libucp.so.0", "libucs.so.0", "libuct.so.0"):
            if lib not in mapped:
                fail("pkg-config program: %s not mapped" % lib)
        check_paths("pkg-config program (/proc/self/maps)", mapped, libdir)

    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
