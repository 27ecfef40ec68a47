#!/usr/bin/env python3
"""Builds the HTML API reference of the installed headers with Doxygen.

  make_reference.py BUILD_DIR SOURCE_DIR OUTPUT_DIR

Exits 77 (skipped, for meson test) when doxygen is not installed, 1 when
Doxygen reports a documentation error (a @param naming no parameter, ...).
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from installed_headers import installed_headers  # noqa: E402


def project_info(build_dir):
    import json
    out = subprocess.run(["meson", "introspect", "--projectinfo", build_dir],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["version"]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    build_dir, source_dir, output_dir = (os.path.abspath(a) for a in sys.argv[1:])
    doxygen = shutil.which("doxygen")
    if doxygen is None:
        print("doxygen is not installed (Debian: apt-get install doxygen)")
        return 77
    here = os.path.dirname(os.path.abspath(__file__))
    headers = [os.path.join(source_dir, h) for h in installed_headers(build_dir, source_dir)]
    values = {
        "PROJECT_VERSION": project_info(build_dir),
        "API_VERSION": "1.13",
        "OUTPUT_DIR": output_dir,
        "INPUTS": " ".join([os.path.join(here, "mainpage.md")] + headers),
        "MAINPAGE": os.path.join(here, "mainpage.md"),
        "SOURCE_DIR": source_dir,
    }
    with open(os.path.join(here, "Doxyfile.in")) as f:
        text = f.read()
    for key, value in values.items():
        text = text.replace("@%s@" % key, value)
    os.makedirs(output_dir, exist_ok=True)
    doxyfile = os.path.join(output_dir, "Doxyfile")
    with open(doxyfile, "w") as f:
        f.write(text)
    run = subprocess.run([doxygen, doxyfile], capture_output=True, text=True, cwd=output_dir)
    sys.stdout.write(run.stdout + run.stderr)
    if run.returncode != 0:
        print("doxygen failed (exit %d)" % run.returncode)
        return 1
    print("API reference: %s" % os.path.join(output_dir, "html", "index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
