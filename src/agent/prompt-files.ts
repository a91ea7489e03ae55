/**
 * The workspace files the system prompt carries whole: the bootstrap files
 * (AGENTS.md, SOUL.md, USER.md, IDENTITY.md) and the skills (bodies of the
 * always-on ones, one line for each of the others). Each bootstrap file has
 * a cap, and all of them together have a total budget: past it, the later
 * parts are cut (or left out) with a visible marker and one warning naming
 * what was cut. The same files always give the same text.
 */
import path from 'node:path';
import type { Logger } from '../log/index.js';
import type { SkillsLoader } from '../skills/loader.js';
import { CachedFileReader } from '../workspace/cached-file.js';

/** Bootstrap files, read into the prompt in this order. */
export const BOOTSTRAP_FILES = ['AGENTS.md', 'SOUL.md', 'USER.md', 'IDENTITY.md'] as const;

export interface PromptFilesOptions {
  workspace: string;
  skills: SkillsLoader;
  /** Each bootstrap file is cut after this many characters. */
  fileMaxChars: number;
  /** All bootstrap files and skills together. */
  totalMaxChars: number;
  logger: Logger;
}

/** One part of the prompt files before the budget is applied. */
interface Part {
  /** What the warning calls it: `AGENTS.md`, `skill greet`, `the list of skills`. */
  name: string;
  heading: string;
  body: string;
}

/** Reads and budgets the prompt files of one workspace; holds a file cache, so build one and reuse it. */
export class PromptFiles {
  readonly #o: PromptFilesOptions;
  readonly #reader: CachedFileReader;
  /** What the last warning named, so an unchanged cut is not logged on every turn. */
  #warned = '';
  /** The length each capped file had when its cap was last reported. */
  readonly #capped = new Map<string, number>();

  constructor(options: PromptFilesOptions) {
    this.#reader = new CachedFileReader({
      workspace: options.workspace,
      onRefused: (file, reason) => options.logger.warn({ file }, `prompt file not read: ${reason}`),
    });
    for (const [name, value] of [
      ['bootstrapMaxChars', options.fileMaxChars],
      ['promptFilesMaxChars', options.totalMaxChars],
    ] as const) {
      if (!Number.isInteger(value) || value < 1) {
        throw new RangeError(`${name} must be a positive whole number, got ${value}`);
      }
    }
    this.#o = options;
  }

  /** Files read from disk so far (unchanged files come from the cache). */
  get reads(): number {
    return this.#reader.reads;
  }

  /** The prompt sections: one per bootstrap file, then `# Skills` (when there are skills). */
  async sections(): Promise<string[]> {
    const [bootstrap, skills] = await Promise.all([this.#bootstrap(), this.#skills()]);
    let left = this.#o.totalMaxChars;
    const cut: string[] = [];
    const fitted = (part: Part): string | undefined => {
      const wanted = part.body.length;
      if (left <= 0) {
        cut.push(`${part.name} (left out, ${wanted} chars)`);
        return undefined;
      }
      const body = wanted <= left ? part.body : budgetCut(part.body, left, this.#o.totalMaxChars);
      if (wanted > left) cut.push(`${part.name} (${left} of ${wanted} chars)`);
      left -= Math.min(wanted, left);
      return part.heading ? `${part.heading}\n\n${body}` : body;
    };
    const out = bootstrap.flatMap((p) => fitted(p) ?? []);
    const skillTexts = skills.flatMap((p) => fitted(p) ?? []);
    if (skillTexts.length > 0) out.push(['# Skills', ...skillTexts].join('\n\n'));
    const warning = cut.join(', ');
    if (warning !== '' && warning !== this.#warned) {
      this.#o.logger.warn(
        { cut, limit: this.#o.totalMaxChars },
        `context: bootstrap files and skills over their total budget of ${this.#o.totalMaxChars} chars; cut: ${warning}`,
      );
    }
    this.#warned = warning;
    return out;
  }

  async #bootstrap(): Promise<Part[]> {
    const texts = await Promise.all(
      BOOTSTRAP_FILES.map((name) => this.#reader.read(path.join(this.#o.workspace, name))),
    );
    const parts: Part[] = [];
    BOOTSTRAP_FILES.forEach((name, i) => {
      const text = texts[i]?.trim();
      if (text) parts.push({ name, heading: `## ${name}`, body: this.#cap(name, text) });
    });
    return parts;
  }

  #cap(name: string, text: string): string {
    const max = this.#o.fileMaxChars;
    if (text.length <= max) return text;
    if (this.#capped.get(name) !== text.length) {
      this.#capped.set(name, text.length);
      this.#o.logger.warn(
        { file: name, chars: text.length, limit: max },
        'context: bootstrap file truncated',
      );
    }
    return `${text.slice(0, max)}\n\n[… truncated ${text.length - max} chars]`;
  }

  async #skills(): Promise<Part[]> {
    const { skills } = await this.#o.skills.load();
    const parts: Part[] = skills
      .filter((s) => s.always)
      .map((s) => ({ name: `skill ${s.name}`, heading: `## Skill: ${s.name}`, body: s.body }));
    const onDemand = skills.filter((s) => !s.always);
    if (onDemand.length > 0) {
      parts.push({
        name: 'the list of skills',
        heading: '',
        body:
          'Skills available on demand (load one with load_skill before following it):\n' +
          onDemand.map((s) => `- ${s.name}: ${firstLine(s.description)}`).join('\n'),
      });
    }
    return parts;
  }
}

/** The first line of a text, trimmed. */
export function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

function budgetCut(text: string, keep: number, total: number): string {
  return (
    `${text.slice(0, keep)}\n\n[… ${text.length - keep} chars cut: the bootstrap files and skills ` +
    `passed their total budget of ${total} chars]`
  );
}
