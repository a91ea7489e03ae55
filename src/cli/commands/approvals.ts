/**
 * `magpie approvals list` / `magpie approvals revoke <chat> <N>`: the
 * operator's view of approvals — the questions waiting (daemon, Redis) and
 * every chat's "always allow" rules (Redis for the daemon's chats, the state
 * folder's file for `magpie agent`'s).
 */
import { FileApprovalRules } from '../../approvals/file-rules.js';
import type { ApprovalRules } from '../../approvals/ports.js';
import { ruleLabel } from '../../approvals/question.js';
import { RedisApprovals } from '../../bus/approvals.js';
import { resolveRedisTarget } from '../../bus/local-redis.js';
import { connectProducer } from '../../bus/redis.js';
import { ConfigError, describeError, ExitCode } from '../../errors/index.js';
import type { ApprovalRule } from '../../messages/approval.js';
import { defineCommand } from '../command.js';
import { commandConfig, WORKSPACE_FLAG } from '../startup.js';

const HELP = `usage: magpie approvals list
       magpie approvals revoke <chat> <N>

"list" shows the approval questions waiting for an answer, and each chat's
"always allow" rules, numbered (chats are <channel>:<chat id>, as in a session key; the
chats of "magpie agent" are cli:<id>). "revoke" removes rule N of a chat:
magpie asks again before that.

options:
  --workspace DIR   overrides MAGPIE_WORKSPACE (where the private Redis is recorded)
  -h, --help        this help

exit codes: 0 done, 1 no such rule, 2 bad usage or config, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'approvals',
  help: HELP,
  flags: WORKSPACE_FLAG,
  positionals: true,
  async run({ values, positionals }) {
    const [action, chat, number, ...extra] = positionals;
    const usage = 'magpie approvals: usage is "approvals list" or "approvals revoke <chat> <N>"';
    if (
      action === 'list' ? chat !== undefined : action !== 'revoke' || !chat || !number || extra.length > 0
    ) {
      throw new ConfigError(usage);
    }
    const config = commandConfig(values);
    const file = new FileApprovalRules(config.stateDir);
    // `magpie agent` keeps its rules in a file, so cli: chats need no Redis.
    if (action === 'revoke' && chat?.startsWith('cli:')) return revoke(file, chat, number!);
    const redis = await connectProducer(await resolveRedisTarget(config));
    try {
      const store = new RedisApprovals(redis, config.redis.prefix);
      if (action === 'revoke') return await revoke(store, chat!, number!);
      const waiting = await store.list();
      process.stdout.write(waiting.length === 0 ? 'no questions waiting\n' : 'waiting:\n');
      for (const p of waiting) {
        process.stdout.write(
          `  ${p.code}  ${p.target.channel}:${p.target.chatId}  ${p.state}  ${p.summary}  (asked ${p.askedAt}, expires ${p.expiresAt})\n`,
        );
      }
      const chats = [...(await store.allRules())];
      for (const [key, rules] of Object.entries(await file.all())) chats.push({ chat: key, rules });
      process.stdout.write(chats.length === 0 ? 'no "always allow" rules\n' : 'always allowed:\n');
      for (const c of chats) {
        process.stdout.write(`  ${c.chat}\n`);
        c.rules.forEach((r, i) => {
          process.stdout.write(`    ${i + 1}. ${ruleLabel(r)}\n`);
        });
      }
      return ExitCode.ok;
    } finally {
      redis.disconnect();
    }
  },
});

/** Removes rule `number` (1-based, as listed) of `chat`. */
async function revoke(store: ApprovalRules, chat: string, number: string): Promise<number> {
  const rules: ApprovalRule[] = await store.rules(chat);
  const rule = /^\d+$/.test(number) ? rules[Number(number) - 1] : undefined;
  if (!rule) {
    process.stderr.write(
      `magpie: ${chat} has no rule ${number} (it has ${rules.length}; see "magpie approvals list")\n`,
    );
    return ExitCode.failure;
  }
  try {
    await store.removeRule(chat, rule);
  } catch (err) {
    process.stderr.write(`magpie: could not remove the rule: ${describeError(err)}\n`);
    return ExitCode.failure;
  }
  process.stdout.write(`revoked in ${chat}: ${ruleLabel(rule)} (magpie asks again before it)\n`);
  return ExitCode.ok;
}
