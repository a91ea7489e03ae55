/**
 * MAGPIE_APPROVAL's rules: which tool calls ask the owner first.
 *
 * - `off`: none.
 * - `all`: every call of a tool that is not read-only.
 * - `risky` (the default): `exec`, unless the command only reads
 *   (read-only-commands.ts) and exec has no network; writes to the bootstrap
 *   files (AGENTS.md, SOUL.md, USER.md, IDENTITY.md, HEARTBEAT.md) and
 *   `skills/`; a cron task that runs an agent turn; `message` to another
 *   chat; an MCP tool its server does not mark read-only.
 *
 * An "always allow" rule of the chat stops a call from asking, except after
 * the turn read untrusted text (a web page, search results, an MCP answer):
 * then every risky call asks, and the question says why.
 */
import path from 'node:path';
import type { ApprovalMode, ApprovalRule } from '../messages/approval.js';
import { commandPrefix, isReadOnlyCommand, matchesPrefixes } from './read-only-commands.js';

/** The files whose text becomes standing instructions of every later turn. */
export const BOOTSTRAP_FILES = ['agents.md', 'soul.md', 'user.md', 'identity.md', 'heartbeat.md'];

/** The write tools and what they do, for the question. */
const WRITE_TOOLS: Record<string, string> = {
  write_file: 'write',
  edit_file: 'edit',
  append_file: 'append to',
};

/** What the policy knows of the tool called. */
export interface ToolFacts {
  readOnly?: boolean;
  /** A tool of an MCP server. */
  mcp?: boolean;
}

/** The turn and chat a call is judged in. */
export interface PolicyContext {
  mode: ApprovalMode;
  /** Sandboxed commands share the host's network (MAGPIE_EXEC_NETWORK=on). */
  execNetwork: boolean;
  /** The chat the turn answers. */
  chat: { channel: string; chatId: string };
  /** What untrusted text the turn read so far ("a web page"), if any. */
  taint: string | undefined;
  /** The chat's "always allow" rules. */
  rules: readonly ApprovalRule[];
  /** The workspace's real path (absolute paths inside it are judged as relative ones). */
  workspace: string;
}

/** The policy's word on one call. */
export type Verdict =
  | { ask: false }
  | {
      ask: true;
      /** What the call does, for the question: "run `git push` in the workspace". */
      summary: string;
      /** The rule "Always allow" stores; absent: none is offered. */
      rule?: ApprovalRule;
    };

const NO: Verdict = { ask: false };

/** Longest command or argument text quoted in a question. */
const MAX_QUOTED = 300;

const quote = (text: string) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  const cut = flat.length > MAX_QUOTED ? `${flat.slice(0, MAX_QUOTED)}…` : flat;
  return `\`${cut.replace(/`/g, "'")}\``;
};

/**
 * Whether `name(args)` must ask first, and what the question says.
 *
 * @example approvalVerdict('exec', { command: 'git push' }, { readOnly: false }, ctx) // { ask: true, summary: 'run `git push` in the workspace', rule: { tool: 'exec', prefix: 'git push' } }
 */
export function approvalVerdict(
  name: string,
  args: unknown,
  tool: ToolFacts | undefined,
  ctx: PolicyContext,
): Verdict {
  if (ctx.mode === 'off' || tool?.readOnly === true) return NO;
  const risky = riskOf(name, record(args), tool, ctx);
  if (!risky) return NO;
  if (ctx.taint === undefined && allowedByRule(name, record(args), risky.rule, ctx)) return NO;
  return { ask: true, summary: risky.summary, ...(risky.rule ? { rule: risky.rule } : {}) };
}

function record(args: unknown): Record<string, unknown> {
  return args !== null && typeof args === 'object' && !Array.isArray(args)
    ? (args as Record<string, unknown>)
    : {};
}

/** Why the call is risky (its summary and the rule that would allow it), or undefined. */
function riskOf(
  name: string,
  args: Record<string, unknown>,
  tool: ToolFacts | undefined,
  ctx: PolicyContext,
): { summary: string; rule?: ApprovalRule } | undefined {
  const all = ctx.mode === 'all';
  if (name === 'exec') {
    const command = typeof args.command === 'string' ? args.command : '';
    if (!all && !ctx.execNetwork && isReadOnlyCommand(command)) return undefined;
    const prefix = commandPrefix(command);
    const where = ctx.execNetwork ? 'in the workspace, with network access' : 'in the workspace';
    return {
      summary: `run ${quote(command)} ${where}`,
      ...(prefix ? { rule: { tool: 'exec', prefix } } : {}),
    };
  }
  const verb = WRITE_TOOLS[name];
  if (verb !== undefined) {
    const file = workspaceRelative(typeof args.path === 'string' ? args.path : '', ctx.workspace);
    if (!all && !isInstructionFile(file)) return undefined;
    return { summary: `${verb} ${quote(file)}`, rule: { tool: name, prefix: file } };
  }
  if (name === 'cron') {
    if (args.action !== 'add')
      return all ? { summary: `change the scheduled tasks (${String(args.action)})` } : undefined;
    if (!all && args.mode !== 'agent') return undefined;
    const what = typeof args.message === 'string' ? args.message : '';
    const mode = args.mode === 'agent' ? 'an agent turn (with tools, nobody present)' : 'a reminder';
    return { summary: `schedule ${mode}: ${quote(what)}` };
  }
  if (name === 'message') {
    const channel = typeof args.channel === 'string' ? args.channel : ctx.chat.channel;
    const chatId = typeof args.chat_id === 'string' ? args.chat_id : ctx.chat.chatId;
    const elsewhere = channel !== ctx.chat.channel || chatId !== ctx.chat.chatId;
    if (!all && !elsewhere) return undefined;
    const target = `${channel}:${chatId}`;
    return { summary: `send a message to ${quote(target)}`, rule: { tool: 'message', prefix: target } };
  }
  if (tool?.mcp === true || all) {
    const shown = JSON.stringify(args);
    return {
      summary: `call ${quote(name)}${tool?.mcp ? ' (an MCP tool)' : ''} with ${quote(shown)}`,
      rule: { tool: name },
    };
  }
  return undefined;
}

/** Whether one of the chat's rules allows the call. */
function allowedByRule(
  name: string,
  args: Record<string, unknown>,
  wanted: ApprovalRule | undefined,
  ctx: PolicyContext,
): boolean {
  if (name === 'exec') {
    const command = typeof args.command === 'string' ? args.command : '';
    const prefixes = ctx.rules.filter((r) => r.tool === 'exec' && r.prefix).map((r) => r.prefix as string);
    return matchesPrefixes(command, prefixes);
  }
  if (!wanted) return false;
  return ctx.rules.some((r) => r.tool === wanted.tool && r.prefix === wanted.prefix);
}

/** `file` relative to the workspace, normalised (`./a/../AGENTS.md` → `AGENTS.md`); outside stays absolute. */
export function workspaceRelative(file: string, workspace: string): string {
  const absolute = path.posix.resolve(workspace, file);
  const relative = path.posix.relative(workspace, absolute);
  return relative.startsWith('..') ? absolute : relative;
}

/** A bootstrap file at the workspace's top, or anything under `skills/` (any case). */
export function isInstructionFile(relative: string): boolean {
  const lower = relative.toLowerCase();
  return BOOTSTRAP_FILES.includes(lower) || lower === 'skills' || lower.startsWith('skills/');
}
