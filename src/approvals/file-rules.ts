/**
 * The chats' "always allow" rules for `magpie agent`, which has no Redis: one
 * small JSON file in the state folder (`approval-rules.json`, chat → rules),
 * replaced atomically on each change. `magpie approvals` reads it too.
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { PRIVATE_DIR_MODE } from '../config/state-dir.js';
import { type ApprovalRule, ApprovalRuleSchema } from '../messages/approval.js';
import { writeFileAtomic } from '../workspace/atomic-write.js';
import { isMissing } from '../workspace/cached-file.js';
import type { ApprovalRules } from './ports.js';

const FileSchema = z.record(z.string(), z.array(ApprovalRuleSchema));

/** The file's name in the state folder. */
export const APPROVAL_RULES_FILE = 'approval-rules.json';

const same = (a: ApprovalRule, b: ApprovalRule) => a.tool === b.tool && a.prefix === b.prefix;

export class FileApprovalRules implements ApprovalRules {
  readonly #file: string;

  /** @param stateDir magpie's state folder (config.stateDir). */
  constructor(stateDir: string) {
    this.#file = path.join(stateDir, APPROVAL_RULES_FILE);
  }

  async rules(chatKey: string): Promise<ApprovalRule[]> {
    return (await this.all())[chatKey] ?? [];
  }

  async addRule(chatKey: string, rule: ApprovalRule): Promise<void> {
    const all = await this.all();
    const rules = all[chatKey] ?? [];
    if (rules.some((r) => same(r, rule))) return;
    all[chatKey] = [...rules, rule];
    await this.#write(all);
  }

  async removeRule(chatKey: string, rule: ApprovalRule): Promise<boolean> {
    const all = await this.all();
    const rules = all[chatKey] ?? [];
    const kept = rules.filter((r) => !same(r, rule));
    if (kept.length === rules.length) return false;
    if (kept.length === 0) delete all[chatKey];
    else all[chatKey] = kept;
    await this.#write(all);
    return true;
  }

  /** Every chat's rules. An unreadable file holds none (nothing is allowed without asking). */
  async all(): Promise<Record<string, ApprovalRule[]>> {
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (err) {
      if (isMissing(err)) return {};
      throw err;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return {};
    }
    const parsed = FileSchema.safeParse(json);
    return parsed.success ? { ...parsed.data } : {};
  }

  async #write(all: Record<string, ApprovalRule[]>): Promise<void> {
    await mkdir(path.dirname(this.#file), { recursive: true, mode: PRIVATE_DIR_MODE });
    await writeFileAtomic(this.#file, `${JSON.stringify(all, null, 2)}\n`);
  }
}
