/**
 * `magpie pairing list` / `magpie pairing approve <code>`: the owner's side of
 * pairing. Connects to the daemon's Redis (REDIS_URL or the private local one).
 */

import { resolveRedisTarget } from '../../bus/local-redis.js';
import { approvePairing, listPairingRequests, type PairingRequest } from '../../bus/pairing-store.js';
import { connectProducer } from '../../bus/redis.js';
import { DEFAULT_MAX_PENDING } from '../../channels/access.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { defineCommand } from '../command.js';
import { commandConfig, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie pairing list
       magpie pairing approve <code>

Unknown people who message the bot in a DM get a pairing code. "list" shows the
pending requests (codes expire after an hour); "approve" admits the sender.
A sender who keeps writing is sent the same code, at most every 10 minutes; at
most ${DEFAULT_MAX_PENDING} requests are pending at once (later strangers get no answer).

options:
  --workspace DIR   overrides MAGPIE_WORKSPACE (where the private Redis is recorded)
  -h, --help        this help

exit codes: 0 done, 1 no pending request with that code, 2 bad usage or config, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'pairing',
  help: HELP,
  flags: WORKSPACE_FLAG,
  positionals: true,
  async run({ values, positionals }) {
    const [action, code, ...extra] = positionals;
    if (action !== 'list' && action !== 'approve') {
      throw new ConfigError(
        'magpie pairing: expected "list" or "approve <code>"; see "magpie pairing --help"',
      );
    }
    if ((action === 'approve' && !code) || extra.length > 0 || (action === 'list' && code)) {
      throw new ConfigError('magpie pairing: usage is "pairing list" or "pairing approve <code>"');
    }
    const config = commandConfig(values);
    const redis = await connectProducer(await resolveRedisTarget(config));
    try {
      const prefix = config.redis.prefix;
      if (action === 'list') {
        const requests = await listPairingRequests(redis, prefix);
        if (requests.length === 0) process.stdout.write('no pending pairing requests\n');
        for (const r of requests) process.stdout.write(`${describeRequest(r)}\n`);
        if (requests.length >= DEFAULT_MAX_PENDING) {
          process.stdout.write(
            `${requests.length} pending, the most kept: new strangers get no code until some are approved or expire\n`,
          );
        }
        return ExitCode.ok;
      }
      const approved = await approvePairing(redis, prefix, code!);
      if (!approved) {
        process.stderr.write(`magpie: no pending request with code ${code!.toUpperCase()}\n`);
        return ExitCode.failure;
      }
      process.stdout.write(
        `approved ${approved.channel} user ${who(approved)}: they can talk to the bot now\n`,
      );
      return ExitCode.ok;
    } finally {
      redis.disconnect();
    }
  },
});

function who(r: PairingRequest): string {
  const names = [r.displayName, r.username ? `@${r.username}` : undefined].filter(Boolean).join(' ');
  return names ? `${r.senderId} (${names})` : r.senderId;
}

/** One line: code, channel, sender, when. */
function describeRequest(r: PairingRequest): string {
  return `${r.code}  ${r.channel}  ${who(r)}  chat ${r.chatId}  requested ${r.createdAt}`;
}
