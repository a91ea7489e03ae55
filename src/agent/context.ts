/**
 * ContextBuilder: the system prompt and the message list for one LLM call.
 * Order (static parts first, so providers can cache the prefix): identity and
 * tools → bootstrap files → skills → memory → current session and summary.
 */
import path from 'node:path';
import { type Logger, silentLogger } from '../log/index.js';
import type { MemoryStore } from '../memory/store.js';
import type { ChatMessage } from '../providers/types.js';
import { sanitizeHistory } from '../sessions/history.js';
import type { SkillsLoader } from '../skills/loader.js';
import { CachedFileReader } from '../workspace/cached-file.js';

/** Bootstrap files, read into the prompt in this order. */
export const BOOTSTRAP_FILES = ['AGENTS.md', 'SOUL.md', 'USER.md', 'IDENTITY.md'] as const;

/** What the prompt says about the current chat. */
export interface SessionInfoForPrompt {
  channel: string;
  chatId: string;
  sessionKey: string;
  /** Summary of the conversation before the history that is sent. */
  summary?: string;
  /** Who sent the latest message (shown in groups). */
  senderName?: string;
  isGroup?: boolean;
}

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
  /** @defaultValue a silent logger */
  logger?: Logger;
}

const SECTION_BREAK = '\n\n---\n\n';

/** Builds prompts for one workspace; holds a file cache, so build one and reuse it. */
export class ContextBuilder {
  private readonly workspace: string;
  private readonly memory: MemoryStore;
  private readonly skills: SkillsLoader;
  private readonly tools: () => { name: string; description: string }[];
  private readonly timezone: string;
  private readonly now: () => Date;
  private readonly agentName: string;
  private readonly bootstrapMaxChars: number;
  private readonly logger: Logger;
  private readonly reader = new CachedFileReader();
  private readonly timeFormat: Intl.DateTimeFormat;

  constructor(options: ContextBuilderOptions) {
    this.workspace = path.resolve(options.workspace);
    this.memory = options.memory;
    this.skills = options.skills;
    this.tools = options.tools;
    this.timezone = options.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    this.now = options.now ?? (() => new Date());
    this.agentName = options.agentName ?? 'magpie';
    this.bootstrapMaxChars = options.bootstrapMaxChars ?? 20_000;
    if (!Number.isInteger(this.bootstrapMaxChars) || this.bootstrapMaxChars < 1) {
      throw new RangeError(
        `bootstrapMaxChars must be a positive whole number, got ${options.bootstrapMaxChars}`,
      );
    }
    this.logger = options.logger ?? silentLogger();
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
    return this.reader.reads;
  }

  /** The whole system prompt for one turn. */
  async buildSystemPrompt(session: SessionInfoForPrompt): Promise<string> {
    const [bootstrap, skills, memory] = await Promise.all([
      this.bootstrapSection(),
      this.skillsSection(),
      this.memory.getMemoryContext(),
    ]);
    const sections = [this.identitySection(), ...bootstrap];
    if (skills) sections.push(skills);
    if (memory) sections.push(`# Memory\n\n${memory}`);
    sections.push(sessionSection(session));
    if (session.summary?.trim()) {
      sections.push(`# Summary of the earlier conversation\n\n${session.summary.trim()}`);
    }
    return sections.join(SECTION_BREAK);
  }

  /** `[system prompt, ...history, ...current]`; history is sanitised and stripped of timestamps. */
  async buildMessages(args: {
    history: ChatMessage[];
    session: SessionInfoForPrompt;
    current: ChatMessage[];
  }): Promise<ChatMessage[]> {
    const system = await this.buildSystemPrompt(args.session);
    const history = sanitizeHistory(args.history).map(withoutTimestamp);
    return [{ role: 'system', content: system }, ...history, ...args.current];
  }

  private identitySection(): string {
    const memoryDir = path.join(this.workspace, 'memory');
    const tools = this.tools();
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
      `- Daily notes: ${path.join(memoryDir, 'YYYYMM', 'YYYYMMDD.md')} (today's note: ` +
        `${path.relative(this.workspace, this.memory.todayPath())}). Append today's events, decisions and ` +
        'finished tasks there; a new note starts with "# YYYY-MM-DD".',
      `- Skills: ${path.join(this.workspace, 'skills', '<name>', 'SKILL.md')}.`,
      '',
      '## Tools',
      '',
      tools.length === 0
        ? 'No tools are available in this turn.'
        : tools.map((t) => `- ${t.name}: ${firstLine(t.description)}`).join('\n'),
      '',
      '## Time',
      '',
      // To the minute only: a finer clock would change the prompt on every call.
      `Current time: ${this.formatNow()} (${this.timezone}).`,
    ];
    return lines.join('\n');
  }

  private async bootstrapSection(): Promise<string[]> {
    const texts = await Promise.all(
      BOOTSTRAP_FILES.map((name) => this.reader.read(path.join(this.workspace, name))),
    );
    const out: string[] = [];
    BOOTSTRAP_FILES.forEach((name, i) => {
      const text = texts[i]?.trim();
      if (!text) return;
      out.push(`## ${name}\n\n${this.cap(name, text)}`);
    });
    return out;
  }

  private cap(name: string, text: string): string {
    if (text.length <= this.bootstrapMaxChars) return text;
    const cut = text.length - this.bootstrapMaxChars;
    this.logger.warn(
      { file: name, chars: text.length, limit: this.bootstrapMaxChars },
      'context: bootstrap file truncated',
    );
    return `${text.slice(0, this.bootstrapMaxChars)}\n\n[… truncated ${cut} chars]`;
  }

  private async skillsSection(): Promise<string> {
    const { skills } = await this.skills.load();
    if (skills.length === 0) return '';
    const always = skills.filter((s) => s.always);
    const onDemand = skills.filter((s) => !s.always);
    const parts = ['# Skills'];
    for (const skill of always) parts.push(`## Skill: ${skill.name}\n\n${skill.body}`);
    if (onDemand.length > 0) {
      parts.push(
        'Skills available on demand (load one with load_skill before following it):\n' +
          onDemand.map((s) => `- ${s.name}: ${firstLine(s.description)}`).join('\n'),
      );
    }
    return parts.join('\n\n');
  }

  private formatNow(): string {
    const parts = this.timeFormat.formatToParts(this.now());
    const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
    return `${get('weekday')} ${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
  }
}

function sessionSection(session: SessionInfoForPrompt): string {
  const lines = [
    '# Current session',
    '',
    `Channel: ${session.channel}`,
    `Chat ID: ${session.chatId}`,
    `Session: ${session.sessionKey}`,
  ];
  if (session.isGroup) {
    lines.push(
      `This is a group chat${session.senderName ? `; the latest message is from ${session.senderName}` : ''}.`,
    );
  } else if (session.senderName) {
    lines.push(`You are talking with ${session.senderName}.`);
  }
  return lines.join('\n');
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

function withoutTimestamp(message: ChatMessage): ChatMessage {
  if (!('ts' in message)) return message;
  const { ts: _ts, ...rest } = message as ChatMessage & { ts?: string };
  return rest as ChatMessage;
}
