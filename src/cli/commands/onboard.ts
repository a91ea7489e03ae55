/**
 * `magpie onboard`: a guided set-up. Asks (or takes from flags) the model
 * endpoint, key and model, each channel's own step (its descriptor's
 * `onboard`: e.g. a bot with the user's own id), optional web search and the
 * workspace; checks each live; then
 * writes `.env` (only the answered variables change, the old file is kept as
 * a backup) and creates the workspace. A failed check writes nothing.
 */
import path from 'node:path';
import { CHANNELS } from '../../channels/registry.js';
import { environment, parseDuration } from '../../config/index.js';
import { CancelledError, ConfigError, ExitCode } from '../../errors/index.js';
import { existingValue, type OnboardFlags, type StepContext } from '../../onboard/context.js';
import { type EnvWriteResult, exampleEnvFile, readEnvFile, writeEnvFile } from '../../onboard/env-file.js';
import { modelStep } from '../../onboard/model-step.js';
import { Prompter, type PromptStreams } from '../../onboard/prompts.js';
import { searchStep } from '../../onboard/search-step.js';
import { ensureWorkspaceId } from '../../workspace/identity.js';
import { initWorkspace, isTemplatesDir } from '../../workspace/init.js';
import { parseCommandArgs } from '../args.js';
import { shown } from '../secret-variables.js';

/** The channels with an onboarding step, in registry order. */
const ONBOARDING = CHANNELS.flatMap((d) => (d.onboard ? [d.onboard] : []));

const HELP = `usage: magpie onboard [options]

${wrap(
  'Sets magpie up step by step: the model endpoint (OpenAI, OpenRouter, Ollama, ' +
    'llama.cpp, vLLM or another URL), its key and the model, each checked live with ' +
    `the model list and a one-token call; optionally ${[...ONBOARDING.map((o) => o.summary), 'web search'].join(', ').replace(/, (?=web search$)/, ' and ')}. ` +
    'Then it writes .env (mode 0600; only the answered variables change, the previous file is kept as ' +
    '.env.bak-<time>) and creates the workspace. A check that fails writes nothing.',
)}

Answers can be given as flags (questions are then skipped); with --yes nothing
is asked and a missing answer fails. Keys given as flags are visible to other
users of this machine (ps): the hidden questions are safer.

options:
  --base-url URL              the model endpoint (default: .env's, else OpenAI)
  --api-key KEY               its key ("none" for a server that needs none)
  --model NAME                the model
${ONBOARDING.flatMap((o) => o.help.map((line) => `  ${line}`)).join('\n')}
  --web-search NAME           brave, tavily, searxng or off
  --web-search-key KEY        the Brave or Tavily key
  --web-search-url URL        the SearXNG URL
  -w, --workspace DIR         the workspace (default: .env's, else ./workspace)
  --env-file FILE             the file to write (default ./.env)
  --capture-timeout TIME      how long to wait for your message to a bot that learns your id (default 2m)
  -y, --yes                   ask nothing; a missing required answer fails (exit 2)
  -h, --help                  this help

exit codes: 0 written, 2 a bad answer (refused key, unknown model, bad token),
3 a server could not be reached, 130 cancelled (nothing written)`;

const FLAGS = {
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  model: { type: 'string' },
  'web-search': { type: 'string' },
  'web-search-key': { type: 'string' },
  'web-search-url': { type: 'string' },
  workspace: { type: 'string', short: 'w' },
  'env-file': { type: 'string' },
  'capture-timeout': { type: 'string' },
  yes: { type: 'boolean', short: 'y' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The channels' own flags (`--<name>-token`, …), each taking a string. */
const CHANNEL_FLAGS: Readonly<Record<string, { type: 'string' }>> = Object.fromEntries(
  ONBOARDING.flatMap((o) => o.flags.map((flag) => [flag, { type: 'string' }] as const)),
);

/** Where the command reads answers and writes; tests pass their own. */
export interface OnboardIO extends PromptStreams {
  /** The templates folder. @defaultValue the package's `workspace/` */
  templates?: string;
  /** The `.env` a new file starts from. @defaultValue the package's `.env.example` */
  example?: string;
  /** The environment magpie will start with (its variables beat `.env`). @defaultValue none: no warning */
  environment?: NodeJS.ProcessEnv;
}

export async function run(argv: string[]): Promise<number> {
  return runOnboard(argv, { input: process.stdin, output: process.stdout, environment: environment() });
}

/** The command with its streams injected. */
export async function runOnboard(argv: string[], io: OnboardIO): Promise<number> {
  const { values } = parseCommandArgs('onboard', argv, { ...CHANNEL_FLAGS, ...FLAGS });
  if (values.help) {
    io.output.write(`${HELP}\n`);
    return ExitCode.ok;
  }
  const captureTimeoutMs =
    values['capture-timeout'] === undefined ? 120_000 : parseDuration(values['capture-timeout']);
  if (captureTimeoutMs === undefined || captureTimeoutMs <= 0) {
    throw new ConfigError(`--capture-timeout "${values['capture-timeout']}" is not a duration (e.g. 90s)`);
  }
  const envState = await readEnvFile(values['env-file'] ?? '.env');
  const prompter = values.yes ? undefined : new Prompter(io);
  const ctx: StepContext = {
    flags: onboardFlags(values),
    existing: envState.values,
    prompter,
    out: io.output,
    captureTimeoutMs,
    updates: {},
  };
  try {
    if (prompter)
      prompter.say(`Setting up magpie: answers go to ${envState.file}. Enter takes the [default].\n\n`);
    await modelStep(ctx);
    for (const step of ONBOARDING) await step.run(ctx);
    await searchStep(ctx);
    const workspace = await chooseWorkspace(ctx, path.dirname(envState.file));
    if (prompter) {
      prompter.say(`\nTo be written to ${envState.file}:\n${settingLines(ctx).join('\n')}\n`);
      if (!(await prompter.confirm('Write them?', true))) throw new CancelledError('nothing was written');
    }
    const template = await readEnvFile(io.example ?? exampleEnvFile());
    const written = await writeEnvFile(envState, ctx.updates, { template: template.text });
    const created = await createWorkspace(workspace, io.templates);
    io.output.write(`\n${summary(ctx, written, workspace, created)}\n`);
    const note = shadowNote(ctx, io.environment);
    if (note) io.output.write(`\n${note}\n`);
    return ExitCode.ok;
  } finally {
    prompter?.close();
  }
}

/** The workspace folder: from the flag, a question or .env; relative paths are from the `.env`'s folder. */
async function chooseWorkspace(ctx: StepContext, base: string): Promise<string> {
  const fallback = existingValue(ctx, 'MAGPIE_WORKSPACE') ?? './workspace';
  const answer =
    ctx.flags.workspace ??
    (ctx.prompter ? await ctx.prompter.ask('Workspace folder', { default: fallback }) : fallback);
  if (answer.trim() === '') throw new ConfigError('--workspace is empty');
  ctx.updates.MAGPIE_WORKSPACE = answer.trim();
  return path.resolve(base, answer.trim());
}

/** Creates the workspace from the templates (never overwriting); what it says about it. */
async function createWorkspace(workspace: string, templates: string | undefined): Promise<string> {
  if (await isTemplatesDir(workspace, templates)) return "the repository's templates folder, used as it is";
  const { created } = await initWorkspace(workspace, templates === undefined ? {} : { templates });
  const identity = await ensureWorkspaceId(workspace);
  const files = created.length === 0 ? 'every file already there' : `${created.length} files created`;
  return `${files}, workspace id ${identity.id}`;
}

/** One line per variable to write, secrets masked. */
function settingLines(ctx: StepContext): string[] {
  const names = Object.keys(ctx.updates);
  const width = Math.max(...names.map((n) => n.length));
  return names.map((n) => `  ${n.padEnd(width)}  ${shown(n, ctx.updates[n]!)}`);
}

/** A note when the environment magpie starts with holds a written variable with another value (it wins over .env). */
function shadowNote(ctx: StepContext, env: NodeJS.ProcessEnv | undefined): string | undefined {
  const shadowed = Object.keys(ctx.updates).filter((name) => {
    const value = env?.[name];
    return value !== undefined && value !== ctx.updates[name];
  });
  if (shadowed.length === 0) return undefined;
  const one = shadowed.length === 1;
  return `Note: ${shadowed.join(', ')} ${one ? 'is' : 'are'} also set in this shell's environment, which wins over .env: unset ${one ? 'it' : 'them'} before starting magpie.`;
}

function summary(ctx: StepContext, written: EnvWriteResult, workspace: string, created: string): string {
  const lines = [
    `Wrote ${written.file} (mode 0600)${written.backup ? `; the previous one is kept as ${written.backup}` : ''}:`,
    ...settingLines(ctx),
    `Workspace ${workspace}: ${created}`,
    '',
    `Start magpie${path.dirname(written.file) === process.cwd() ? '' : ` from ${path.dirname(written.file)}`}:  npm start`,
  ];
  return lines.join('\n');
}

/** The answers given as flags (the string-valued ones: `--yes` and `--help` steer the command). */
function onboardFlags(values: Readonly<Record<string, string | boolean | undefined>>): OnboardFlags {
  return Object.fromEntries(
    Object.entries(values).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** `text` as lines of at most `width` characters, broken between words. */
function wrap(text: string, width = 80): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.join('\n');
}
