"""The public C headers a build installs (sources, relative to the tree),
from `meson introspect --installed`: the docs tools read them from here so
that a header added to an install_headers() call is covered at once."""
import json
import os
import subprocess


def installed_headers(build_dir, source_dir):
    out = subprocess.run(["meson", "introspect", "--installed", build_dir],
                         capture_output=True, text=True, check=True).stdout
    source_dir = os.path.realpath(source_dir)
    headers = []
    for src, dest in json.loads(out).items():
        if src.endswith(".h") and "/include/" in dest:
            headers.append(os.path.relpath(os.path.realpath(src), source_dir))
    return sorted(headers)
