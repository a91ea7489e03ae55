/**
 * End-to-end encryption on the Matrix channel: the user is a second real
 * matrix-js-sdk client with its own Rust crypto (the way Element talks),
 * syncing from the same fake homeserver as the bot. It sends into an
 * encrypted DM; the bot's crypto decrypts the message, its reply goes out
 * encrypted (the server never holds the text), and the user's client
 * decrypts it. A restart loads the same device keys from the state folder and
 * still reads the room; keys that cannot be read leave the bot on its notice.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ClientEvent, createClient, type MatrixClient, SyncState } from 'matrix-js-sdk';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../../fakes/wait-for.js';
import { type MatrixFixture, matrixFixture } from './matrix-harness.js';

let fx: MatrixFixture;
let user: MatrixClient | undefined;

beforeEach(async () => {
  fx = await matrixFixture(inject('redisUrl'));
});

afterEach(async () => {
  user?.stopClient();
  user = undefined;
  await fx.close();
});

const quiet = {
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  getChild: () => quiet,
};

/** The owner as Element would be: a matrix-js-sdk client with Rust crypto, synced. */
async function ownerClient(): Promise<MatrixClient> {
  fx.fake.addUser('owner', { token: 'syt_owner', displayName: 'Owner' });
  const client = createClient({
    baseUrl: fx.fake.url,
    accessToken: 'syt_owner',
    userId: fx.owner,
    deviceId: 'DEV-owner',
    logger: quiet,
  });
  await client.initRustCrypto({ useIndexedDB: false });
  const ready = new Promise<void>((resolve) => {
    client.on(ClientEvent.Sync, (state) => {
      if (state === SyncState.Prepared) resolve();
    });
  });
  await client.startClient({ initialSyncLimit: 20 });
  await ready;
  user = client;
  return client;
}

/** The bodies of the bot's messages the owner's client shows decrypted. */
function decryptedFromBot(client: MatrixClient, roomId: string): string[] {
  const events = client.getRoom(roomId)?.getLiveTimeline().getEvents() ?? [];
  return events
    .filter((e) => e.getSender() === fx.bot && e.isEncrypted() && !e.isDecryptionFailure())
    .map((e) => e.getContent()['body'])
    .filter((b): b is string => typeof b === 'string');
}

const reply = (chatId: string, id: string, content: string) =>
  ({ id, kind: 'message', channel: 'matrix', chatId, content }) as never;

describe('end-to-end encryption', () => {
  it('reads an encrypted DM and answers it encrypted; the owner decrypts the answer', async () => {
    const room = fx.fake.createRoom([fx.owner, fx.bot], { encrypted: true });
    const gw = await fx.gateway();
    const owner = await ownerClient();
    await owner.sendTextMessage(room, 'the secret question');
    await waitFor(async () => (await gw.mailbox(room)).length >= 1, 15_000, 'the decrypted message');
    expect(await gw.mailbox(room)).toEqual(['the secret question']);

    await gw.channel.send(reply(room, 'out-secret', 'the **secret** answer'));
    await waitFor(() => decryptedFromBot(owner, room).length >= 1, 15_000, 'the owner decrypting the answer');
    expect(decryptedFromBot(owner, room)).toEqual(['the **secret** answer']);

    // The homeserver never held either text: every message in the room went as m.room.encrypted.
    const events = fx.fake.events(room);
    expect(events.filter((e) => e.type === 'm.room.message')).toEqual([]);
    expect(events.filter((e) => e.type === 'm.room.encrypted').map((e) => e.sender)).toEqual([
      fx.owner,
      fx.bot,
    ]);
    expect(JSON.stringify(events)).not.toMatch(/secret/);

    // A threaded answer keeps its relation in the clear, as the spec asks, so clients can place it.
    const root = events.find((e) => e.sender === fx.owner && e.type === 'm.room.encrypted')!.event_id;
    await gw.channel.send({
      ...(reply(room, 'out-thread', 'in the thread') as object),
      threadId: root,
    } as never);
    const threaded = fx.fake.events(room).at(-1)!;
    expect(threaded.type).toBe('m.room.encrypted');
    expect(threaded.content['m.relates_to']).toMatchObject({ rel_type: 'm.thread', event_id: root });
    await waitFor(
      () => decryptedFromBot(owner, room).includes('in the thread'),
      15_000,
      'the threaded answer',
    );
  });

  it('a restart keeps the same device and its keys: it still reads the room and answers it', async () => {
    const room = fx.fake.createRoom([fx.owner, fx.bot], { encrypted: true });
    const first = await fx.gateway();
    const identity = fx.fake.keys.deviceKeys(fx.bot, 'DEV-magpie')?.['keys'];
    expect(identity).toBeDefined();
    const owner = await ownerClient();
    await owner.sendTextMessage(room, 'before the restart');
    await waitFor(async () => (await first.mailbox(room)).length >= 1, 15_000, 'the first message');
    await first.stop();

    // The owner's client goes on with the room key it already shared with the bot's device:
    // only kept keys can read this one.
    await owner.sendTextMessage(room, 'after the restart');
    const second = await fx.gateway();
    await waitFor(
      async () => (await second.mailbox(room)).length >= 2,
      15_000,
      'the message after the restart',
    );
    expect(await second.mailbox(room)).toEqual(['before the restart', 'after the restart']);
    expect(fx.fake.keys.deviceKeys(fx.bot, 'DEV-magpie')?.['keys']).toEqual(identity);

    await second.channel.send(reply(room, 'out-after', 'still here'));
    await waitFor(
      () => decryptedFromBot(owner, room).includes('still here'),
      15_000,
      'the answer after the restart',
    );
  });

  it('keys that cannot be read leave encryption off: the room is told once, in the clear', async () => {
    const dir = path.join(fx.stateDir, 'matrix');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, '_magpie_fake.test.DEV-magpie.crypto'), 'not a key store');
    const room = fx.fake.createRoom([fx.owner, fx.bot], { encrypted: true });
    const gw = await fx.gateway();
    const owner = await ownerClient();
    await owner.sendTextMessage(room, 'can you read this?');
    await owner.sendTextMessage(room, 'and this?');
    await fx.fake.waitFor(() => fx.fake.shown(room, fx.bot).length >= 1);
    const dm = fx.fake.createRoom([fx.owner, fx.bot]);
    fx.fake.say(dm, fx.owner, { msgtype: 'm.text', body: 'marker' });
    await waitFor(async () => (await gw.mailbox(dm)).length >= 1, 10_000, 'the marker');
    expect(fx.fake.shown(room, fx.bot).map((m) => m.body)).toEqual([
      expect.stringContaining("can't read encrypted messages"),
    ]);
    expect(await gw.mailbox(room)).toEqual([]);
  });
});
