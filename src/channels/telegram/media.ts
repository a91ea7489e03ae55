/**
 * Fetching attachments: `getFile`, then the download, with the size limit
 * enforced before and during the transfer. Failures become notes the model
 * reads, never exceptions that would hold up the update.
 */
import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Telegram } from 'telegraf';
import type { Media } from '../../bus/messages.js';
import { describeError } from '../../errors/index.js';
import { type Logger, redactSecrets } from '../../log/index.js';
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
  const tooLarge = (size: number): DownloadResult => ({
    ok: false,
    note: `too large (${size} bytes; the limit is ${maxBytes}), not downloaded`,
  });
  try {
    const url = await telegram.getFileLink(fileId);
    // A local Bot API server (--local) answers with an absolute path on its disk.
    if (url.protocol === 'file:') {
      const path = fileURLToPath(url);
      const info = await stat(path);
      if (info.size > maxBytes) return tooLarge(info.size);
      return { ok: true, bytes: await readFile(path) };
    }
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 60_000);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const res = await fetch(url, { signal });
    if (!res.ok || !res.body) return { ok: false, note: `could not be downloaded (HTTP ${res.status})` };
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body.cancel();
      return tooLarge(declared);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body) {
      total += chunk.length;
      if (total > maxBytes) return tooLarge(total);
      chunks.push(Buffer.from(chunk));
    }
    return { ok: true, bytes: Buffer.concat(chunks) };
  } catch (err) {
    const reason = redactSecrets(describeError(err), [telegram.token]);
    options.logger.warn({ err: reason }, 'Telegram file download failed');
    return { ok: false, note: `could not be downloaded (${reason})` };
  }
}
