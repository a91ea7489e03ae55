/**
 * What a working bwrap told us, remembered in magpie's state folder: its
 * version, its options, and that a probe run worked. `magpie agent` would
 * otherwise start three processes (`bwrap --version`, `--help`, a probe)
 * before every turn. The record is keyed by the bwrap binary (path, inode,
 * size, mtime), the kernel and the user, and kept for an hour, so a new
 * bwrap, a kernel update or a changed user namespace setting is noticed.
 * Only successes are kept: a failing sandbox is probed again each start.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

const RecordSchema = z.object({
  key: z.string(),
  at: z.number(),
  version: z.string(),
  features: z.object({ disableUserns: z.boolean(), tmpfsSize: z.boolean() }),
});

/** A remembered successful probe. */
export type ProbeRecord = z.infer<typeof RecordSchema>;

/** How long a remembered probe counts. */
export const PROBE_MAX_AGE_MS = 60 * 60 * 1000;

/** The key of this bwrap on this kernel for this user. */
export async function probeKey(bwrap: string): Promise<string> {
  const st = await stat(bwrap);
  return [bwrap, st.ino, st.size, st.mtimeMs, os.release(), process.getuid?.() ?? -1].join(':');
}

/** The record in `file` when it matches `key` and is recent; undefined otherwise (missing, stale, corrupt). */
export async function readProbe(
  file: string,
  key: string,
  now = Date.now(),
): Promise<ProbeRecord | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined; // a corrupt record is as good as none: probe again and overwrite it
  }
  const parsed = RecordSchema.safeParse(json);
  if (!parsed.success || parsed.data.key !== key) return undefined;
  const age = now - parsed.data.at;
  return age >= 0 && age < PROBE_MAX_AGE_MS ? parsed.data : undefined;
}

/** Writes `record` to `file` atomically (temp file and rename), mode 0600, its folder 0700. */
export async function writeProbe(file: string, record: ProbeRecord): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  await rename(temp, file);
}
