/**
 * Fetching attachments: `getFile`, then the shared size-capped download
 * (or a local Bot API server's file, size checked first). Failures become notes the model
 * reads, never exceptions that would hold up the update.
 */
import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Telegram } from 'telegraf';
import { describeError } from '../../errors/index.js';
import { type Logger, redactSecrets } from '../../log/index.js';
import type { Media } from '../../messages/messages.js';
import { downloadCapped, downloadFailureNote, tooLargeNote } from '../download.js';
import type { MediaPlan } from './inbound.js';

export interface FetchMediaOptions {
  telegram: Telegram;
  logger: Logger;
  maxBytes: number;
  /** Abort a download (stop). */
  signal?: AbortSignal;
  /** Per-download time limit. @defaultValue 60000 */
  timeoutMs?: number;
}

/** Turns plans into bus media: fetched ones get a data: URL, the rest a note. */
export async function fetchMedia(plans: MediaPlan[], options: FetchMediaOptions): Promise<Media[]> {
  const media: Media[] = [];
  for (const plan of plans) {
    const base: Media = {
      kind: plan.kind,
      mimeType: plan.mimeType,
      ...(plan.name ? { name: plan.name } : {}),
      ...(plan.size !== undefined ? { size: plan.size } : {}),
      ...(plan.note ? { note: plan.note } : {}),
    };
    if (!plan.download || !plan.fileId) {
      media.push(base);
      continue;
    }
    const result = await download(plan.fileId, options);
    if (result.ok) {
      media.push({
        ...base,
        size: result.bytes.length,
        dataUrl: `data:${plan.mimeType};base64,${result.bytes.toString('base64')}`,
      });
    } else {
      media.push({ ...base, note: result.note });
    }
  }
  return media;
}

type DownloadResult = { ok: true; bytes: Buffer } | { ok: false; note: string };

async function download(fileId: string, options: FetchMediaOptions): Promise<DownloadResult> {
  const { telegram, maxBytes } = options;
  try {
    const url = await telegram.getFileLink(fileId);
    // A local Bot API server (--local) answers with an absolute path on its disk.
    if (url.protocol === 'file:') {
      const path = fileURLToPath(url);
      const info = await stat(path);
      if (info.size > maxBytes) return { ok: false, note: tooLargeNote(info.size, maxBytes) };
      return { ok: true, bytes: await readFile(path) };
    }
    const got = await downloadCapped(url, {
      maxBytes,
      timeoutMs: options.timeoutMs ?? 60_000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return got.ok ? got : { ok: false, note: downloadFailureNote(got, maxBytes) };
  } catch (err) {
    const reason = redactSecrets(describeError(err), [telegram.token]);
    options.logger.warn({ err: reason }, 'Telegram file download failed');
    return { ok: false, note: `could not be downloaded (${reason})` };
  }
}
