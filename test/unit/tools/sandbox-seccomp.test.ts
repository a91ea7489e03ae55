/** The seccomp filter's program: one for x86-64 and arm64, none for other architectures, every jump inside it. */
import { describe, expect, it } from 'vitest';
import { DENIED_CALLS, seccompFilter, seccompSupported } from '../../../src/tools/sandbox-seccomp.js';

/** Decodes struct sock_filter entries: [code, jt, jf, k]. */
function decode(bytes: Buffer): Array<[number, number, number, number]> {
  const out: Array<[number, number, number, number]> = [];
  for (let i = 0; i < bytes.length; i += 8) {
    out.push([bytes.readUInt16LE(i), bytes[i + 2] ?? 0, bytes[i + 3] ?? 0, bytes.readUInt32LE(i + 4)]);
  }
  return out;
}

describe('seccompFilter', () => {
  it('exists for x64 and arm64, not for others', () => {
    expect(seccompSupported('x64')).toBe(true);
    expect(seccompSupported('arm64')).toBe(true);
    expect(seccompSupported('ia32')).toBe(false);
    expect(seccompFilter('riscv64')).toBeUndefined();
  });

  for (const arch of ['x64', 'arm64']) {
    it(`${arch}: checks the architecture first, ends in allow, and every jump lands inside the program`, () => {
      const program = decode(seccompFilter(arch) ?? Buffer.alloc(0));
      expect(program[0]).toEqual([0x20, 0, 0, 4]);
      expect(program[2]).toEqual([0x06, 0, 0, 0x80000000]);
      expect(program.at(-1)).toEqual([0x06, 0, 0, 0x7fff0000]);
      program.forEach(([code, jt, jf], i) => {
        if ((code & 0x07) !== 0x05) return;
        expect(i + 1 + jt).toBeLessThan(program.length);
        expect(i + 1 + jf).toBeLessThan(program.length);
      });
      // Each refused call: a comparison followed by RET ERRNO(EPERM).
      const refusals = program.filter(([code, , , k]) => code === 0x06 && k === 0x00050001);
      expect(refusals.length).toBe(DENIED_CALLS.length + 2);
    });
  }
});
