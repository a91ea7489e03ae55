/**
 * Skills: `skills/<name>/SKILL.md` files with YAML front matter (`name`,
 * `description`, optional `always`) and a Markdown body with the procedure.
 * Malformed skills are reported, never thrown; files are re-parsed only when changed.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { type Logger, silentLogger } from '../log/index.js';
import { CachedFileReader, isMissing } from '../workspace/cached-file.js';
import { readFrontMatter } from './front-matter.js';

/** A skill the agent can follow. */
export interface Skill {
  name: string;
  description: string;
  /** Always in the system prompt (true) or listed and loaded on demand with load_skill (false). */
  always: boolean;
  /** The Markdown after the front matter, trimmed. */
  body: string;
  /** Absolute path of the SKILL.md file. */
  path: string;
}

/** A SKILL.md that could not be used, and why. */
export interface SkillError {
  path: string;
  message: string;
}

export interface SkillsLoaderOptions {
  /** The skills folder, normally `<workspace>/skills`. A missing folder means no skills. */
  dir: string;
  /** Malformed skills are logged here at warn, once per change. @defaultValue a silent logger */
  logger?: Logger;
}

/** Skill names: lower-case letters, digits and dashes, starting with a letter or digit. */
export const SKILL_NAME = /^[a-z0-9][a-z0-9-]*$/;

const requiredText = (field: string) => ({
  error: (issue: { input?: unknown }) =>
    issue.input === undefined ? `${field} is required` : `${field} must be text`,
});

const FrontMatter = z.object({
  name: z
    .string(requiredText('name'))
    .regex(SKILL_NAME, { error: 'name must be lower-case letters, digits and dashes (e.g. daily-briefing)' }),
  description: z.string(requiredText('description')).trim().min(1, { error: 'description is empty' }),
  always: z.boolean({ error: 'always must be true or false' }).optional(),
});

type Parsed = { skill: Skill } | { error: SkillError };

interface CacheEntry {
  mtimeMs: number;
  size: number;
  result: Parsed;
}

/** Reads and validates the skills of one workspace. */
export class SkillsLoader {
  readonly dir: string;
  private readonly logger: Logger;
  private cache = new Map<string, CacheEntry>();
  private readonly reader: CachedFileReader;
  /** How many SKILL.md files were parsed from disk (for tests and metrics). */
  parses = 0;

  constructor(options: SkillsLoaderOptions) {
    this.dir = path.resolve(options.dir);
    // Confined to the skills folder: a SKILL.md symlinked or hard-linked from elsewhere is not read.
    this.logger = options.logger ?? silentLogger();
    this.reader = new CachedFileReader({
      workspace: this.dir,
      onRefused: (file, reason) => this.logger.warn({ path: file, reason }, 'skills: skill file not read'),
    });
  }

  /** Every skill (sorted by name) and every malformed one. Unchanged files are not re-read. */
  async load(): Promise<{ skills: Skill[]; errors: SkillError[] }> {
    let entries: string[];
    try {
      entries = (await readdir(this.dir, { withFileTypes: true }))
        .filter((e) => e.isDirectory() || e.isSymbolicLink())
        .map((e) => e.name)
        .sort();
    } catch (err) {
      if (isMissing(err)) {
        this.cache.clear();
        return { skills: [], errors: [] };
      }
      throw err;
    }
    const next = new Map<string, CacheEntry>();
    const skills: Skill[] = [];
    const errors: SkillError[] = [];
    for (const folder of entries) {
      const file = path.join(this.dir, folder, 'SKILL.md');
      let info: Awaited<ReturnType<typeof stat>>;
      try {
        info = await stat(file);
      } catch (err) {
        if (isMissing(err)) continue; // a folder without SKILL.md is not a skill
        throw err;
      }
      // A FIFO, socket or device named SKILL.md is not a skill; read without blocking should one be swapped in.
      if (!info.isFile()) continue;
      let entry = this.cache.get(file);
      if (!entry || entry.mtimeMs !== info.mtimeMs || entry.size !== info.size) {
        const text = await this.reader.read(file);
        if (text === undefined) continue;
        this.parses += 1;
        entry = { mtimeMs: info.mtimeMs, size: info.size, result: await parseSkill(file, folder, text) };
        if ('error' in entry.result) {
          this.logger.warn(
            { path: file, reason: entry.result.error.message },
            'skills: malformed skill skipped',
          );
        }
      }
      next.set(file, entry);
      if ('skill' in entry.result) skills.push(entry.result.skill);
      else errors.push(entry.result.error);
    }
    this.cache = next;
    return { skills, errors };
  }

  /** The valid skill with this name, or undefined. */
  async get(name: string): Promise<Skill | undefined> {
    if (!SKILL_NAME.test(name)) return undefined;
    const { skills } = await this.load();
    return skills.find((s) => s.name === name);
  }
}

/**
 * Parses one SKILL.md. `folder` is the name of the folder holding it, which
 * the skill's `name` must equal (so `load_skill(name)` and the folder agree).
 */
export async function parseSkill(file: string, folder: string, text: string): Promise<Parsed> {
  const fail = (message: string): Parsed => ({ error: { path: file, message } });
  const match = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!match) {
    return fail('no front matter: start the file with a "---" line, then name: and description:, then "---"');
  }
  let data: unknown;
  try {
    data = await readFrontMatter(match[1]!);
  } catch (err) {
    return fail(`front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    return fail('front matter must be a YAML mapping with name: and description:');
  }
  const result = FrontMatter.safeParse(data);
  if (!result.success) {
    return fail(result.error.issues.map((issue) => issue.message).join('; '));
  }
  const { name, description, always } = result.data;
  if (name !== folder) return fail(`name "${name}" does not match its folder "${folder}"`);
  const body = text.slice(match[0].length).trim();
  return { skill: { name, description, always: always ?? false, body, path: file } };
}
