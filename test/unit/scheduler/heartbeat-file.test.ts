import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { extractTasks, readHeartbeatTasks } from '../../../src/scheduler/heartbeat-file.js';

describe('extractTasks', () => {
  it('finds no task in headings, comments, blank lines and empty checkboxes', () => {
    const text =
      '# Heartbeat\n\n<!-- Add tasks below,\n one per line -->\n## Daily\n- [ ]\n- [ ]   \n* \n---\n';
    expect(extractTasks(text)).toBeUndefined();
  });

  it('keeps the tasks (without comments) when a line carries one', () => {
    const text = '# Heartbeat\n<!-- hidden -->\n- [ ] check the weather for Lisbon\n';
    expect(extractTasks(text)).toBe('# Heartbeat\n\n- [ ] check the weather for Lisbon');
  });

  it('treats plain prose as a task', () => {
    expect(extractTasks('Tell me if the backup failed.')).toBe('Tell me if the backup failed.');
  });
});

describe('readHeartbeatTasks', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'magpie-hb-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports a missing file', async () => {
    expect(await readHeartbeatTasks(dir)).toMatchObject({ status: 'missing' });
  });

  it('reports a header-only file as empty', async () => {
    await writeFile(path.join(dir, 'HEARTBEAT.md'), '# Heartbeat tasks\n\n<!-- none yet -->\n');
    expect(await readHeartbeatTasks(dir)).toMatchObject({ status: 'empty' });
  });

  it('returns the tasks of a file with one', async () => {
    await writeFile(path.join(dir, 'HEARTBEAT.md'), '# Tasks\n- check the weather\n');
    expect(await readHeartbeatTasks(dir)).toMatchObject({
      status: 'tasks',
      text: '# Tasks\n- check the weather',
    });
  });
});
