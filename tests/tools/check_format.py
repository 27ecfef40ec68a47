#!/usr/bin/env python3
"""Checks that every C and C++ source is laid out as .clang-format says.

The style is the source root's .clang-format, applied by clang-format 14
(Debian 12's; other versions lay some constructs out differently, so the
check names the version). Hand-laid tables are fenced with
`clang-format off` / `clang-format on` comments.

usage: check_format.py [SOURCE_ROOT]   (default: two folders up)
       check_format.py --self-test     (a misformatted file is found, a clean one is not)
Exit code 0: all formatted; 1: files that clang-format would change (each
named, with the command that fixes them); 77 (meson's skip): clang-format-14
is not installed (CI installs it).
"""
import os
import shutil
import subprocess
import sys
import tempfile

CLANG_FORMAT = 'clang-format-14'
SOURCE_SUFFIXES = ('.c', '.cc', '.h')
BATCH = 64


def source_files(root):
    """The tracked sources (git), or every source outside build folders."""
    if os.path.isdir(os.path.join(root, '.git')):
        listed = subprocess.run(['git', '-C', root, 'ls-files', '-z'], capture_output=True,
                                check=True).stdout.decode().split('\0')
        return sorted(f for f in listed if f.endswith(SOURCE_SUFFIXES))
    found = []
    for folder, dirs, files in os.walk(root):
        # Meson build folders (build/, build-san/, ...) hold generated sources.
        dirs[:] = [d for d in dirs if not d.startswith('.') and
                   not os.path.exists(os.path.join(folder, d, 'meson-private'))]
        found += [os.path.relpath(os.path.join(folder, f), root)
                  for f in files if f.endswith(SOURCE_SUFFIXES)]
    return sorted(found)


def unformatted(tool, root, files):
    """The files clang-format would change."""
    bad = []
    for start in range(0, len(files), BATCH):
        batch = files[start:start + BATCH]
        proc = subprocess.run([tool, '--dry-run', '--Werror', '--style=file'] + batch,
                              cwd=root, capture_output=True, text=True)
        if proc.returncode == 0:
            continue
        # Each complaint starts with "path:line:col: error: code should be clang-formatted".
        named = {line.split(':', 1)[0] for line in proc.stderr.splitlines()
                 if 'code should be clang-formatted' in line}
        if not named:
            sys.exit('%s failed:\n%s' % (tool, proc.stderr[-2000:]))
        bad += sorted(named)
    return bad


def self_test(tool, root):
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(os.path.join(root, '.clang-format'), scratch)
        with open(os.path.join(scratch, 'clean.cc'), 'w') as f:
            f.write('int sum(int a, int b)\n{\n    return a + b;\n}\n')
        with open(os.path.join(scratch, 'messy.cc'), 'w') as f:
            f.write('int sum(int a,int b){return a+b;}\n')
        bad = unformatted(tool, scratch, ['clean.cc', 'messy.cc'])
        if bad != ['messy.cc']:
            print('self-test: expected only messy.cc to be flagged, got %s' % bad)
            return 1
    print('self-test: the misformatted file was found, the formatted one was not')
    return 0


def main():
    tool = shutil.which(CLANG_FORMAT)
    if tool is None:
        print('skipped: %s is not installed (Debian: apt-get install %s)' %
              (CLANG_FORMAT, CLANG_FORMAT))
        return 77
    default_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if sys.argv[1:] == ['--self-test']:
        return self_test(tool, default_root)
    root = sys.argv[1] if len(sys.argv) > 1 else default_root
    files = source_files(root)
    bad = unformatted(tool, root, files)
    for f in bad:
        print('%s: not formatted' % f)
    if bad:
        print('%d of %d files differ from .clang-format; fix with: %s -i FILE...' %
              (len(bad), len(files), CLANG_FORMAT))
        return 1
    print('%d files formatted as .clang-format says' % len(files))
    return 0


if __name__ == '__main__':
    sys.exit(main())
