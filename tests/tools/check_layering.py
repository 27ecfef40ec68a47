#!/usr/bin/env python3
"""Checks the layering rule: coll -> ucp -> uct -> ucs, no upward includes.

ucs/ must not include uct/ or ucp/ headers, uct/ must not include ucp/
headers, and ucm/ (which libucs links, never the reverse) must not
include uct/ or ucp/ headers either. coll/ (collectives, a layer over
the public UCP API) may include ucp/api/ and ucs/ only, and nothing
below it includes coll/. Both forms are checked: <uct/x.h>
and "x.h" or "../../ucp/x.h", resolved as the compiler would (the
including file's folder first, then the source root).

usage: check_layering.py [SOURCE_ROOT]   (default: two folders up)
       check_layering.py --self-test     (the checker finds planted violations)
Exit code 0: no violation; 1: violations, each printed as file:line.
"""
import os
import re
import sys
import tempfile

# Layer -> the layers its sources must not include.
# 'ucp_api' is ucp/api/, the public C API, apart from the rest of ucp/.
FORBIDDEN = {
    'ucs': ('uct', 'ucp', 'ucp_api', 'coll'),
    'ucm': ('uct', 'ucp', 'ucp_api', 'coll'),
    'uct': ('ucp', 'ucp_api', 'coll'),
    'ucp': ('coll',),
    'coll': ('uct', 'ucp'),
}
LAYERS = ('ucs', 'ucm', 'uct', 'ucp', 'coll')


def layer_of_path(rel):
    parts = os.path.normpath(rel).split(os.sep)
    if parts[0] not in LAYERS:
        return None
    if parts[:2] == ['ucp', 'api']:
        return 'ucp_api'
    return parts[0]
SOURCE_SUFFIXES = ('.h', '.hpp', '.c', '.cc', '.cpp', '.inl')
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of_include(root, including_dir, delimiter, name):
    """The layer a #include names, or None (system or generated header)."""
    if delimiter == '"':
        local = os.path.normpath(os.path.join(including_dir, name))
        if os.path.exists(local):
            return layer_of_path(os.path.relpath(local, root))
    return layer_of_path(name)


def violations(root):
    """(file, line number, include, layer, forbidden layer) of every upward include."""
    found = []
    checked = 0
    for layer, forbidden in FORBIDDEN.items():
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for fname in sorted(files):
                if not fname.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(folder, fname)
                checked += 1
                with open(path, encoding='utf-8', errors='replace') as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        target = layer_of_include(root, folder, m.group(1), m.group(2))
                        if target in forbidden:
                            found.append((os.path.relpath(path, root), number,
                                          m.group(1) + m.group(2), layer, target))
    return found, checked


def check(root):
    found, checked = violations(root)
    for path, number, include, layer, target in found:
        print(f"{path}:{number}: includes {include}: {layer}/ must not include {target}/")
    print(f"{checked} files in {', '.join(FORBIDDEN)}: {len(found)} upward includes")
    return 1 if found else 0


def self_test():
    """Plants each kind of violation in a scratch tree; all must be found."""
    tree = {
        'ucs/a/ok.h': '#include <ucs/b/x.h>\n#include <vector>\n#include "ok2.h"\n',
        'ucs/a/ok2.h': '#include <ucm/api/ucm.h>\n',
        'ucs/a/bad_angle.h': '#include <uct/base/uct_iface.h>\n',
        'ucs/a/bad_relative.cc': '#  include "../../ucp/core/x.h"\n',
        'ucm/bad.cc': '#include <ucp/api/ucp.h>\n',
        'uct/tcp/ok.cc': '#include <ucs/type/status.h>\n#include "tcp_wire.h"\n',
        'uct/tcp/tcp_wire.h': '',
        'uct/tcp/bad.h': '#include <ucp/proto/wire.h>\n',
        'ucp/core/x.h': '',
        'ucp/core/ok.cc': '#include <uct/base/uct_iface.h>\n#include <ucs/type/status.h>\n',
        'ucp/core/bad_coll.cc': '#include <coll/api/ucp_coll.h>\n',
        'coll/ok.cc': '#include <ucp/api/ucp.h>\n#include <ucs/debug/log.h>\n',
        'coll/bad.cc': '#include <ucp/core/ucp_worker.h>\n',
    }
    expected = {('ucs/a/bad_angle.h', 'uct'), ('ucs/a/bad_relative.cc', 'ucp'),
                ('ucm/bad.cc', 'ucp_api'), ('uct/tcp/bad.h', 'ucp'),
                ('ucp/core/bad_coll.cc', 'coll'), ('coll/bad.cc', 'ucp')}
    with tempfile.TemporaryDirectory() as root:
        for rel, text in tree.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w', encoding='utf-8') as f:
                f.write(text)
        found, _ = violations(root)
    got = {(path.replace(os.sep, '/'), target) for path, _, _, _, target in found}
    if got != expected:
        print(f"self-test failed: found {sorted(got)}, expected {sorted(expected)}")
        return 1
    print(f"self-test: the {len(expected)} planted violations were found, nothing else")
    return 0


def main(argv):
    if argv[1:] == ['--self-test']:
        return self_test()
    if len(argv) > 2:
        print(__doc__)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), '..', '..')
    return check(os.path.abspath(root))


if __name__ == '__main__':
    sys.exit(main(sys.argv))
