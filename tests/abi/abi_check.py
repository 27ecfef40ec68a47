#!/usr/bin/env python3
"""
ABI check of our public UCP headers against the installed UCX 1.13 headers.

The reference headers (<ref-root>/ucp/api/ucp.h and the ucs headers it pulls
in) are preprocessed and parsed; from what they declare this script writes C
programs and compiles them:

  layout        probe.c prints sizeof/alignment/offset/type class of every
                struct, union and field (recursing into named struct members),
                the value of every enum constant and numeric macro, whether
                each reference macro is defined, and the results of sample
                calls of function-like macros. The SAME source is built once
                against the reference and once against our headers; both runs
                must print identical lines.
  declarations  decls.c, built against our headers only, holds one
                _Static_assert per function, variable, typedef and struct
                field: our declaration must be type-compatible with the type
                spelled as in the reference header.
  standalone    our ucp.h (and each ucp/api header) compiles alone as C
                (gnu11, c99) and C++20 without warnings, and a C++ translation
                unit referencing every function links against C (unmangled)
                symbols.

Every compile against our headers is also checked to read no ucp/ucs header
from the reference tree, which sits on the default include path.
Exit status: 0 pass, 1 fail, 77 skip (no reference headers installed).
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

SKIP = 77

# Facts that differ in headers this check does not own. Each entry is a probe
# line key (or a declaration name) with the reason; such a difference is
# reported but does not fail the test. Remove an entry once its header is
# fixed (the check says so when the difference has gone).
KNOWN_DEVIATIONS = {
}

# Sample arguments for function-like macros whose value can be printed.
# kind 'int': printed as a long long; 'ptr': printed as an intptr_t.
PTR_SAMPLES = ['(void*)0', '(void*)(intptr_t)1', '(void*)(intptr_t)-1',
               '(void*)(intptr_t)-4', '(void*)(intptr_t)-99',
               '(void*)(intptr_t)-100', '(void*)(intptr_t)-101',
               '(void*)(uintptr_t)0x1000']
STATUS_SAMPLES = ['0', '1', '-1', '-4', '-39', '-40', '-50', '-59', '-60',
                  '-80', '-89', '-90', '-100']
MACRO_SAMPLES = {
    'UCS_BIT':               ('int', ['0', '5', '31', '63']),
    'UCS_MASK':              ('int', ['0', '1', '3', '32']),
    'UCS_PTR_IS_ERR':        ('int', PTR_SAMPLES),
    'UCS_PTR_IS_PTR':        ('int', PTR_SAMPLES),
    'UCS_PTR_STATUS':        ('int', PTR_SAMPLES),
    'UCS_PTR_RAW_STATUS':    ('int', PTR_SAMPLES),
    'UCS_STATUS_PTR':        ('ptr', ['UCS_OK', 'UCS_INPROGRESS',
                                      'UCS_ERR_NO_MEMORY', 'UCS_ERR_LAST']),
    'UCS_STATUS_IS_ERR':     ('int', STATUS_SAMPLES),
    'UCS_IS_LINK_ERROR':     ('int', STATUS_SAMPLES),
    'UCS_IS_ENDPOINT_ERROR': ('int', STATUS_SAMPLES),
    'UCP_VERSION':           ('int', ['1, 13', '2, 0', '0, 255']),
    'ucp_dt_make_contig':    ('int', ['1', '8', '4096', 'sizeof(double)']),
    'ucp_dt_make_iov':       ('int', ['']),
    'UCS_CPUELT':            ('int', ['0', '63', '64', '1023']),
    'UCS_CPUMASK':           ('int', ['0', '63', '64', '1023']),
    'ucs_likely':            ('int', ['0', '1', '2']),
    'ucs_unlikely':          ('int', ['0', '1', '2']),
    'ucs_is_constant':       ('int', ['3', 'abi_sample_var']),
    'ucs_static_array_size': ('int', ['abi_sample_obj.a']),
    'ucs_offsetof':          ('int', ['struct abi_sample, l',
                                      'struct abi_sample, a']),
    'ucs_field_sizeof':      ('int', ['struct abi_sample, a',
                                      'struct abi_sample, c']),
    'ucs_container_of':      ('ptr', ['&abi_sample_obj.l, struct abi_sample, l']),
    'UCS_PTR_BYTE_OFFSET':   ('ptr', ['abi_sample_base, 24',
                                      'abi_sample_base, -8']),
    'UCS_PTR_TYPE_OFFSET':   ('ptr', ['abi_sample_base, abi_sample_obj']),
    'UCS_PTR_BYTE_DIFF':     ('int', ['abi_sample_base, abi_sample_base + 40']),
}

# Statement-like macros exercised by hand-written probe code.
STATEMENT_SAMPLES = {
    'UCS_CPU_ZERO', 'UCS_CPU_SET', 'UCS_CPU_CLR', 'ucs_memory_type_for_each',
}

KEYWORDS = {
    'auto', 'break', 'case', 'char', 'const', 'continue', 'default', 'do',
    'double', 'else', 'enum', 'extern', 'float', 'for', 'goto', 'if',
    'inline', 'int', 'long', 'register', 'restrict', 'return', 'short',
    'signed', 'sizeof', 'static', 'struct', 'switch', 'typedef', 'union',
    'unsigned', 'void', 'volatile', 'while', '_Bool', '__inline',
    '__inline__', '__restrict', '__restrict__', '__const',
}
STORAGE = {'static', 'extern', 'inline', '__inline', '__inline__'}

TOKEN_RE = re.compile(r'''
    (?P<ws>\s+)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?)[uUlLfF]*)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<op>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~<>=?:;,.()\[\]{}\#])
''', re.X)


def fail(msg):
    print('ABI CHECK ERROR: ' + msg, file=sys.stderr)
    sys.exit(1)


def tokenize(text):
    tokens = []
    pos = 0
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            fail('cannot tokenize near: %r' % text[pos:pos + 40])
        pos = m.end()
        if m.lastgroup != 'ws':
            tokens.append(m.group())
    return tokens


def is_ident(tok):
    return re.match(r'[A-Za-z_]\w*$', tok) is not None


def strip_attributes(tokens):
    """Drops __attribute__((...)) groups and __extension__."""
    out = []
    i = 0
    while i < len(tokens):
        if tokens[i] in ('__attribute__', '__attribute'):
            depth = 0
            i += 1
            while i < len(tokens):
                if tokens[i] == '(':
                    depth += 1
                elif tokens[i] == ')':
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        if tokens[i] != '__extension__':
            out.append(tokens[i])
        i += 1
    return out


def matching(tokens, start):
    """Index of the bracket closing the one at tokens[start]."""
    pairs = {'(': ')', '[': ']', '{': '}'}
    opener, closer = tokens[start], pairs[tokens[start]]
    depth = 0
    for i in range(start, len(tokens)):
        if tokens[i] == opener:
            depth += 1
        elif tokens[i] == closer:
            depth -= 1
            if depth == 0:
                return i
    fail('unbalanced %s in %s' % (opener, ' '.join(tokens[:30])))


def split_top(tokens, sep):
    """Splits at sep tokens outside any brackets."""
    parts, cur, depth = [], [], 0
    for tok in tokens:
        if tok in '([{':
            depth += 1
        elif tok in ')]}':
            depth -= 1
        if tok == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        parts.append(cur)
    return parts


def declarator_name_index(tokens):
    """Index of the declared name in a declaration (type + declarator)."""
    depth, found = 0, None
    for i, tok in enumerate(tokens):
        if tok in '([':
            # "(*name)" or "(*name[N])" at the top level: a pointer to function.
            if depth == 0 and tok == '(' and tokens[i + 1:i + 2] == ['*'] \
                    and i + 3 < len(tokens) and is_ident(tokens[i + 2]) \
                    and tokens[i + 3] in (')', '['):
                return i + 2
            if depth == 0 and tok == '(' and found is not None:
                return found  # function declarator: the name precedes '('
            depth += 1
        elif tok in ')]':
            depth -= 1
        elif depth == 0 and is_ident(tok) and tok not in KEYWORDS:
            found = i
    if found is None:
        fail('no declarator name in: ' + ' '.join(tokens))
    return found


def rename(tokens, index, new_name):
    return tokens[:index] + [new_name] + tokens[index + 1:]


class Api:
    """Everything the reference headers declare."""

    def __init__(self):
        self.aggregates = []     # (c_type, kind, members, origin)
        self.agg_by_type = {}    # c_type -> members
        self.typedef_target = {} # typedef name -> 'struct tag' / 'enum tag'
        self.struct_alias = {}   # 'typedef struct X name' -> name: 'struct X'
        self.plain_typedefs = [] # (name, tokens, origin)
        self.enum_types = []     # (c_type, origin)
        self.enum_consts = []    # (name, origin)
        self.functions = []      # (name, tokens, origin)
        self.variables = []      # (name, tokens, origin)
        self.macros = []         # (name, params or None, body, origin)


def parse_members(tokens, prefix, origin):
    """Struct/union body -> list of (path, decl tokens or None, nested)."""
    members = []
    for decl in split_top(tokens, ';'):
        if not decl:
            continue
        if decl[0] in ('struct', 'union') and '{' in decl:
            open_i = decl.index('{')
            close_i = matching(decl, open_i)
            rest = decl[close_i + 1:]
            if len(rest) != 1 or not is_ident(rest[0]):
                fail('unsupported nested member in %s: %s' % (origin, ' '.join(decl)))
            path = prefix + rest[0]
            nested = parse_members(decl[open_i + 1:close_i], path + '.', origin)
            members.append((path, None, nested))
            continue
        if len(split_top(decl, ',')) != 1 or ':' in decl:
            fail('unsupported member declaration in %s: %s' % (origin, ' '.join(decl)))
        name_i = declarator_name_index(decl)
        members.append((prefix + decl[name_i], decl, None))
    return members


def parse_statement(api, tokens, origin):
    tokens = strip_attributes(tokens)
    if not tokens:
        return
    if tokens[0] == 'typedef':
        body = tokens[1:]
        if body[0] in ('struct', 'union', 'enum') and '{' in body:
            open_i = body.index('{')
            close_i = matching(body, open_i)
            tag = body[1] if open_i == 2 else None
            names = split_top(body[close_i + 1:], ',')
            if len(names) != 1 or len(names[0]) != 1:
                fail('unsupported typedef in %s: %s' % (origin, ' '.join(tokens)))
            name = names[0][0]
            if tag:
                api.typedef_target[name] = body[0] + ' ' + tag
            if body[0] == 'enum':
                add_enum(api, body[open_i + 1:close_i], name, origin)
            else:
                add_aggregate(api, name, body[0], body[open_i + 1:close_i], origin)
            return
        name_i = declarator_name_index(body)
        api.plain_typedefs.append((body[name_i], body, origin))
        if name_i == 2 and body[0] in ('struct', 'union'):
            api.struct_alias[body[name_i]] = body[0] + ' ' + body[1]
        return
    if tokens[0] in ('struct', 'union') and len(tokens) > 2 and tokens[2] == '{':
        close_i = matching(tokens, 2)
        if close_i != len(tokens) - 1:
            fail('unsupported declaration in %s: %s' % (origin, ' '.join(tokens)))
        add_aggregate(api, tokens[0] + ' ' + tokens[1], tokens[0],
                      tokens[3:close_i], origin)
        return
    if tokens[0] == 'enum' and '{' in tokens:
        open_i = tokens.index('{')
        tag = tokens[1] if open_i == 2 else None
        add_enum(api, tokens[open_i + 1:matching(tokens, open_i)],
                 'enum ' + tag if tag else None, origin)
        return
    if tokens[0] in ('struct', 'union', 'enum') and len(tokens) == 2:
        return  # forward declaration
    if '{' in tokens:  # function definition: keep the declaration part
        tokens = tokens[:tokens.index('{')]
    name_i = declarator_name_index(tokens)
    is_function = name_i + 1 < len(tokens) and tokens[name_i + 1] == '(' \
        and (name_i == 0 or tokens[name_i - 1] != '(')
    entry = (tokens[name_i], tokens, origin)
    (api.functions if is_function else api.variables).append(entry)


def add_aggregate(api, c_type, kind, body, origin):
    members = parse_members(body, '', origin)
    api.aggregates.append((c_type, kind, members, origin))
    api.agg_by_type[c_type] = members


def add_enum(api, body, c_type, origin):
    for item in split_top(body, ','):
        if item:
            api.enum_consts.append((item[0], origin))
    if c_type:
        api.enum_types.append((c_type, origin))


def run(cmd, **kwargs):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kwargs)


def parse_headers(args, root):
    """Preprocesses <root>/ucp/api/ucp.h; keeps what comes from ucp/ucs."""
    src = os.path.join(args.workdir, 'parse_all.c')
    with open(src, 'w') as f:
        f.write('#include <ucp/api/ucp.h>\n')
    res = run(args.cc + ['-std=gnu11', '-E', '-dD', '-I', root, src])
    if res.returncode != 0:
        fail('preprocessing the headers under %s failed:\n%s' % (root, res.stdout))
    roots = tuple(os.path.join(os.path.realpath(root), d) + os.sep
                  for d in ('ucp', 'ucs'))
    api = Api()
    origin, code = None, []
    segments = []   # (origin, text)
    for line in res.stdout.splitlines():
        marker = re.match(r'# \d+ "([^"]+)"', line)
        if marker:
            path = os.path.realpath(marker.group(1))
            origin = os.path.relpath(path, root) if path.startswith(roots) else None
            continue
        if origin is None:
            continue
        m = re.match(r'#define (\w+)(\([^)]*\))?\s?(.*)$', line)
        if m:
            params = m.group(2)
            api.macros.append((m.group(1), params, m.group(3), origin))
            continue
        if line.startswith('#'):
            continue
        segments.append((origin, line))
    # Statements never span files, so parse the kept code statement by statement.
    text_by_origin = []
    for origin, line in segments:
        if text_by_origin and text_by_origin[-1][0] == origin:
            text_by_origin[-1][1].append(line)
        else:
            text_by_origin.append((origin, [line]))
    for origin, lines in text_by_origin:
        tokens = tokenize('\n'.join(lines))
        stmt = []
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok == '{':
                close_i = matching(tokens, i)
                is_body = stmt and stmt[-1] == ')'
                stmt.extend(tokens[i:close_i + 1])
                i = close_i + 1
                if is_body:
                    parse_statement(api, stmt, origin)
                    stmt = []
                continue
            if tok == ';':
                parse_statement(api, stmt, origin)
                stmt = []
            else:
                stmt.append(tok)
            i += 1
        if stmt:
            fail('unterminated declaration in %s: %s' % (origin, ' '.join(stmt)))
    return api


def c_string(text):
    return '"' + text.replace('\\', '\\\\').replace('"', '\\"') + '"'


NUMERIC_BODY_RE = re.compile(r'^[\w\s()+\-*/%<>|&^~!?:,.]*$')


def numeric_macro_candidates(api):
    names = []
    for name, params, body, _ in api.macros:
        if params is not None or not body.strip():
            continue
        if not NUMERIC_BODY_RE.match(body) or '__attribute__' in body:
            continue
        if set(re.findall(r'[A-Za-z_]\w*', body)) & (KEYWORDS - {'sizeof'}):
            continue
        names.append(name)
    return names


PROBE_PRELUDE = r'''
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ABI_CLASS(_x) _Generic((_x), \
    _Bool: "bool", char: "char", signed char: "schar", \
    unsigned char: "uchar", short: "short", unsigned short: "ushort", \
    int: "int", unsigned int: "uint", long: "long", unsigned long: "ulong", \
    long long: "llong", unsigned long long: "ullong", float: "float", \
    double: "double", long double: "ldouble", default: "other")
#define ABI_FIELD(_type, _tname, _path) \
    printf("field %s.%s offset=%zu size=%zu class=%s\n", _tname, #_path, \
           offsetof(_type, _path), sizeof(((_type*)0)->_path), \
           ABI_CLASS(((_type*)0)->_path))
#define ABI_INT(_key, _expr) \
    printf("%s = %lld (%s, %zu bytes)\n", _key, (long long)(_expr), \
           ABI_CLASS(_expr), sizeof(_expr))
#define ABI_PTR(_key, _expr) \
    printf("%s = ptr %lld\n", _key, (long long)(intptr_t)(_expr))

struct abi_sample {
    char c;
    long l;
    int  a[7];
};
static struct abi_sample abi_sample_obj;
static char abi_sample_buf[64];
static volatile int abi_sample_var = 3;
'''


def probe_source(api, numeric_macros):
    """The probe program and the number of checks of each kind it prints."""
    out = ['/* Generated by tests/abi/abi_check.py: do not edit. */',
           '#include <ucp/api/ucp.h>', PROBE_PRELUDE,
           'int main(void)', '{',
           '    char *abi_sample_base = abi_sample_buf;',
           '    (void)abi_sample_base; (void)abi_sample_var;']
    counts = dict(structs=0, fields=0, typedefs=0, enum_types=0,
                  enum_consts=0, macros=0, macro_values=0, macro_samples=0)

    def emit_members(c_type, members, depth):
        for path, decl, nested in members:
            out.append('    ABI_FIELD(%s, %s, %s);' % (c_type, c_string(c_type), path))
            counts['fields'] += 1
            if nested is not None:
                emit_members(c_type, nested, depth)
                continue
            # Recurse into a member whose type is a known named aggregate.
            type_tokens = [t for t in decl if t not in ('const', 'volatile')]
            name_i = declarator_name_index(type_tokens)
            base = type_tokens[:name_i]
            if name_i != len(type_tokens) - 1 or depth > 3:
                continue  # arrays, pointers-to-function: no recursion
            key = ' '.join(base)
            key = api.struct_alias.get(key, key)
            sub = api.agg_by_type.get(key)
            if sub:
                emit_members(c_type, [(path + '.' + p, d, n) for p, d, n in sub],
                             depth + 1)

    for c_type, _, members, _ in api.aggregates:
        out.append('    printf("type %%s size=%%zu align=%%zu\\n", %s, '
                   'sizeof(%s), _Alignof(%s));' % (c_string(c_type), c_type, c_type))
        counts['structs'] += 1
        emit_members(c_type, members, 0)

    for name, tokens, _ in api.plain_typedefs:
        base = [t for t in tokens if t not in ('const', 'volatile')]
        name_i = declarator_name_index(base)
        complete = not (len(base) == 3 and base[0] in ('struct', 'union')
                        and base[0] + ' ' + base[1] not in api.agg_by_type)
        counts['typedefs'] += 1
        if not complete:
            continue  # opaque handle type: nothing to measure
        if name_i == 2 and base[0] in ('struct', 'union'):
            out.append('    printf("typedef %%s size=%%zu\\n", %s, sizeof(%s));'
                       % (c_string(name), name))
        else:
            out.append('    printf("typedef %%s size=%%zu class=%%s\\n", %s, '
                       'sizeof(%s), ABI_CLASS((%s)0));' % (c_string(name), name, name))

    for c_type, _ in api.enum_types:
        out.append('    printf("enum-type %%s size=%%zu class=%%s\\n", %s, '
                   'sizeof(%s), ABI_CLASS((%s)0));' % (c_string(c_type), c_type, c_type))
        counts['enum_types'] += 1
    for name, _ in api.enum_consts:
        out.append('    ABI_INT(%s, %s);' % (c_string('enum ' + name), name))
        counts['enum_consts'] += 1

    for name, params, _, _ in api.macros:
        out.append('#ifdef %s' % name)
        out.append('    printf("macro %s defined%s\\n");'
                   % (name, ' (function-like)' if params is not None else ''))
        out.append('#else')
        out.append('    printf("macro %s missing\\n");' % name)
        out.append('#endif')
        counts['macros'] += 1
    for name in numeric_macros:
        out.append('    ABI_INT(%s, %s);' % (c_string('macro ' + name), name))
        counts['macro_values'] += 1

    defined = {m[0] for m in api.macros}
    for name, (kind, samples) in sorted(MACRO_SAMPLES.items()):
        if name not in defined:
            continue
        for sample in samples:
            call = '%s(%s)' % (name, sample)
            macro = 'ABI_INT' if kind == 'int' else 'ABI_PTR'
            if name in ('ucs_container_of', 'UCS_PTR_BYTE_OFFSET', 'UCS_PTR_TYPE_OFFSET'):
                # Print the distance from a known base, not an address.
                base = '(char*)&abi_sample_obj' if name == 'ucs_container_of' \
                    else 'abi_sample_base'
                out.append('    ABI_INT(%s, (char*)%s - %s);'
                           % (c_string('sample ' + call), call, base))
            else:
                out.append('    %s(%s, %s);' % (macro, c_string('sample ' + call), call))
            counts['macro_samples'] += 1

    if {'UCS_CPU_ZERO', 'UCS_CPU_SET', 'UCS_CPU_CLR'} <= defined:
        out.append(r'''
    {
        ucs_cpu_set_t set;
        size_t i;
        int cpu;
        memset(&set, 0xa5, sizeof(set));
        UCS_CPU_ZERO(&set);
        UCS_CPU_SET(0, &set);
        UCS_CPU_SET(3, &set);
        UCS_CPU_SET(64, &set);
        UCS_CPU_SET(1023, &set);
        UCS_CPU_SET(1024, &set);  /* out of range: ignored */
        UCS_CPU_SET(5000, &set);  /* out of range: ignored */
        UCS_CPU_CLR(0, &set);
        UCS_CPU_CLR(4096, &set);  /* out of range: ignored */
        for (i = 0; i < sizeof(set.ucs_bits) / sizeof(set.ucs_bits[0]); ++i) {
            if (set.ucs_bits[i] != 0) {
                printf("sample cpu_set word %zu = %#lx\n", i,
                       (unsigned long)set.ucs_bits[i]);
            }
        }
        for (cpu = 0; cpu < UCS_CPU_SETSIZE; ++cpu) {
            if (ucs_cpu_is_set(cpu, &set)) {
                printf("sample ucs_cpu_is_set(%d) = 1\n", cpu);
            }
        }
        printf("sample ucs_cpu_set_find_lcs = %d\n", ucs_cpu_set_find_lcs(&set));
        UCS_CPU_ZERO(&set);
        printf("sample ucs_cpu_set_find_lcs(empty) = %d\n",
               ucs_cpu_set_find_lcs(&set));
    }''')
        counts['macro_samples'] += 4
    if 'ucs_memory_type_for_each' in defined:
        out.append(r'''
    {
        ucs_memory_type_t mt;
        int n = 0;
        ucs_memory_type_for_each(mt) {
            ++n;
        }
        printf("sample ucs_memory_type_for_each iterations = %d\n", n);
    }''')
        counts['macro_samples'] += 1
    out += ['    return 0;', '}', '']
    return '\n'.join(out), counts


def decls_source(api):
    """Static assertions: our declarations vs the reference spelling."""
    out = ['/* Generated by tests/abi/abi_check.py: do not edit. */',
           '#include <ucp/api/ucp.h>', '']
    counts = dict(functions=0, variables=0, typedefs=0, fields=0, tags=0)
    seq = [0]

    def alias(prefix):
        seq[0] += 1
        return 'abi_%s_%d' % (prefix, seq[0])

    def strip_storage(tokens):
        return [t for t in tokens if t not in STORAGE]

    for name, tokens, origin in api.functions:
        tokens = strip_storage(tokens)
        name_i = declarator_name_index(tokens)
        a = alias('fn')
        out.append('typedef %s;' % ' '.join(rename(tokens, name_i, '(*%s)' % a)))
        out.append('_Static_assert(__builtin_types_compatible_p(__typeof__(&%s), %s), '
                   '"function %s (%s): prototype differs from the reference");'
                   % (name, a, name, origin))
        counts['functions'] += 1
    for name, tokens, origin in api.variables:
        tokens = strip_storage(tokens)
        name_i = declarator_name_index(tokens)
        a = alias('var')
        out.append('typedef %s;' % ' '.join(rename(tokens, name_i, a)))
        out.append('_Static_assert(__builtin_types_compatible_p(__typeof__(%s), %s), '
                   '"variable %s (%s): type differs from the reference");'
                   % (name, a, name, origin))
        counts['variables'] += 1
    for name, tokens, origin in api.plain_typedefs:
        name_i = declarator_name_index(tokens)
        a = alias('td')
        out.append('typedef %s;' % ' '.join(rename(tokens, name_i, a)))
        out.append('_Static_assert(__builtin_types_compatible_p(%s, %s), '
                   '"typedef %s (%s): type differs from the reference");'
                   % (name, a, name, origin))
        counts['typedefs'] += 1
    for name, target in sorted(api.typedef_target.items()):
        out.append('_Static_assert(__builtin_types_compatible_p(%s, %s), '
                   '"typedef %s: must name %s as in the reference");'
                   % (name, target, name, target))
        counts['tags'] += 1

    def emit_fields(c_type, members, origin):
        for path, decl, nested in members:
            if nested is not None:
                emit_fields(c_type, nested, origin)
                continue
            name_i = declarator_name_index(decl)
            a = alias('fld')
            out.append('typedef %s;' % ' '.join(rename(decl, name_i, a)))
            out.append('_Static_assert(__builtin_types_compatible_p(__typeof__(((%s*)0)->%s), %s), '
                       '"field %s.%s (%s): type differs from the reference");'
                       % (c_type, path, a, c_type, path, origin))
            counts['fields'] += 1

    for c_type, _, members, origin in api.aggregates:
        emit_fields(c_type, members, origin)
    out.append('')
    return '\n'.join(out), counts


def compile_ours(args, src, out_path, extra, lang='c'):
    """Compiles against our headers; checks no reference header was read."""
    deps = out_path + '.d'
    compiler = args.cc if lang == 'c' else args.cxx
    cmd = compiler + extra + ['-I', args.our_root, '-MD', '-MF', deps,
                              src, '-o', out_path]
    res = run(cmd)
    leaked = []
    if os.path.exists(deps):
        with open(deps) as f:
            files = f.read().replace('\\\n', ' ').split()
        roots = tuple(os.path.join(os.path.realpath(args.ref_root), d) + os.sep
                      for d in ('ucp', 'ucs', 'uct', 'ucm'))
        leaked = [p for p in files if os.path.realpath(p).startswith(roots)]
    return res, leaked


def report_compile_failure(what, res):
    print('FAIL: %s did not compile:' % what)
    lines = res.stdout.splitlines()
    errors = [l for l in lines if 'error' in l or 'warning' in l]
    print('\n'.join(errors if errors else lines))


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def parse_probe_output(text):
    return [line for line in text.splitlines() if line.strip()]


def check_layout(args, api):
    numeric = numeric_macro_candidates(api)
    src = os.path.join(args.workdir, 'probe.c')
    # Keep only macros whose value the reference itself can print.
    while True:
        text, counts = probe_source(api, numeric)
        write(src, text)
        ref_exe = os.path.join(args.workdir, 'probe_ref')
        res = run(args.cc + ['-std=gnu11', '-w', '-I', args.ref_root, src,
                             '-o', ref_exe])
        if res.returncode == 0:
            break
        bad = set()
        lines = text.splitlines()
        for m in re.finditer(r'probe\.c:(\d+):\d+: error', res.stdout):
            line = lines[int(m.group(1)) - 1]
            mm = re.search(r'"macro (\w+)"', line)
            if mm:
                bad.add(mm.group(1))
        if not bad or not bad & set(numeric):
            report_compile_failure('the probe against the reference headers', res)
            return 1
        numeric = [n for n in numeric if n not in bad]

    our_exe = os.path.join(args.workdir, 'probe_ours')
    res, leaked = compile_ours(args, src, our_exe, ['-std=gnu11', '-w'])
    if res.returncode != 0:
        report_compile_failure('the probe against our headers', res)
        return 1
    if leaked:
        print('FAIL: our build read reference headers (missing in our tree?):')
        print('\n'.join('  ' + p for p in leaked))
        return 1

    ref_out = run([ref_exe])
    our_out = run([our_exe])
    if ref_out.returncode != 0 or our_out.returncode != 0:
        print('FAIL: a probe crashed:\n' + ref_out.stdout + our_out.stdout)
        return 1
    ref_lines = parse_probe_output(ref_out.stdout)
    our_lines = parse_probe_output(our_out.stdout)
    write(os.path.join(args.workdir, 'probe_ref.txt'), ref_out.stdout)
    write(os.path.join(args.workdir, 'probe_ours.txt'), our_out.stdout)

    status = 0
    diffs = []
    if len(ref_lines) != len(our_lines):
        diffs.append(('(line count)', '%d lines' % len(ref_lines),
                      '%d lines' % len(our_lines)))
    else:
        for ref, ours in zip(ref_lines, our_lines):
            if ref != ours:
                diffs.append((key_of(ref), ref, ours))
    known_seen = set()
    for key, ref, ours in diffs:
        if key in KNOWN_DEVIATIONS:
            known_seen.add(key)
            print('known deviation (%s):\n  reference: %s\n  ours:      %s'
                  % (KNOWN_DEVIATIONS[key], ref, ours))
        else:
            status = 1
            print('DIFFERENCE:\n  reference: %s\n  ours:      %s' % (ref, ours))
    for key in sorted(set(KNOWN_DEVIATIONS) - known_seen):
        if ' ' in key:  # a probe key; declaration keys are plain names
            print('note: known deviation "%s" no longer differs: remove it from '
                  'KNOWN_DEVIATIONS' % key)

    version = [l for l in our_lines if re.match(r'macro UCP_API_(MAJOR|MINOR) =', l)]
    expect = {'UCP_API_MAJOR': args.api_major, 'UCP_API_MINOR': args.api_minor}
    for line in version:
        name, value = re.match(r'macro (\w+) = (-?\d+)', line).groups()
        if expect[name] is not None and int(value) != expect[name]:
            print('FAIL: %s is %s in ucp_version.h but %d in meson.build'
                  % (name, value, expect[name]))
            status = 1

    print('layout probe: %d structs/unions, %d fields, %d typedefs, '
          '%d enum types, %d enum constants, %d macros checked for presence, '
          '%d macro values, %d macro samples: %d lines compared, %d differ '
          '(%d known)'
          % (counts['structs'], counts['fields'], counts['typedefs'],
             counts['enum_types'], counts['enum_consts'], counts['macros'],
             counts['macro_values'], counts['macro_samples'], len(ref_lines),
             len(diffs), len(known_seen)))
    return status


def key_of(line):
    """The part of a probe line naming what it measures."""
    for sep in (' = ', ' size=', ' offset=', ' defined', ' missing'):
        if sep in line:
            return line.split(sep)[0]
    return line


def check_declarations(args, api):
    text, counts = decls_source(api)
    src = os.path.join(args.workdir, 'decls.c')
    write(src, text)
    res, leaked = compile_ours(args, src, os.path.join(args.workdir, 'decls.o'),
                               ['-std=gnu11', '-c', '-fmax-errors=0'])
    status = 0
    problems = []
    known_seen = set()
    if res.returncode != 0:
        lines = text.splitlines()
        errors_by_line = {}
        for m in re.finditer(r'decls\.c:(\d+):\d+: error: (.*)', res.stdout):
            errors_by_line.setdefault(int(m.group(1)), []).append(m.group(2))
        for line_no, messages in sorted(errors_by_line.items()):
            src_line = lines[line_no - 1]
            named = re.search(r'"((function|variable|typedef|field) ([\w.]+) \([^)]*\))',
                              src_line)
            key = named.group(3) if named else None
            asserted = [re.search(r'static assertion failed: "(.*)"', msg)
                        for msg in messages]
            asserted = [a.group(1) for a in asserted if a]
            if asserted:
                text_msg = asserted[0]
            elif named and any('undeclared' in msg for msg in messages):
                text_msg = named.group(1) + ': not declared in our headers'
            else:
                text_msg = '%s  [in: %s]' % (messages[0], src_line.strip())
            if key in KNOWN_DEVIATIONS:
                print('known deviation (%s): %s' % (KNOWN_DEVIATIONS[key], text_msg))
                known_seen.add(key)
            else:
                problems.append(text_msg)
        if not problems and not known_seen:
            report_compile_failure('the declaration check', res)
            return 1
    if problems:
        status = 1
        print('FAIL: declarations differ from the reference:')
        print('\n'.join('  ' + p for p in problems))
    if leaked:
        status = 1
        print('FAIL: our build read reference headers:\n' +
              '\n'.join('  ' + p for p in leaked))
    print('declaration check: %d functions, %d variables, %d typedefs, '
          '%d typedef tags, %d struct fields compared; %d differ (%d known)'
          % (counts['functions'], counts['variables'], counts['typedefs'],
             counts['tags'], counts['fields'], len(problems), len(known_seen)))
    return status


WARN_C = ['-Wall', '-Wextra', '-Wpedantic', '-Wstrict-prototypes',
          '-Wmissing-prototypes', '-Wshadow', '-Wundef', '-Werror']
WARN_CXX = ['-Wall', '-Wextra', '-Wpedantic', '-Wshadow', '-Wundef', '-Werror']


def check_standalone(args):
    """Each public ucp header alone, as C and C++, without any warning."""
    status = 0
    headers = ['ucp/api/ucp.h', 'ucp/api/ucp_def.h', 'ucp/api/ucp_compat.h',
               'ucp/api/ucp_version.h']
    modes = [('c', ['-std=gnu11'], WARN_C), ('c', ['-std=c99'], WARN_C),
             ('c++', ['-std=c++20'], WARN_CXX)]
    checked = 0
    for header in headers:
        for lang, std, warn in modes:
            base = os.path.join(args.workdir, 'alone_%s_%s' % (
                os.path.basename(header)[:-2], std[0].split('=')[1].replace('+', 'x')))
            src = base + ('.c' if lang == 'c' else '.cc')
            # Included twice: the include guard must work too.
            write(src, '#include <%s>\n#include <%s>\n'
                  'typedef int abi_not_empty;\n' % (header, header))
            res, leaked = compile_ours(args, src, base + '.o',
                                       std + warn + ['-c'], lang)
            checked += 1
            what = '%s as %s %s' % (header, lang, std[0])
            if res.returncode != 0:
                status = 1
                report_compile_failure(what, res)
            elif leaked:
                status = 1
                print('FAIL: %s read reference headers: %s' % (what, leaked))
    # C++ callers must reach the C symbols: no function may be mangled.
    funcs = args.functions
    if funcs:
        src = os.path.join(args.workdir, 'linkage.cc')
        body = ['#include <ucp/api/ucp.h>', 'using abi_any_fn = void (*)();',
                'extern const abi_any_fn abi_refs[];',
                'const abi_any_fn abi_refs[] = {']
        body += ['    reinterpret_cast<abi_any_fn>(&%s),' % f for f in funcs]
        body += ['};', '']
        write(src, '\n'.join(body))
        obj = os.path.join(args.workdir, 'linkage.o')
        res, _ = compile_ours(args, src, obj, ['-std=c++20', '-c'], 'c++')
        checked += 1
        if res.returncode != 0:
            status = 1
            report_compile_failure('the C++ linkage check', res)
        else:
            nm = run(['nm', '-u', obj])
            mangled = [l.split()[-1] for l in nm.stdout.splitlines()
                       if l.split() and l.split()[-1].startswith('_Z')]
            if nm.returncode != 0:
                status = 1
                print('FAIL: nm failed: ' + nm.stdout)
            elif mangled:
                status = 1
                print('FAIL: functions with C++ linkage (missing BEGIN_C_DECLS?):')
                print('\n'.join('  ' + m for m in mangled))
    print('standalone check: %d compiles (%d headers x C gnu11/c99 and C++20, '
          'plus C++ linkage of %d functions)' % (checked, len(headers), len(funcs)))
    return status


def check_exports(args, api):
    """Every function UCX 1.13's headers declare and its libraries export is
    exported by ours too (a program linked against UCX must find each one at
    load time). Static inline functions of the headers are not exported by
    either: the reference libraries' exports leave them out."""
    def exports(libs):
        names = set()
        for lib in libs:
            out = run(['nm', '-D', '--defined-only', lib]).stdout
            names.update(line.split()[-1] for line in out.splitlines() if line.split())
        return names
    have = exports(args.lib)
    reference = exports(args.ref_lib)
    wanted = sorted({f[0] for f in api.functions} & reference)
    missing = [name for name in wanted if name not in have]
    if missing:
        fail('%d of %d declared functions not exported: %s' %
             (len(missing), len(wanted), ' '.join(missing)))
        return 1
    print('ok: all %d functions of the reference headers are exported' % len(wanted))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('mode', choices=['layout', 'declarations', 'standalone', 'exports'])
    parser.add_argument('--lib', action='append', default=[],
                        help='exports: a library of ours to look in (repeatable)')
    parser.add_argument('--ref-lib', action='append', default=[],
                        help='exports: a reference UCX library (repeatable)')
    parser.add_argument('--ref-root', default='/usr/include')
    parser.add_argument('--our-root', required=True)
    parser.add_argument('--cc', default='cc')
    parser.add_argument('--cxx', default='c++')
    parser.add_argument('--workdir', required=True)
    parser.add_argument('--api-major', type=int)
    parser.add_argument('--api-minor', type=int)
    args = parser.parse_args()
    args.cc = shlex.split(args.cc)
    args.cxx = shlex.split(args.cxx)
    args.workdir = os.path.join(args.workdir, args.mode)
    os.makedirs(args.workdir, exist_ok=True)

    have_ref = os.path.exists(os.path.join(args.ref_root, 'ucp', 'api', 'ucp.h'))
    if not have_ref and args.mode != 'standalone':
        print('SKIP: reference UCX headers not found under %s/ucp/api '
              '(install libucx-dev)' % args.ref_root)
        return SKIP
    if args.mode == 'layout':
        return check_layout(args, parse_headers(args, args.ref_root))
    if args.mode == 'declarations':
        return check_declarations(args, parse_headers(args, args.ref_root))
    if args.mode == 'exports':
        return check_exports(args, parse_headers(args, args.ref_root))
    # Our own declarations: every function we declare needs C linkage.
    args.functions = [f[0] for f in parse_headers(args, args.our_root).functions]
    return check_standalone(args)


if __name__ == '__main__':
    sys.exit(main())
