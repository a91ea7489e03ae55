/**
 * ContextBuilder: the system prompt and the message list for one LLM call,
 * laid out so that each request of a session begins with the previous one,
 * byte for byte (providers bill a cached prefix at a fraction of the price).
 *
 * System prompt, what changes rarely: identity, workspace, the environment
 * (sandbox, approvals, network: the configuration's, see environment-block.ts) and tools →
 * bootstrap files → skills (together: the static part, the same for every
 * session) → the memory snapshot taken when the session's view began → the
 * current session → the summary of earlier conversation. Then the history
 * and the turn. What changes often (the time, who wrote, memory written
 * since the snapshot) rides in a short context block after the text of the
 * turn's first user message; it is stored with that message (see
 * prompt-note.ts) and replayed as stored, so it never rewrites earlier bytes.
 */
import path from 'node:path';
import { type Logger, silentLogger } from '../log/index.js';
import type { MemoryStore } from '../memory/store.js';
import type { ChatMessage } from '../providers/types.js';
import { sanitizeHistory } from '../sessions/history.js';
import type { SkillsLoader } from '../skills/loader.js';
import { environmentLines, type PromptEnvironment } from './environment-block.js';
import type { PromptSession } from './loop-options.js';
import { MemoryView, marksOf, renderSnapshot } from './memory-view.js';
import { firstLine, PromptFiles } from './prompt-files.js';
import { forRequest, knownMemory, type PromptNote, snapshotIn } from './prompt-note.js';
import { inToolOrder } from './tool-order.js';

export { BOOTSTRAP_FILES } from './prompt-files.js';

export interface ContextBuilderOptions {
  /** Absolute path of the workspace. */
  workspace: string;
  memory: MemoryStore;
  skills: SkillsLoader;
  /** The tools offered this turn (name and description), read on every build. */
  tools: () => { name: string; description: string }[];
  /** IANA time zone for the time shown to the model. @defaultValue the system's time zone */
  timezone?: string;
  /** The clock. @defaultValue `() => new Date()` */
  now?: () => Date;
  /** @defaultValue 'magpie' */
  agentName?: string;
  /** Each bootstrap file is cut after this many characters, with a visible marker. @defaultValue 20_000 */
  bootstrapMaxChars?: number;
  /**
   * The bootstrap files and skills together are cut after this many characters (later parts
   * first), with a visible marker and a warning naming what was cut. @defaultValue 60_000
   */
  promptFilesMaxChars?: number;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /**
   * The operator's settings for the tools (sandbox, approvals, network, writable roots), shown
   * in the identity section's `## Environment`: the same in every request, so it stays in the
   * cached static part. @defaultValue none: no environment section
   */
  environment?: PromptEnvironment;
}

const SECTION_BREAK = '\n\n---\n\n';

/**
 * Opening lines of the memory section, before the snapshot. A line about
 * another way to reach memory belongs here.
 */
export const MEMORY_GUIDE: readonly string[] = [
  'Your memory files as they were when this conversation began. What has been written to them since ' +
    'is shown in the context block of the message it arrived with.',
  'Older daily notes and past conversations are not shown here: search them with memory_search.',
];

/** Builds prompts for one workspace; holds file caches, so build one and reuse it. */
export class ContextBuilder {
  private readonly workspace: string;
  private readonly memory: MemoryStore;
  private readonly tools: () => { name: string; description: string }[];
  private readonly timezone: string;
  private readonly now: () => Date;
  private readonly agentName: string;
  private readonly environment: PromptEnvironment | undefined;
  private readonly files: PromptFiles;
  private readonly memoryView: MemoryView;
  private readonly timeFormat: Intl.DateTimeFormat;

  constructor(options: ContextBuilderOptions) {
    this.workspace = path.resolve(options.workspace);
    this.memory = options.memory;
    this.tools = options.tools;
    this.timezone = options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    this.now = options.now ?? (() => new Date());
    this.agentName = options.agentName ?? 'magpie';
    this.environment = options.environment;
    this.files = new PromptFiles({
      workspace: this.workspace,
      skills: options.skills,
      fileMaxChars: options.bootstrapMaxChars ?? 20_000,
      totalMaxChars: options.promptFilesMaxChars ?? 60_000,
      logger: options.logger ?? silentLogger(),
    });
    this.memoryView = new MemoryView({ memory: options.memory });
    this.timeFormat = new Intl.DateTimeFormat('en-GB', {
      timeZone: this.timezone,
      weekday: 'long',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
  }

  /** How many bootstrap files were read from disk so far (unchanged files are served from the cache). */
  get fileReads(): number {
    return this.files.reads;
  }

  /**
   * The system prompt. `snapshot` is the memory section's text as the session
   * first saw it; without one, memory as it is now.
   */
  async buildSystemPrompt(session: PromptSession, snapshot?: string): Promise<string> {
    return (await this.systemMessage(session, snapshot)).content;
  }

  /** The system message, with the length of its static part (the same for every session). */
  async systemMessage(
    session: PromptSession,
    snapshot?: string,
  ): Promise<Extract<ChatMessage, { role: 'system' }>> {
    const [files, memory] = await Promise.all([
      this.files.sections(),
      snapshot ?? this.memoryView.read().then(renderSnapshot),
    ]);
    const head = [this.identitySection(), ...files].join(SECTION_BREAK);
    const tail: string[] = [];
    if (memory) tail.push(['# Memory', ...MEMORY_GUIDE, memory].join('\n\n'));
    tail.push(sessionSection(session));
    if (session.summary?.trim()) {
      tail.push(`# Summary of the earlier conversation\n\n${session.summary.trim()}`);
    }
    return { role: 'system', content: [head, ...tail].join(SECTION_BREAK), staticChars: head.length };
  }

  /**
   * `[system prompt, ...history, ...current]`: the history sanitised, every
   * message reduced to what the model reads, user messages with their
   * context blocks. The memory snapshot is the one the messages carry.
   */
  async buildMessages(args: {
    history: ChatMessage[];
    session: PromptSession;
    current: ChatMessage[];
  }): Promise<ChatMessage[]> {
    const history = sanitizeHistory(args.history);
    const snapshot = snapshotIn(history) ?? snapshotIn(args.current);
    const system = await this.systemMessage(args.session, snapshot);
    return [system, ...history.map(forRequest), ...args.current.map(forRequest)];
  }

  /**
   * The note for the first new user message of a turn: its context block
   * (the time, today's daily note, the sender, memory written since the
   * model last saw it) and what the model then knows of memory. When `known`
   * (the messages before it) carries no snapshot, the note takes one.
   */
  async noteFor(args: { known: readonly ChatMessage[]; session: PromptSession }): Promise<PromptNote> {
    const files = await this.memoryView.read();
    const known = knownMemory(args.known);
    const today = path.relative(this.workspace, this.memory.todayPath()).split(path.sep).join('/');
    const lines = [`Time: ${this.formatNow()} (${this.timezone}). Today's daily note: ${today}`];
    const { senderName, isGroup } = args.session;
    if (isGroup) lines.push(`Group chat${senderName ? `; this message is from ${senderName}` : ''}.`);
    else if (senderName) lines.push(`From: ${senderName}.`);
    const changes = known ? this.memoryView.changes(files, known) : '';
    if (changes) lines.push(`Memory written since you last saw it:\n\n${changes}`);
    return {
      context: `<context>\n${lines.join('\n')}\n</context>`,
      memory: marksOf(files),
      ...(known ? {} : { snapshot: renderSnapshot(files) }),
    };
  }

  private identitySection(): string {
    const memoryDir = path.join(this.workspace, 'memory');
    const tools = inToolOrder(this.tools());
    const lines = [
      `# ${this.agentName}`,
      '',
      `You are ${this.agentName}, a personal AI assistant. You talk with your user through chat apps and ` +
        'the command line, use tools to act, and keep your own memory in the workspace.',
      '',
      '## Workspace',
      '',
      `Your workspace is ${this.workspace}. File tools work inside it; relative paths start there.`,
      `- Long-term memory: ${path.join(memoryDir, 'MEMORY.md')}. When you learn a durable fact about the user ` +
        '(names, preferences, standing plans, people and places that matter), record it there at once with ' +
        'edit_file or append_file (write_file only to reorganise the whole file). Keep it short and current.',
      `- Daily notes: ${path.join(memoryDir, 'YYYYMM', 'YYYYMMDD.md')} (the context block names today's). ` +
        'Append today\'s events, decisions and finished tasks there; a new note starts with "# YYYY-MM-DD".',
      `- Skills: ${path.join(this.workspace, 'skills', '<name>', 'SKILL.md')}.`,
      '',
      ...(this.environment ? [...environmentLines(this.workspace, this.environment), ''] : []),
      '## Tools',
      '',
      tools.length === 0
        ? 'No tools are available in this turn.'
        : tools.map((t) => `- ${t.name}: ${firstLine(t.description)}`).join('\n'),
      '',
      '## Context blocks',
      '',
      'magpie (not the user) ends a message with a <context> block: the current time in your time zone, ' +
        "today's daily note, who wrote the message, and anything written to memory since you last saw it. " +
        'The latest block is the current one.',
    ];
    return lines.join('\n');
  }

  private formatNow(): string {
    const parts = this.timeFormat.formatToParts(this.now());
    const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
    return `${get('weekday')} ${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
  }
}

function sessionSection(session: PromptSession): string {
  return [
    '# Current session',
    '',
    `Channel: ${session.channel}`,
    `Chat ID: ${session.chatId}`,
    `Session: ${session.sessionKey}`,
  ].join('\n');
}
