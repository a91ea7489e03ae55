/**
 * A backup taken from a running magpie restores on a "new machine": the
 * daemon (the in-process `start` role, real Redis, fake Telegram and OpenAI
 * servers, the CLI channel) has memory, a session, a reminder, a paired
 * stranger, an "always allow" rule, a `/model` choice and an unanswered
 * message waiting behind a running turn when the backup is taken. Restored
 * into a fresh workspace, state folder and a second redis-server, a new
 * daemon remembers (memory and the session reach the model), fires the
 * reminder once, still admits the paired stranger and answers the waiting
 * message exactly once.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningRole, startRole } from '../../../src/app/roles.js';
import { createBackup } from '../../../src/backup/backup.js';
import { restoreBackup } from '../../../src/backup/restore.js';
import { RedisBackupStore } from '../../../src/bus/backup-store.js';
import { Bus } from '../../../src/bus/bus.js';
import { approvePairing, listPairingRequests } from '../../../src/bus/pairing-store.js';
import { onUnsolicited, sendAndWait } from '../../../src/channels/cli/client.js';
import { silentLogger } from '../../../src/log/index.js';
import { roleConfig, telegramEnv } from '../../fakes/config.js';
import {
  type FakeOpenAI,
  lastUserText,
  type RecordedRequest,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { type RedisHandle, startRedis } from '../../fakes/redis-server.js';
import { dmUpdate, type FakeTelegram, startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import { workspaceWith } from '../../fakes/workspace.js';

const stranger = { id: 4242, first_name: 'Stranger', username: 'stranger' };
const said = (req: RecordedRequest, text: string) => JSON.stringify(req.body.messages ?? []).includes(text);

describe('backup of a running daemon, restored on a new machine', () => {
  let openai: FakeOpenAI;
  let telegram: FakeTelegram;
  let fresh: RedisHandle;
  let root: string;
  const roles: RunningRole[] = [];
  const clients: Redis[] = [];
  const buses: Bus[] = [];

  beforeAll(async () => {
    openai = await startFakeOpenAI({
      models: ['fake-model', 'other-model'],
      responder: (req) =>
        said(req, 'SLOW-TURN') && !said(req, 'echo:')
          ? { content: 'slow answer', delayMs: 60_000 }
          : { content: `echo: ${lastUserText(req).slice(-40)}` },
    });
    telegram = await startFakeTelegram({ token: '991:backup' });
    fresh = await startRedis();
    root = mkdtempSync(path.join(os.tmpdir(), 'magpie-daemon-backup-'));
  });
  afterAll(async () => {
    for (const role of roles) await role.stop();
    for (const c of clients) c.disconnect();
    for (const b of buses) await b.close();
    await openai.close();
    await telegram.close();
    await fresh.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('remembers, fires the reminder once, admits the paired user and answers the waiting message once', async () => {
    const prefix = `test-${randomUUID()}`;
    const run = randomUUID().slice(0, 8);
    const chat = `ana-${run}`;
    const waiting = `bob-${run}`;
    const slow = `carl-${run}`;
    const wsA = workspaceWith(path.join(root, 'a', 'ws'), 'You are BACKUP-SOUL.', 'the boat is red');
    const configA = roleConfig(
      { workspace: wsA, openai, prefix },
      {
        ...telegramEnv(telegram, '@owner'),
        MAGPIE_FALLBACK_MODELS: 'other-model',
        MAGPIE_STATE_DIR: path.join(root, 'a', 'state'),
      },
    );
    const roleA = await startRole({
      role: 'start',
      config: configA,
      logger: silentLogger(),
      concurrency: 1,
      shutdownTimeoutMs: 500,
    });
    roles.push(roleA);
    const busA = roleA.bus;

    // A conversation (its session file) and the chat's choices.
    await sendAndWait(busA, { content: 'my name is Ana', chatId: chat, timeoutMs: 15_000 });
    await busA.modelChoiceStore().set(`cli:${chat}`, 'other-model');
    await busA.approvals.addRule(`cli:${chat}`, { tool: 'exec', prefix: 'git status' });
    // A stranger on Telegram gets a code; the owner approves it.
    telegram.pushUpdate(dmUpdate(stranger, 'hello?'));
    await telegram.waitFor(
      () => telegram.sent(stranger.id).some((m) => m.text.includes('pairing approve')),
      15_000,
    );
    const [request] = await listPairingRequests(busA.redis, prefix);
    expect(await approvePairing(busA.redis, prefix, request?.code ?? '')).toBeDefined();
    // A reminder due after the first daemon has stopped.
    const runAt = Date.now() + 6_000;
    await busA.cronStore().add({
      id: `r${run}`.replace(/[^a-z0-9]/g, ''),
      channel: 'cli',
      chatId: chat,
      sessionKey: `cli:${chat}`,
      message: 'REMINDER-TEA',
      mode: 'remind',
      schedule: { kind: 'once', runAt, tz: 'UTC', description: 'in 6 seconds' },
      createdAt: new Date().toISOString(),
    });
    // A turn that runs through the backup, and a message waiting behind it (one turn at a time).
    await busA.publishInbound({
      id: `cli:${randomUUID()}`,
      channel: 'cli',
      chatId: slow,
      senderId: 'cli',
      content: 'SLOW-TURN',
    });
    await waitFor(() => openai.requests.some((r) => said(r, 'SLOW-TURN')), 10_000, 'the slow turn');
    await busA.publishInbound({
      id: `cli:${randomUUID()}`,
      channel: 'cli',
      chatId: waiting,
      senderId: 'cli',
      content: 'UNANSWERED-QUESTION',
    });

    const out = path.join(root, 'backup.tar.gz');
    const { manifest } = await createBackup({
      workspace: wsA,
      stateDir: configA.stateDir,
      envFile: path.join(root, 'a', '.env'),
      prefix,
      store: new RedisBackupStore(busA.redis, prefix),
      out,
    });
    // Taken while the turn ran: the turn is still marked running and the waiting message untouched.
    expect((await busA.redis.keys(`${prefix}:running:*`)).length).toBe(1);
    expect(openai.requests.some((r) => said(r, 'UNANSWERED-QUESTION'))).toBe(false);
    expect(manifest.entries.some((e) => e.path.startsWith('workspace/sessions/'))).toBe(true);

    await roleA.stop();
    // The reminder must not have fired on the first daemon.
    expect(Date.now()).toBeLessThan(runAt);
    expect(openai.requests.some((r) => said(r, 'UNANSWERED-QUESTION'))).toBe(false);

    // The new machine: a fresh Redis, workspace and state folder.
    const wsB = path.join(root, 'b', 'ws');
    const freshRedis = new Redis(fresh.url);
    clients.push(freshRedis);
    const restored = await restoreBackup({
      file: out,
      workspace: wsB,
      stateDir: path.join(root, 'b', 'state'),
      envFile: path.join(root, 'b', '.env'),
      store: new RedisBackupStore(freshRedis, prefix),
    });
    expect(restored.redisKeys).toBe(manifest.redisKeys);
    expect(readFileSync(path.join(wsB, 'memory', 'MEMORY.md'), 'utf8')).toContain('the boat is red');

    const configB = roleConfig(
      { workspace: wsB, openai, prefix, redisUrl: fresh.url },
      {
        ...telegramEnv(telegram, '@owner'),
        MAGPIE_FALLBACK_MODELS: 'other-model',
        MAGPIE_STATE_DIR: path.join(root, 'b', 'state'),
      },
    );
    // Listening before the new daemon starts: it answers the waiting message at once.
    const listener = await Bus.connect({ config: configB, logger: silentLogger() });
    buses.push(listener);
    const reminders: string[] = [];
    const waitingReplies: string[] = [];
    await onUnsolicited(listener, chat, (m) => reminders.push(m.content));
    await onUnsolicited(listener, waiting, (m) => waitingReplies.push(m.content));
    const roleB = await startRole({
      role: 'start',
      config: configB,
      logger: silentLogger(),
      shutdownTimeoutMs: 500,
    });
    roles.push(roleB);
    const busB = roleB.bus;

    // The waiting message is answered by the new daemon.
    await waitFor(
      () => waitingReplies.some((t) => t.includes('UNANSWERED-QUESTION')),
      15_000,
      'the waiting answer',
    );
    // The reminder fires on the new daemon.
    await waitFor(() => reminders.some((t) => t.includes('REMINDER-TEA')), 15_000, 'the reminder');
    // The paired stranger is admitted: answered by the model, not sent a code.
    const before = telegram.sent(stranger.id).length;
    telegram.pushUpdate(dmUpdate(stranger, 'STRANGER-AGAIN'));
    await telegram.waitFor(() => telegram.sent(stranger.id).length > before, 15_000);
    expect(telegram.sent(stranger.id).slice(before)[0]?.text).toContain('echo: STRANGER-AGAIN');
    // It remembers: the memory and the earlier conversation reach the model for the old chat.
    const reply = await sendAndWait(busB, { content: 'what is my name?', chatId: chat, timeoutMs: 15_000 });
    expect(reply.content).toContain('echo:');
    const asked = openai.requests.filter((r) => said(r, 'what is my name?'));
    expect(asked).toHaveLength(1);
    expect(said(asked[0] as RecordedRequest, 'my name is Ana')).toBe(true);
    expect(said(asked[0] as RecordedRequest, 'the boat is red')).toBe(true);
    expect(asked[0]?.body.model).toBe('other-model');
    expect(await busB.approvals.rules(`cli:${chat}`)).toEqual([{ tool: 'exec', prefix: 'git status' }]);

    // Exactly once, now that everything after it has happened.
    expect(
      openai.requests.filter((r) => said(r, 'UNANSWERED-QUESTION') && !said(r, 'echo: UNANSWERED')),
    ).toHaveLength(1);
    expect(waitingReplies.filter((t) => t.includes('UNANSWERED-QUESTION'))).toHaveLength(1);
    expect(reminders.filter((t) => t.includes('REMINDER-TEA'))).toHaveLength(1);
    expect(await busB.cronStore().list()).toEqual([]);
    expect(existsSync(path.join(root, 'b', 'ws', '.magpie-id'))).toBe(true);
  });
});
