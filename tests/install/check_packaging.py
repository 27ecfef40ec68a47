#!/usr/bin/env python3
"""ucx-ng installs as UCX 1.13 is found: pkg-config and CMake.

  check_packaging.py BUILD_DIR

Installs BUILD_DIR into a temporary DESTDIR, then checks:
- pkg-config: `ucx` reports the UCX API version (1.13.x), so MPI configure
  checks (`--atleast-version=1.13`) pass and newer demands fail, and the
  project's own version is in the variable ucx_ng_version;
- CMake: a consumer project does find_package(ucx 1.13 REQUIRED), links the
  imported target ucx::ucp, builds, and runs with no LD_LIBRARY_PATH on the
  installed libraries (not a system UCX); find_package(ucx 1.14) fails.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from install_common import MAPS_PROGRAM, clean_env, fail, failures, install

CMAKELISTS = """
cmake_minimum_required(VERSION 3.13)
project(ucx_consumer C)
find_package(ucx @VERSION@ REQUIRED)
message(STATUS "ucx_VERSION=${ucx_VERSION} UCX_NG_VERSION=${UCX_NG_VERSION}")
message(STATUS "UCX_INCLUDE_DIRS=${UCX_INCLUDE_DIRS}")
add_executable(probe probe.c)
target_link_libraries(probe PRIVATE ucx::ucp)
"""

def run(cmd, env=None, cwd=None):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=180)


def check_pkg_config(root, libdir, project_version):
    env = clean_env()
    env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
    base = ["pkg-config", "--define-variable=prefix=" + root]
    version = run(base + ["--modversion", "ucx"], env).stdout.strip()
    if not version.startswith("1.13."):
        fail("pkg-config --modversion ucx: %r, expected the UCX API version 1.13.x" % version)
    for pkg in ("ucx", "ucx-uct", "ucx-ucs"):
        if run(base + ["--atleast-version=1.13", pkg], env).returncode != 0:
            fail("pkg-config --atleast-version=1.13 %s fails" % pkg)
    if run(base + ["--atleast-version=1.14", "ucx"], env).returncode == 0:
        fail("pkg-config --atleast-version=1.14 ucx passes: we are 1.13")
    own = run(base + ["--variable=ucx_ng_version", "ucx"], env).stdout.strip()
    if own != project_version:
        fail("pkg-config --variable=ucx_ng_version ucx: %r, expected %r" % (own,
                                                                          project_version))
    if not failures:
        print("ok: pkg-config: ucx %s, ucx_ng_version %s" % (version, own))


def cmake_project(work, name, version):
    src = os.path.join(work, name)
    os.makedirs(src)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(CMAKELISTS.replace("@VERSION@", version))
    with open(os.path.join(src, "probe.c"), "w") as f:
        f.write("#define PRINT_VERSION\n" + MAPS_PROGRAM)
    return src


def check_cmake(root, libdir, project_version, work):
    env = clean_env()
    src = cmake_project(work, "consumer", "1.13")
    bld = os.path.join(work, "consumer-build")
    conf = run(["cmake", "-S", src, "-B", bld, "-DCMAKE_PREFIX_PATH=" + root,
                "-DCMAKE_BUILD_TYPE=Release"], env)
    out = conf.stdout + conf.stderr
    if conf.returncode != 0:
        fail("cmake configure of a find_package(ucx 1.13) project:\n" + out)
        return
    if "ucx_VERSION=1.13." not in out or ("UCX_NG_VERSION=" + project_version) not in out:
        fail("find_package(ucx) versions:\n" + out)
    if ("UCX_INCLUDE_DIRS=" + os.path.join(root, "include")) not in out:
        fail("UCX_INCLUDE_DIRS is not the install's include directory:\n" + out)
    build = run(["cmake", "--build", bld], env)
    if build.returncode != 0:
        fail("cmake --build:\n" + build.stdout + build.stderr)
        return
    probe = run([os.path.join(bld, "probe")], env)
    if probe.returncode != 0 or "version 1.13" not in probe.stdout:
        fail("the consumer: exit %d\n%s%s" % (probe.returncode, probe.stdout, probe.stderr))
        return
    mapped = [line.split()[-1] for line in probe.stdout.splitlines() if "/libuc" in line]
    real_libdir = os.path.realpath(libdir)
    for lib in ("libucp.so", "libuct.so", "libucs.so"):
        paths = [p for p in mapped if os.path.basename(p).startswith(lib)]
        if not paths:
            fail("the consumer did not map %s" % lib)
        for p in paths:
            if os.path.dirname(os.path.realpath(p)) != real_libdir:
                fail("the consumer mapped %s, not the install's" % p)
    print("ok: CMake consumer of ucx::ucp built and ran on the install")

    newer = cmake_project(work, "newer", "1.14")
    conf = run(["cmake", "-S", newer, "-B", os.path.join(work, "newer-build"),
                "-DCMAKE_PREFIX_PATH=" + root], env)
    if conf.returncode == 0:
        fail("find_package(ucx 1.14 REQUIRED) succeeded on the 1.13 API")
    else:
        print("ok: find_package(ucx 1.14) is refused")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    if shutil.which("cmake") is None:
        print("cmake is not installed (it is in .ci/common.sh PACKAGES): skipped")
        sys.exit(77)
    project_version = json.loads(
        run(["meson", "introspect", "--projectinfo", build]).stdout)["version"]
    with tempfile.TemporaryDirectory(prefix="ucx-ng-packaging-") as work:
        root, opts = install(build, os.path.join(work, "dest"))
        libdir = os.path.join(root, opts["libdir"])
        check_pkg_config(root, libdir, project_version)
        check_cmake(root, libdir, project_version, work)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
