/**
 * The chats' model choices (`/model`) for `magpie agent`: one small JSON file
 * in the state folder (`chat-models.json`, session key → model id), replaced
 * atomically on each change, so a choice survives the process.
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { PRIVATE_DIR_MODE } from '../config/state-dir.js';
import type { Logger } from '../log/index.js';
import { writeFileAtomic } from '../workspace/atomic-write.js';
import { isMissing } from '../workspace/cached-file.js';

const ChoicesSchema = z.record(z.string(), z.string());

/** The file's name in the state folder. */
export const MODEL_CHOICES_FILE = 'chat-models.json';

/** Implements the agent's `ModelChoiceStore` port (agent/ports.ts) structurally: sessions import no agent code. */
export class FileModelChoiceStore {
  readonly #file: string;
  readonly #logger: Logger;

  /** @param stateDir magpie's state folder (config.stateDir); created owner-only when missing. */
  constructor(stateDir: string, logger: Logger) {
    this.#file = path.join(stateDir, MODEL_CHOICES_FILE);
    this.#logger = logger;
  }

  async get(sessionKey: string): Promise<string | undefined> {
    return (await this.#read())[sessionKey];
  }

  async set(sessionKey: string, model: string | undefined): Promise<void> {
    const choices = await this.#read();
    if (model === undefined) delete choices[sessionKey];
    else choices[sessionKey] = model;
    await mkdir(path.dirname(this.#file), { recursive: true, mode: PRIVATE_DIR_MODE });
    await writeFileAtomic(this.#file, `${JSON.stringify(choices, null, 2)}\n`);
  }

  /** The choices on disk; a missing file is none, an unreadable one is none with a warning. */
  async #read(): Promise<Record<string, string>> {
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (err) {
      if (isMissing(err)) return {};
      throw err;
    }
    const parsed = ChoicesSchema.safeParse(parseJson(text));
    if (parsed.success) return { ...parsed.data };
    this.#logger.warn(
      { file: this.#file },
      'chat model choices unreadable; every chat uses the default model',
    );
    return {};
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (_err) {
    return undefined; // not JSON: the schema check that follows rejects it
  }
}
