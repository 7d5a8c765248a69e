// The seccomp filters of an intern (docs/isolation.md, "System calls"): classic BPF programs, the
// form bubblewrap's --seccomp FD loads, generated here rather than by libseccomp (no npm package
// compiles them, and a deny list this short is a few dozen instructions). Two policies:
// - `runtime`, for every process of the intern's sandbox (the daemon and the built-in agent, which
//   are cohort's own code): refuses what no intern needs, but allows the user namespace, mounts
//   and pivot_root that bubblewrap needs to build manual mode's inner sandbox;
// - `tenant`, for everything a tenant runs (shell commands in both modes, Claude Code, Codex, and
//   whatever they start): the same, plus namespaces, mounts and the rest of what a user namespace
//   would open.
// Pure: the programs are data, tested by running them in an interpreter (seccomp.test.ts) and by
// real calls inside an intern (test/interns-isolation.test.ts). May import: node built-ins.

/** One denied system call: its number per architecture, and why it is denied. */
type Syscall = { x64: number | null; arm64: number | null };

export const SYSCALLS = {
  add_key: { x64: 248, arm64: 217 },
  request_key: { x64: 249, arm64: 218 },
  keyctl: { x64: 250, arm64: 219 },
  bpf: { x64: 321, arm64: 280 },
  userfaultfd: { x64: 323, arm64: 282 },
  perf_event_open: { x64: 298, arm64: 241 },
  io_uring_setup: { x64: 425, arm64: 425 },
  io_uring_enter: { x64: 426, arm64: 426 },
  io_uring_register: { x64: 427, arm64: 427 },
  kexec_load: { x64: 246, arm64: 104 },
  kexec_file_load: { x64: 320, arm64: 294 },
  reboot: { x64: 169, arm64: 142 },
  init_module: { x64: 175, arm64: 105 },
  finit_module: { x64: 313, arm64: 273 },
  delete_module: { x64: 176, arm64: 106 },
  create_module: { x64: 174, arm64: null },
  get_kernel_syms: { x64: 177, arm64: null },
  query_module: { x64: 178, arm64: null },
  open_by_handle_at: { x64: 304, arm64: 265 },
  acct: { x64: 163, arm64: 89 },
  swapon: { x64: 167, arm64: 224 },
  swapoff: { x64: 168, arm64: 225 },
  quotactl: { x64: 179, arm64: 60 },
  quotactl_fd: { x64: 443, arm64: 443 },
  syslog: { x64: 103, arm64: 116 },
  settimeofday: { x64: 164, arm64: 170 },
  clock_settime: { x64: 227, arm64: 112 },
  clock_adjtime: { x64: 305, arm64: 266 },
  iopl: { x64: 172, arm64: null },
  ioperm: { x64: 173, arm64: null },
  lookup_dcookie: { x64: 212, arm64: 18 },
  nfsservctl: { x64: 180, arm64: 42 },
  _sysctl: { x64: 156, arm64: null },
  uselib: { x64: 134, arm64: null },
  ustat: { x64: 136, arm64: null },
  sysfs: { x64: 139, arm64: null },
  vhangup: { x64: 153, arm64: 58 },
  kcmp: { x64: 312, arm64: 272 },
  process_vm_readv: { x64: 310, arm64: 270 },
  process_vm_writev: { x64: 311, arm64: 271 },
  fanotify_init: { x64: 300, arm64: 262 },
  mbind: { x64: 237, arm64: 235 },
  set_mempolicy: { x64: 238, arm64: 237 },
  set_mempolicy_home_node: { x64: 450, arm64: 450 },
  migrate_pages: { x64: 256, arm64: 238 },
  move_pages: { x64: 279, arm64: 239 },
  sethostname: { x64: 170, arm64: 161 },
  setdomainname: { x64: 171, arm64: 162 },
  setns: { x64: 308, arm64: 268 },
  open_tree: { x64: 428, arm64: 428 },
  move_mount: { x64: 429, arm64: 429 },
  fsopen: { x64: 430, arm64: 430 },
  fsconfig: { x64: 431, arm64: 431 },
  fsmount: { x64: 432, arm64: 432 },
  fspick: { x64: 433, arm64: 433 },
  mount_setattr: { x64: 442, arm64: 442 },
  // Denied to tenants only: bubblewrap needs them to build manual mode's sandbox.
  mount: { x64: 165, arm64: 40 },
  umount2: { x64: 166, arm64: 39 },
  pivot_root: { x64: 155, arm64: 41 },
  chroot: { x64: 161, arm64: 51 },
  unshare: { x64: 272, arm64: 97 },
  clone: { x64: 56, arm64: 220 },
  clone3: { x64: 435, arm64: 435 },
} satisfies Record<string, Syscall>;

export type SyscallName = keyof typeof SYSCALLS;

/** Every namespace flag of clone and unshare: a new namespace of any kind is a tenant's way into
 * kernel code that otherwise needs privilege (CLONE_NEWUSER above all). */
export const CLONE_NAMESPACES =
  0x00020000 /* NEWNS */ |
  0x02000000 /* NEWCGROUP */ |
  0x04000000 /* NEWUTS */ |
  0x08000000 /* NEWIPC */ |
  0x10000000 /* NEWUSER */ |
  0x20000000 /* NEWPID */ |
  0x40000000 /* NEWNET */ |
  0x00000080; /* NEWTIME */

const EPERM = 1;
const ENOSYS = 38;

export type Rule =
  /** The call fails with errno. */
  | { call: SyscallName; errno: number; why: string }
  /** The call fails with errno when its first argument has any of `flags`. */
  | { call: SyscallName; errno: number; flags: number; why: string };

/** What every process of an intern is refused, with the reason (docs/isolation.md lists them). */
export const RUNTIME_RULES: Rule[] = [
  ...(['add_key', 'request_key', 'keyctl'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: 'kernel keyrings are kept per uid, outside every namespace: a dead drop between interns',
  })),
  { call: 'bpf', errno: EPERM, why: 'eBPF programs run in the kernel' },
  { call: 'userfaultfd', errno: EPERM, why: 'a tool for stalling the kernel at will, used by exploits' },
  { call: 'perf_event_open', errno: EPERM, why: 'performance counters: side channels and kernel surface' },
  ...(['io_uring_setup', 'io_uring_enter', 'io_uring_register'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: 'io_uring bypasses system-call filtering and has had many kernel bugs',
  })),
  ...(['kexec_load', 'kexec_file_load', 'reboot'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: "the host's kernel",
  })),
  ...(
    ['init_module', 'finit_module', 'delete_module', 'create_module', 'get_kernel_syms', 'query_module'] as const
  ).map((call) => ({ call, errno: EPERM, why: 'kernel modules' })),
  { call: 'open_by_handle_at', errno: EPERM, why: 'opens files by handle, past the mount namespace' },
  ...(['acct', 'swapon', 'swapoff', 'quotactl', 'quotactl_fd', 'syslog', 'vhangup'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: "the host's administration",
  })),
  ...(['settimeofday', 'clock_settime', 'clock_adjtime'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: "the host's clock",
  })),
  ...(['iopl', 'ioperm'] as const).map((call) => ({ call, errno: EPERM, why: 'hardware I/O ports' })),
  ...(['lookup_dcookie', 'nfsservctl', '_sysctl', 'uselib', 'ustat', 'sysfs'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: 'obsolete',
  })),
  ...(['kcmp', 'process_vm_readv', 'process_vm_writev'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: "another process's memory and files",
  })),
  { call: 'fanotify_init', errno: EPERM, why: 'watches whole mounts' },
  ...(['mbind', 'set_mempolicy', 'set_mempolicy_home_node', 'migrate_pages', 'move_pages'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: "the host's memory placement",
  })),
  ...(['sethostname', 'setdomainname'] as const).map((call) => ({ call, errno: EPERM, why: 'names the host' })),
  { call: 'setns', errno: EPERM, why: 'joins another namespace' },
  ...(['open_tree', 'move_mount', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr'] as const).map((call) => ({
    call,
    errno: EPERM,
    why: 'the new mount API',
  })),
];

/** What a tenant's processes are refused besides. */
export const TENANT_RULES: Rule[] = [
  ...RUNTIME_RULES,
  ...(['mount', 'umount2', 'pivot_root', 'chroot'] as const).map((call) => ({ call, errno: EPERM, why: 'mounts' })),
  { call: 'unshare', errno: EPERM, flags: CLONE_NAMESPACES, why: 'new namespaces (a user namespace above all)' },
  { call: 'clone', errno: EPERM, flags: CLONE_NAMESPACES, why: 'new namespaces (a user namespace above all)' },
  // clone3 passes its flags in memory, which a filter cannot read: ENOSYS makes libc fall back to clone.
  { call: 'clone3', errno: ENOSYS, why: 'new namespaces (its flags cannot be checked)' },
];

export type Policy = 'runtime' | 'tenant';
export type Arch = 'x64' | 'arm64';

/** AUDIT_ARCH_* of each architecture a filter is made for. */
export const AUDIT_ARCH: Record<Arch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
/** x86_64's x32 ABI marks its calls with this bit; the filter refuses them all. */
const X32_BIT = 0x40000000;

// Classic BPF, as struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; } (linux/filter.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
/** Offsets in struct seccomp_data: nr, arch, then args[0] (its low 32 bits on little-endian machines). */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;

export const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
export const retErrno = (errno: number) => RET_ERRNO | errno;

export type Instruction = { code: number; jt: number; jf: number; k: number };
const ins = (code: number, k: number, jt = 0, jf = 0): Instruction => ({ code, jt, jf, k });

/** The program of a policy for an architecture, as instructions. */
export function program(policy: Policy, arch: Arch): Instruction[] {
  const rules = policy === 'tenant' ? TENANT_RULES : RUNTIME_RULES;
  // A call of another architecture (x86_64's 32-bit int 0x80, for one) has other numbers, which
  // this list does not name: all of them fail.
  const out: Instruction[] = [ins(LD_W_ABS, ARCH), ins(JEQ_K, AUDIT_ARCH[arch], 1, 0), ins(RET_K, retErrno(ENOSYS))];
  out.push(ins(LD_W_ABS, NR));
  if (arch === 'x64') out.push(ins(JGE_K, X32_BIT, 0, 1), ins(RET_K, retErrno(ENOSYS)));
  for (const r of rules) {
    const nr = SYSCALLS[r.call][arch];
    if (nr === null) continue;
    if (!('flags' in r)) {
      out.push(ins(JEQ_K, nr, 0, 1), ins(RET_K, retErrno(r.errno)));
      continue;
    }
    // The argument replaces the number in the accumulator, so this call's verdict is given here.
    out.push(
      ins(JEQ_K, nr, 0, 4),
      ins(LD_W_ABS, ARG0_LOW),
      ins(JSET_K, r.flags, 0, 1),
      ins(RET_K, retErrno(r.errno)),
      ins(RET_K, RET_ALLOW),
    );
  }
  out.push(ins(RET_K, RET_ALLOW));
  return out;
}

/** This machine's architecture, if a filter can be made for it. */
export function hostArch(): Arch | null {
  return process.arch === 'x64' || process.arch === 'arm64' ? process.arch : null;
}

/** The program as bubblewrap reads it from --seccomp FD: 8 bytes an instruction, in host byte order. */
export function seccompProgram(policy: Policy, arch: Arch | null = hostArch()): Buffer {
  if (!arch) throw new Error(`no seccomp filter for ${process.arch}: cohort isolates interns on x86_64 and arm64`);
  const p = program(policy, arch);
  const buf = Buffer.alloc(p.length * 8);
  p.forEach((i, n) => {
    buf.writeUInt16LE(i.code, n * 8);
    buf.writeUInt8(i.jt, n * 8 + 2);
    buf.writeUInt8(i.jf, n * 8 + 3);
    buf.writeUInt32LE(i.k, n * 8 + 4);
  });
  return buf;
}
