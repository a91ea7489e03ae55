/** `magpie cron list` and `magpie cron remove <id>`: every chat's scheduled tasks, from Redis. */

import { type ListedTask, modeLabel } from '../../bus/cron-store.js';
import { ConfigError, ExitCode } from '../../errors/index.js';
import { formatInZone } from '../../time/schedule.js';
import { defineCommand } from '../command.js';
import { WORKSPACE_FLAG, withBus } from '../startup.js';

const HELP = `usage: magpie cron list [--json]
       magpie cron remove <id>

Lists every scheduled task (reminders and scheduled agent turns of all chats) or removes one.
Tasks are created by the assistant's cron tool ("remind me in 20 minutes to call Ana").

options:
  --json             list as JSON
  --workspace DIR    overrides MAGPIE_WORKSPACE (where the private Redis is recorded)
  -h, --help         this help

exit codes: 0 ok, 1 no such task, 2 bad usage or config, 3 Redis unreachable`;

export const run = defineCommand({
  name: 'cron',
  help: HELP,
  flags: { json: { type: 'boolean' }, ...WORKSPACE_FLAG },
  positionals: true,
  async run({ values, positionals }) {
    const [action, id, ...extra] = positionals;
    if (action !== 'list' && action !== 'remove') {
      throw new ConfigError('magpie cron: say "list" or "remove <id>"; see "magpie cron --help"');
    }
    if (action === 'remove' && (id === undefined || extra.length > 0)) {
      throw new ConfigError('magpie cron remove: give exactly one task id (see "magpie cron list")');
    }
    if (action === 'list' && id !== undefined) {
      throw new ConfigError(`magpie cron list: unexpected argument "${id}"`);
    }
    return withBus(values, 'quiet', async ({ bus }) => {
      const store = bus.cronStore();
      try {
        if (action === 'list') {
          const tasks = await store.list();
          process.stdout.write(
            values.json ? `${JSON.stringify(tasks.map(toJson), null, 2)}\n` : formatTable(tasks),
          );
          return ExitCode.ok;
        }
        const removed = await store.remove(id!);
        if (!removed) {
          process.stderr.write(`magpie: no scheduled task "${id}" (see "magpie cron list")\n`);
          return ExitCode.failure;
        }
        process.stdout.write(`Removed scheduled task ${id}.\n`);
        return ExitCode.ok;
      } finally {
        await store.close();
      }
    });
  },
});

function nextRunText({ task, nextRun }: ListedTask): string {
  return nextRun === undefined ? 'due now' : formatInZone(nextRun, task.schedule.tz);
}

function toJson(listed: ListedTask) {
  const { task } = listed;
  return {
    id: task.id,
    chat: task.sessionKey,
    schedule: task.schedule.description,
    nextRun: listed.nextRun === undefined ? null : new Date(listed.nextRun).toISOString(),
    nextRunLocal: nextRunText(listed),
    mode: task.mode,
    message: task.message,
  };
}

/** A plain table: one task a line, columns padded. */
function formatTable(tasks: ListedTask[]): string {
  if (tasks.length === 0) return 'No scheduled tasks.\n';
  const rows = [
    ['ID', 'CHAT', 'SCHEDULE', 'NEXT RUN', 'MODE', 'MESSAGE'],
    ...tasks.map((t) => [
      t.task.id,
      t.task.sessionKey,
      t.task.schedule.description,
      nextRunText(t),
      modeLabel(t.task.mode),
      t.task.message.replace(/\s+/g, ' '),
    ]),
  ];
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((r) => r[col]!.length)));
  return `${rows
    .map((r) => r.map((cell, col) => (col === r.length - 1 ? cell : cell.padEnd(widths[col]!))).join('  '))
    .join('\n')}\n`;
}
