#!/usr/bin/env python3
"""sass_local.py — the SASS of the Hopper kernels on a machine without a GPU or cuobjdump.

    cubin   = nvcc -arch=sm_90a -cubin FILE.cu            (the project's flags; --cubin takes one)
    listing = nvdisasm(cubin with its ELF header as CUDA 11.8 reads it)
    count   = per kernel whose name matches --kernel: instructions by opcode;
              with two cubins, each kernel's counts side by side and its lines that differ

The CUDA toolkit here has nvcc and ptxas but no disassembler. Debian 12's nvidia-cuda-toolkit
(11.8, in the archive's non-free section) has nvdisasm, which decodes sm_90a code but not the
header that CUDA 12 and later write (ELF ABI version 8, the architecture in other bits of
e_flags): the script rewrites those two fields of a copy to the older form (ABI 7, e_flags
0x5a055a: sm_90, virtual sm_90, 64-bit addresses, unified texture mode) and disassembles the copy;
it takes sm_90a cubins only (the flags are those of sm_90 whatever the cubin was built for). Instructions newer
than 11.8 (VIADD, for one) are not decoded and leave a gap in the addresses; the listing marks each
gap's instructions as UNDECODED, so counts stay whole (an undecoded instruction after a kernel's
last decoded one would not be seen). Checked against Nsight Compute's SASS page
of the same kernel (docs/data/ncu_sass_bwd_head_d64_causal_session33.csv.gz): the same 3,376
instructions in the same order, the 45 VIADD among them UNDECODED; the rest differ only in how
operands are written (11.8 prints no .reuse flags and no memory descriptors desc[UR4]).

nvdisasm: --nvdisasm PATH, else $NVDISASM, else a copy fetched once into --cache (default
~/.cache/flashdemo/nvdisasm) from Debian's archive by `apt-get download` (nothing is installed).

Usage:
  python3 scripts/sass_local.py --cu src/cuda/launch/hopper.cu --kernel 'hopper_bwd_kernel.*bfloat16Li128'
  python3 scripts/sass_local.py --cubin A.cubin --cubin B.cubin --kernel REGEX [--diff]
  python3 scripts/sass_local.py --cubin A.cubin --kernel REGEX --listing    (the kernel's SASS)
  python3 scripts/sass_local.py --self-test    (the header rewrite and the parsing, no nvdisasm)
Exit 0; 2 on bad arguments or a step that failed (one line on stderr); --self-test exits 1 when a
check fails.
"""
import argparse
import collections
import difflib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

NVCC_FLAGS = ['-DFLASHDEMO_HAS_CUDA=1', '-O3', '-DNDEBUG', '-arch=sm_90a', '-cubin',
              '--expt-relaxed-constexpr', '-std=c++17', '-isystem=/usr/include/eigen3']
SOURCES = """Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
INSTRUCTION = re.compile(r'^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$')
OPCODE = re.compile(r'(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)')


def fail(message):
    print(f'sass_local.py: {message}', file=sys.stderr)
    sys.exit(2)


def run(command, what, cwd=None):
    try:
        result = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    except OSError as e:
        fail(f'{what} failed: {e.strerror}: {command[0]}')
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ['']
        fail(f'{what} failed: {tail[0]}')
    return result.stdout


def fetched_nvdisasm(cache):
    tool = os.path.join(cache, 'usr', 'bin', 'nvdisasm')
    if os.path.isfile(tool):
        return tool
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError as e:
        fail(f'cannot make the cache {cache}: {e.strerror}')
    with tempfile.TemporaryDirectory() as work:
        sources, lists = os.path.join(work, 'nonfree.sources'), os.path.join(work, 'lists')
        os.makedirs(os.path.join(lists, 'partial'))
        with open(sources, 'w') as f:
            f.write(SOURCES)
        options = ['-o', f'Dir::Etc::sourcelist={sources}', '-o', 'Dir::Etc::sourceparts=/dev/null',
                   '-o', f'Dir::State::Lists={lists}']
        run(['apt-get', *options, 'update'], 'apt-get update (the non-free section)')
        run(['apt-get', *options, 'download', 'nvidia-cuda-toolkit'],
            'apt-get download nvidia-cuda-toolkit', cwd=work)
        debs = [f for f in os.listdir(work) if f.endswith('.deb')]
        if not debs:
            fail('apt-get download nvidia-cuda-toolkit gave no package')
        run(['dpkg-deb', '-x', os.path.join(work, debs[0]), cache], 'dpkg-deb -x')
    if not os.path.isfile(tool):
        fail(f'the package has no usr/bin/nvdisasm (looked in {cache})')
    return tool


def compiled_cubin(cu, include, out):
    nvcc = shutil.which('nvcc') or '/usr/local/cuda/bin/nvcc'
    run([nvcc, *NVCC_FLAGS, f'-I{include}', '-x', 'cu', cu, '-o', out], f'nvcc -cubin {cu}')
    return out


def patched_header(data):
    """A copy of a cubin's bytes with the ELF header as CUDA 11.8's nvdisasm reads it."""
    if len(data) < 64 or data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        raise ValueError('not a 64-bit little-endian ELF file')
    copy = bytearray(data)
    copy[8] = 7                                # EI_ABIVERSION
    struct.pack_into('<I', copy, 48, 0x5a055a)  # e_flags: sm_90, virtual sm_90, 64-bit addresses
    return bytes(copy)


def parse_listing(text):
    """{kernel name: [(address, text)]} from nvdisasm's output, gaps filled with UNDECODED."""
    kernels, name = {}, None
    for line in text.splitlines():
        if line.startswith('.text.'):
            name = line[len('.text.'):].rstrip(':')
            kernels[name] = []
            continue
        m = INSTRUCTION.match(line)
        if name is None or not m:
            continue
        address, body = int(m.group(1), 16), m.group(2)
        rows = kernels[name]
        expected = rows[-1][0] + 16 if rows else 0
        rows.extend((a, 'UNDECODED') for a in range(expected, address, 16))
        rows.append((address, body))
    return kernels


def listing(nvdisasm, cubin):
    try:
        with open(cubin, 'rb') as f:
            data = f.read()
    except OSError as e:
        fail(f'cannot read {cubin}: {e.strerror}')
    try:
        data = patched_header(data)
    except ValueError as e:
        fail(f'{cubin}: {e}')
    with tempfile.NamedTemporaryFile(suffix='.cubin') as copy:
        copy.write(data)
        copy.flush()
        return parse_listing(run([nvdisasm, '-c', copy.name], 'nvdisasm'))


def self_test():
    """The parts that need no nvdisasm, on made-up input; exit 1 on a failure."""
    header = bytearray(64)
    header[:6], header[8] = b'\x7fELF\x02\x01', 8
    struct.pack_into('<I', header, 48, 0x6005a04)
    out = patched_header(bytes(header))
    checks = [out[8] == 7, struct.unpack_from('<I', out, 48)[0] == 0x5a055a, len(out) == 64]
    try:
        patched_header(b'\x7fELF\x01\x01' + bytes(58))  # 32-bit
        checks.append(False)
    except ValueError:
        checks.append(True)
    text = """
.text._Z1kv:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0020*/                   @!P0 BRA `(.L_x_1) ;
.L_x_1:
        /*0050*/                   EXIT ;
.text._Z1jv:
        /*0000*/                   NOP ;
"""
    k = parse_listing(text)
    checks += [list(k) == ['_Z1kv', '_Z1jv'],
               [t for _, t in k['_Z1kv']] == ['LDC R1, c[0x0][0x28]', 'UNDECODED', '@!P0 BRA `(.L_x_1)',
                                              'UNDECODED', 'UNDECODED', 'EXIT'],
               [a for a, _ in k['_Z1kv']] == [0, 16, 32, 48, 64, 80],
               [opcode(t) for _, t in k['_Z1kv']] == ['LDC', 'UNDECODED', 'BRA', 'UNDECODED',
                                                      'UNDECODED', 'EXIT'],
               k['_Z1jv'] == [(0, 'NOP')]]
    failed = [i for i, ok in enumerate(checks) if not ok]
    print(f'sass_local.py --self-test: {len(checks) - len(failed)} of {len(checks)} checks passed'
          + (f'; failed: {failed}' if failed else ''))
    sys.exit(1 if failed else 0)


def opcode(text):
    m = OPCODE.match(text)
    return m.group(1) if m else '?'


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.error = fail
    p.add_argument('--cu', action='append', default=[], help='a .cu file to compile to a cubin')
    p.add_argument('--cubin', action='append', default=[], help='a cubin (sm_90a)')
    p.add_argument('--include', default='src', help='the include root for --cu [src]')
    p.add_argument('--kernel', help='a regular expression on the mangled names')
    p.add_argument('--top', type=int, default=30, help='opcodes listed a kernel [30]')
    p.add_argument('--diff', action='store_true', help='with two cubins: the lines that differ')
    p.add_argument('--listing', action='store_true', help="print the first cubin's kernels' SASS")
    p.add_argument('--nvdisasm', default=os.environ.get('NVDISASM'))
    p.add_argument('--cache', default=os.path.expanduser('~/.cache/flashdemo/nvdisasm'))
    p.add_argument('--self-test', action='store_true', help='check the parts that need no nvdisasm')
    a = p.parse_args()
    if a.self_test:
        self_test()
    if not a.kernel:
        fail('--kernel is required')
    if a.top < 1:
        fail('--top must be at least 1')
    try:
        pattern = re.compile(a.kernel)
    except re.error as e:
        fail(f'--kernel is not a regular expression: {e}')
    if not 1 <= len(a.cubin) + len(a.cu) <= 2:
        fail('give one or two of --cu and --cubin')
    for path in a.cubin + a.cu:
        if not os.path.isfile(path):
            fail(f'no file {path}')
    if a.nvdisasm and not os.access(a.nvdisasm, os.X_OK):
        fail(f'--nvdisasm {a.nvdisasm} is not an executable file')
    nvdisasm = a.nvdisasm or fetched_nvdisasm(a.cache)
    with tempfile.TemporaryDirectory() as work:
        cubins = list(a.cubin)
        for i, cu in enumerate(a.cu):
            cubins.append(compiled_cubin(cu, a.include, os.path.join(work, f'{i}.cubin')))
        builds = [listing(nvdisasm, c) for c in cubins]
    names = sorted({n for b in builds for n in b if pattern.search(n)})
    if not names:
        fail(f'no kernel matches {a.kernel!r}')
    for name in names:
        print(name)
        sides = [b.get(name, []) for b in builds]
        for label, rows in zip('AB', sides):
            ops = collections.Counter(opcode(t) for _, t in rows)
            print(f'  {label if len(sides) > 1 else ""} {len(rows)} instructions: ' +
                  ', '.join(f'{k} {v}' for k, v in ops.most_common(a.top)))
        if len(sides) == 2 and a.diff:
            texts = [[t for _, t in rows] for rows in sides]
            for line in difflib.unified_diff(*texts, 'A', 'B', lineterm='', n=1):
                print('   ', line)
        if a.listing:
            for address, text in sides[0]:
                print(f'    /*{address:04x}*/ {text}')


if __name__ == '__main__':
    main()
