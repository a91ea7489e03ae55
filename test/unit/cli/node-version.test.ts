import { describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, MIN_NODE_MINOR, nodeTooOld } from '../../../src/cli/node-version.js';

describe('the Node.js version check', () => {
  it('stops Node 20 with one line naming the version to install and how', () => {
    const line = nodeTooOld('20.19.2');
    expect(line).toContain('Node.js 20.19.2');
    expect(line).toContain('install Node.js 24');
    expect(line).toContain('scripts/use-node.sh');
    expect(line).not.toContain('\n');
  });

  it('stops a Node 22 older than 22.16 (its node:sqlite has no FTS5), naming 22.16 and the version to install', () => {
    for (const v of ['22.0.0', '22.12.1', '22.15.1']) {
      const line = nodeTooOld(v);
      expect(line).toContain(`Node.js ${v}`);
      expect(line).toContain('Node.js 22.16 or newer');
      expect(line).toContain('install Node.js 24');
      expect(line).not.toContain('\n');
    }
  });

  it('accepts Node 22.16, 24 and newer', () => {
    expect(`${MIN_NODE_MAJOR}.${MIN_NODE_MINOR}`).toBe('22.16');
    for (const v of ['22.16.0', '22.23.3', '23.0.0', '24.21.0', '26.1.0'])
      expect(nodeTooOld(v)).toBeUndefined();
  });

  it('accepts the Node it runs on (the suite runs on a supported one)', () => {
    expect(nodeTooOld()).toBeUndefined();
  });
});
