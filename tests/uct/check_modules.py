#!/usr/bin/env python3
"""Loadable uct modules, seen through ucx_info.

  check_modules.py UCX_INFO GOOD_DIR BAD_DIR

GOOD_DIR holds libuct_testloop.so; BAD_DIR holds libuct_badabi.so (another
module ABI version) and libuct_noentry.so (no entry point). Each case runs
ucx_info -d in a fresh process (modules load once per process) and checks
what it lists and says.
"""
import os
import re
import subprocess
import sys

failures = []
passed = []


def run(ucx_info, env_extra, args=("-d",)):
    env = dict(os.environ)
    for key in ("UCX_MODULE_DIR", "UCX_MODULES", "UCX_MODULE_LOG_LEVEL", "UCX_LOG_LEVEL"):
        env.pop(key, None)
    env["UCX_CONFIG_FILE"] = ""
    env.update(env_extra)
    proc = subprocess.run([ucx_info, *args], env=env, capture_output=True, text=True,
                          timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


def check(what, condition, output):
    if condition:
        passed.append(what)
        print("ok: " + what)
    else:
        failures.append(what)
        print("FAIL: " + what)
        print("  output was:\n" + "\n".join("    " + l for l in output.splitlines()[-40:]))


def lists_testloop(output):
    return "Transport: testloop" in output and "Component: testloop" in output


def refused_newer_abi(output):
    """badabi is built for the version after libuct's: both are named."""
    m = re.search(r"built for module ABI version (\d+), this libuct has version (\d+): "
                  r"not loaded", output)
    return m is not None and int(m.group(1)) == int(m.group(2)) + 1


def main():
    ucx_info, good, bad = sys.argv[1:4]

    rc, out = run(ucx_info, {"UCX_MODULE_DIR": good})
    check("the module's transport is listed when its directory is UCX_MODULE_DIR",
          rc == 0 and lists_testloop(out), out)
    check("built-in transports are still listed", "Transport: tcp" in out, out)

    rc, out = run(ucx_info, {})
    check("without the directory it is not", rc == 0 and not lists_testloop(out), out)

    for modules, listed in (("^testloop", False), ("testloop", True), ("test*", True),
                            ("^test*", False), ("cuda,ib", False), ("all", True),
                            ("ib,testloop", True)):
        rc, out = run(ucx_info, {"UCX_MODULE_DIR": good, "UCX_MODULES": modules})
        check("UCX_MODULES=%s %s it" % (modules, "loads" if listed else "excludes"),
              rc == 0 and lists_testloop(out) == listed and "Transport: tcp" in out, out)

    rc, out = run(ucx_info, {"UCX_MODULE_DIR": good, "UCX_MODULE_LOG_LEVEL": "info",
                             "UCX_LOG_LEVEL": "info"})
    check("UCX_MODULE_LOG_LEVEL=info reports the load (at UCX_LOG_LEVEL=info)",
          "loaded testloop (%s/libuct_testloop.so)" % good in out, out)

    rc, out = run(ucx_info, {"UCX_MODULE_DIR": bad})
    check("a module of another ABI version is refused, with both versions named",
          rc == 0 and "uct module badabi" in out and refused_newer_abi(out), out)
    check("a shared object with no entry point is refused",
          "uct module noentry" in out and "has no uct_module_descriptor()" in out, out)
    check("refused modules leave the built-in transports working",
          "Transport: tcp" in out and "badabi" not in out.split("not loaded")[-1], out)

    rc, out = run(ucx_info, {"UCX_MODULE_DIR": bad, "UCX_MODULES": "^badabi,noentry"})
    check("excluded bad modules are not even opened",
          rc == 0 and "badabi" not in out and "noentry" not in out, out)

    missing = os.path.join(good, "no-such-directory")
    rc, out = run(ucx_info, {"UCX_MODULE_DIR": missing})
    check("a missing module directory is no error",
          rc == 0 and "Transport: tcp" in out and "UCX ERROR" not in out, out)

    rc, out = run(ucx_info, {"UCX_MODULE_DIR": good}, ("-c",))
    check("ucx_info -c shows UCX_MODULE_DIR and UCX_MODULES",
          "UCX_MODULE_DIR=%s" % good in out and "UCX_MODULES=all" in out, out)

    rc, out = run(ucx_info, {"UCX_MODULE_DIR": good}, ("-v",))
    check("ucx_info -v names the loaded modules",
          "testloop" in out and "libuct_testloop.so" in out, out)

    print("%d passed, %d failed" % (len(passed), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
