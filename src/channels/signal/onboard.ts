/**
 * The Signal step of `magpie onboard` (skipped when no daemon address is
 * given or typed): signal-cli's daemon address, the number it is linked to,
 * and who may write (numbers or ACIs); the daemon is checked (doctor's check)
 * before anything is written. signal-cli itself is installed and linked by
 * hand (README: Signal): onboard cannot scan a QR code for you.
 */
import { ConfigError } from '../../errors/index.js';
import { existingValue, missingFlag, progress, type StepContext } from '../../onboard/context.js';
import { signalCheck } from './doctor.js';

/** The Signal step: from `--signal-rpc-url` or a question; untouched under `--yes` without the flag. */
export async function signalStep(ctx: StepContext): Promise<void> {
  const current = existingValue(ctx, 'SIGNAL_RPC_URL');
  let rpcUrl = ctx.flags['signal-rpc-url']?.trim();
  if (rpcUrl === undefined && ctx.prompter) {
    progress(ctx, '  Signal needs signal-cli linked to your number and its daemon running (README: Signal).');
    rpcUrl = await ctx.prompter.ask('signal-cli daemon address (e.g. http://127.0.0.1:8080)', {
      default: current,
      defaultLabel: current ?? 'Enter to skip',
    });
  }
  if (!rpcUrl) return;
  if (!URL.canParse(rpcUrl) || !/^https?:$/.test(new URL(rpcUrl).protocol))
    throw new ConfigError(`"${rpcUrl}" is not an http:// address (e.g. http://127.0.0.1:8080)`);
  const account = checkSignalId(
    await value(ctx, 'signal-account', 'the Signal number signal-cli is linked to', 'SIGNAL_ACCOUNT'),
  );
  const allowFrom = (
    await value(ctx, 'signal-allow-from', 'numbers (+…) or ACIs allowed to write, or *', 'SIGNAL_ALLOW_FROM')
  )
    .split(',')
    .map((id) => checkSignalId(id))
    .join(',');
  const result = await signalCheck({ rpcUrl, account }).run(
    ctx.prompter?.signal ?? new AbortController().signal,
  );
  for (const r of [result].flat()) {
    if (r.status === 'fail') throw new ConfigError(`${r.detail}: ${r.fix ?? ''}`);
    progress(ctx, `✓ ${r.detail}`);
  }
  Object.assign(ctx.updates, {
    SIGNAL_RPC_URL: rpcUrl,
    SIGNAL_ACCOUNT: account,
    SIGNAL_ALLOW_FROM: allowFrom,
  });
}

/** A flag's value, the existing one, else the answer to a question (required). */
async function value(ctx: StepContext, flag: string, question: string, variable: string): Promise<string> {
  const given = ctx.flags[flag]?.trim();
  if (given) return given;
  const current = existingValue(ctx, variable);
  if (!ctx.prompter) {
    if (current) return current;
    throw missingFlag(`--${flag}`, question);
  }
  for (;;) {
    const answer = await ctx.prompter.ask(question, { default: current });
    if (answer !== '') return answer;
  }
}

/** A Signal id as typed: a number in international form, an ACI (uuid), or `*`. */
export function checkSignalId(text: string): string {
  const id = text.trim();
  if (/^\+[1-9]\d{6,14}$/.test(id) || /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i.test(id) || id === '*')
    return id;
  throw new ConfigError(
    `"${id}" is not a Signal number (+ and country code, e.g. +4915112345678) or ACI (a uuid)`,
  );
}
