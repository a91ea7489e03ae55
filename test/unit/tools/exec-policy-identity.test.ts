/**
 * exec's guard (no sandbox) treats the workspace's id file like sessions/:
 * commands may read it but not write, remove or rename it, however the path
 * is spelled; files whose names merely start the same stay writable.
 */
import { describe, expect, it } from 'vitest';
import { denyReason } from '../../../src/tools/exec-policy.js';

const WS = '/srv/magpie/workspace';
const guard = { workspace: WS };

describe('exec guard: .magpie-id is read-only', () => {
  it.each([
    'echo forged > .magpie-id',
    'echo forged >> ./.magpie-id',
    'rm .magpie-id',
    'rm -f notes/../.magpie-id',
    'mv .magpie-id old-id',
    `cp other-id ${WS}/.magpie-id`,
    'cd notes && echo x > ../.magpie-id',
    'sed -i s/a/b/ .magpie-id',
  ])('refuses %j', (command) => {
    expect(denyReason(command, guard)).toBe('changing .magpie-id (read-only)');
  });

  it.each(['cat .magpie-id', 'echo x > .magpie-id-notes.md', 'cp .magpie-id notes/id-copy'])(
    'allows %j',
    (command) => {
      expect(denyReason(command, guard)).toBeUndefined();
    },
  );

  it('still names sessions/ for a change there', () => {
    expect(denyReason('rm sessions/cli_test.jsonl', guard)).toBe('changing sessions/ (read-only)');
  });
});
