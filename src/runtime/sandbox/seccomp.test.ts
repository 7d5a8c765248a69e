// The filters as data: run in a classic-BPF interpreter, call by call, for both policies and both
// architectures; the numbers checked against the kernel's own headers where the machine has them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import {
  AUDIT_ARCH,
  type Arch,
  CLONE_NAMESPACES,
  type Instruction,
  type Policy,
  program,
  RET_ALLOW,
  RUNTIME_RULES,
  retErrno,
  seccompProgram,
  SYSCALLS,
  TENANT_RULES,
} from './seccomp.ts';

/** Runs a program on one call (struct seccomp_data: nr, arch, args[0]) as the kernel would. */
function run(p: Instruction[], call: { nr: number; arch: number; arg0?: number }): number {
  let a = 0;
  for (let pc = 0; pc < p.length; ) {
    const i = p[pc]!;
    switch (i.code) {
      case 0x20:
        a = i.k === 0 ? call.nr : i.k === 4 ? call.arch : i.k === 16 ? (call.arg0 ?? 0) >>> 0 : Number.NaN;
        assert.ok(!Number.isNaN(a), `load of offset ${i.k}`);
        pc++;
        break;
      case 0x15:
        pc += 1 + (a === i.k ? i.jt : i.jf);
        break;
      case 0x35:
        pc += 1 + (a >= i.k ? i.jt : i.jf);
        break;
      case 0x45:
        pc += 1 + ((a & i.k) !== 0 ? i.jt : i.jf);
        break;
      case 0x06:
        return i.k;
      default:
        assert.fail(`unknown instruction ${i.code}`);
    }
  }
  assert.fail('the program fell off its end');
}

const EPERM = retErrno(1);
const ENOSYS = retErrno(38);
const ARCHES: Arch[] = ['x64', 'arm64'];
const nr = (name: keyof typeof SYSCALLS, arch: Arch) => SYSCALLS[name][arch];
const READ = { x64: 0, arm64: 63 };
const CLONE_THREAD_FLAGS = 0x003d0f00; // what pthread_create passes: no namespace

for (const arch of ARCHES) {
  const verdict = (policy: Policy, call: keyof typeof SYSCALLS, arg0 = 0) =>
    run(program(policy, arch), { nr: nr(call, arch)!, arch: AUDIT_ARCH[arch], arg0 });

  test(`${arch}: every call the runtime refuses, both policies refuse with EPERM`, () => {
    for (const r of RUNTIME_RULES) {
      if (nr(r.call, arch) === null) continue;
      for (const policy of ['runtime', 'tenant'] as const)
        assert.equal(verdict(policy, r.call), EPERM, `${policy}: ${r.call}`);
    }
  });

  test(`${arch}: namespaces and mounts are the tenant's refusals only (manual mode's bubblewrap needs them)`, () => {
    const table: [keyof typeof SYSCALLS, number, number, number][] = [
      // call, first argument, runtime, tenant
      ['mount', 0, RET_ALLOW, EPERM],
      ['umount2', 0, RET_ALLOW, EPERM],
      ['pivot_root', 0, RET_ALLOW, EPERM],
      ['chroot', 0, RET_ALLOW, EPERM],
      ['unshare', 0x10000000, RET_ALLOW, EPERM],
      ['unshare', 0x00020000, RET_ALLOW, EPERM],
      ['unshare', 0x40000000, RET_ALLOW, EPERM],
      ['unshare', 0x00000080, RET_ALLOW, EPERM],
      ['unshare', 0x00000200 /* CLONE_FS */, RET_ALLOW, RET_ALLOW],
      ['clone', 0x10000000 | 17, RET_ALLOW, EPERM],
      ['clone', 0x20000000 | 17, RET_ALLOW, EPERM],
      ['clone', CLONE_THREAD_FLAGS, RET_ALLOW, RET_ALLOW],
      ['clone', 17 /* fork: SIGCHLD */, RET_ALLOW, RET_ALLOW],
      ['clone3', 0, RET_ALLOW, ENOSYS],
    ];
    for (const [call, arg0, runtime, tenant] of table) {
      assert.equal(verdict('runtime', call, arg0), runtime, `runtime: ${call}(${arg0.toString(16)})`);
      assert.equal(verdict('tenant', call, arg0), tenant, `tenant: ${call}(${arg0.toString(16)})`);
    }
    assert.equal(CLONE_NAMESPACES, 0x7e020080);
  });

  test(`${arch}: ordinary calls pass; another architecture's calls all fail`, () => {
    for (const policy of ['runtime', 'tenant'] as const) {
      const p = program(policy, arch);
      assert.equal(run(p, { nr: READ[arch], arch: AUDIT_ARCH[arch] }), RET_ALLOW);
      for (let n = 0; n < 460; n++) {
        const denied = (policy === 'tenant' ? TENANT_RULES : RUNTIME_RULES).some((r) => nr(r.call, arch) === n);
        if (!denied) assert.equal(run(p, { nr: n, arch: AUDIT_ARCH[arch], arg0: 0 }), RET_ALLOW, `${policy}: ${n}`);
      }
      const other = arch === 'x64' ? 0x40000003 /* i386 */ : AUDIT_ARCH.x64;
      assert.equal(run(p, { nr: READ[arch], arch: other }), ENOSYS);
    }
  });
}

test("x64: the x32 ABI's calls all fail", () => {
  assert.equal(run(program('tenant', 'x64'), { nr: 0x40000000 | 248, arch: AUDIT_ARCH.x64 }), ENOSYS);
  assert.equal(run(program('runtime', 'x64'), { nr: 0x40000000, arch: AUDIT_ARCH.x64 }), ENOSYS);
});

test('the program bubblewrap reads: 8 bytes an instruction, little-endian', () => {
  const p = program('tenant', 'x64');
  const b = seccompProgram('tenant', 'x64');
  assert.equal(b.length, p.length * 8);
  assert.deepEqual(
    { code: b.readUInt16LE(8), jt: b[10], jf: b[11], k: b.readUInt32LE(12) },
    { code: 0x15, jt: 1, jf: 0, k: AUDIT_ARCH.x64 },
  );
  assert.ok(p.length < 256, 'short enough for the kernel (4096) and for byte-sized jumps');
  assert.throws(() => seccompProgram('tenant', null), /no seccomp filter for/);
});

// The kernel's own numbering, where its headers are installed (Debian: linux-libc-dev).
const HEADERS: [Arch, string][] = [
  ['x64', '/usr/include/x86_64-linux-gnu/asm/unistd_64.h'],
  ['arm64', '/usr/include/asm-generic/unistd.h'],
];
for (const [arch, file] of HEADERS) {
  test(`${arch}: the numbers are the kernel's (${file})`, {
    skip: !existsSync(file) && `${file} is not installed`,
  }, () => {
    const header = readFileSync(file, 'utf8');
    for (const [name, nums] of Object.entries(SYSCALLS)) {
      const m = new RegExp(`#define __NR(?:3264)?_${name}\\s+(\\d+)`).exec(header);
      const want = nums[arch];
      // Calls an architecture never had (or that a header this old does not name yet) are absent.
      if (want === null) assert.equal(m, null, `${name} has no number on ${arch}`);
      else if (m) assert.equal(Number(m[1]), want, name);
    }
  });
}

test('docs/isolation.md names every refused call, under the policy that refuses it', () => {
  const doc = readFileSync(new URL('../../../docs/isolation.md', import.meta.url), 'utf8');
  const rows = doc.split('\n').filter((l) => /^ {2}\| (every process|what a tenant runs) \|/.test(l));
  const named = (who: string) =>
    new Set(rows.filter((r) => r.includes(`| ${who} |`)).flatMap((r) => [...r.matchAll(/`(\w+)`/g)].map((m) => m[1]!)));
  const runtime = new Set(RUNTIME_RULES.map((r) => r.call));
  const tenantOnly = new Set(TENANT_RULES.map((r) => r.call).filter((c) => !runtime.has(c)));
  assert.deepEqual([...named('every process')].sort(), [...runtime].sort());
  assert.deepEqual([...named('what a tenant runs')].sort(), [...tenantOnly].sort());
});
