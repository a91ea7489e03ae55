/**
 * Reading an append-only session log on from where the index stopped: the
 * complete lines after an offset, in blocks (a half-written last line waits
 * for the next sync), and a check that the bytes before that offset are the
 * ones seen last time (else the log was rewritten and is read again whole).
 */
import type { FileHandle } from 'node:fs/promises';
import { type Chunk, sessionChunks } from './chunks.js';
import type { LocalClock } from './dates.js';
import { readRange } from './sources.js';

/** Session logs are read in blocks of this size. */
const BLOCK_BYTES = 4 * 1024 * 1024;
/** A single session line longer than this (an inlined image) is skipped. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** Bytes before a log's read offset remembered to notice a rewritten log. */
const TAIL_BYTES = 64;

/** How far a log has been read: the offset after its last complete line, its lines, the bytes before. */
export interface LogProgress {
  readTo: number;
  lines: number;
  /** The TAIL_BYTES bytes before `readTo`, base64. */
  tail: string;
}

/** True when the log still holds, just before `row.readTo`, the bytes seen there last time. */
export async function continuesFrom(handle: FileHandle, size: number, row: LogProgress): Promise<boolean> {
  if (size < row.readTo) return false;
  const start = Math.max(0, row.readTo - TAIL_BYTES);
  const tail = await readRange(handle, start, row.readTo - start);
  return tail.toString('base64') === row.tail;
}

/**
 * Reads the complete lines from `from.readTo` up to `size`, in blocks; a
 * half-written last line waits for the next sync. A line longer than
 * MAX_LINE_BYTES is counted but not indexed.
 */
export async function readLogLines(
  handle: FileHandle,
  size: number,
  from: { readTo: number; lines: number },
  clock: LocalClock,
): Promise<{ chunks: Chunk[]; progress: LogProgress }> {
  const chunks: Chunk[] = [];
  let position = from.readTo;
  let readTo = from.readTo;
  let lines = from.lines;
  let carry: Buffer = Buffer.alloc(0);
  let skipping = false;
  while (position < size) {
    const block = await readRange(handle, position, Math.min(BLOCK_BYTES, size - position));
    if (block.length === 0) break;
    let base = position - carry.length;
    let data = carry.length > 0 ? Buffer.concat([carry, block]) : block;
    position += block.length;
    if (skipping) {
      const newline = data.indexOf(0x0a);
      if (newline < 0) {
        carry = Buffer.alloc(0);
        continue;
      }
      lines += 1;
      readTo = base + newline + 1;
      data = data.subarray(newline + 1);
      base = readTo;
      skipping = false;
    }
    const end = data.lastIndexOf(0x0a);
    if (end >= 0) {
      const complete = data.subarray(0, end);
      chunks.push(...sessionChunks(complete.toString('utf8'), lines + 1, clock));
      lines += countLines(complete);
      readTo = base + end + 1;
      carry = Buffer.from(data.subarray(end + 1));
    } else carry = Buffer.from(data);
    if (carry.length > MAX_LINE_BYTES) {
      carry = Buffer.alloc(0);
      skipping = true;
    }
  }
  const start = Math.max(0, readTo - TAIL_BYTES);
  const tail = (await readRange(handle, start, readTo - start)).toString('base64');
  return { chunks, progress: { readTo, lines, tail } };
}

/** Lines in a block that ended just before a newline: its newlines plus the last one. */
function countLines(block: Buffer): number {
  let n = 1;
  for (let at = block.indexOf(0x0a); at >= 0; at = block.indexOf(0x0a, at + 1)) n += 1;
  return n;
}
