/**
 * Small helpers for the tests that run the built CLI as a subprocess and read
 * what it printed: collecting its output, the lines a person reads on stderr,
 * and a loopback port nothing listens on.
 */
import type { ChildProcess } from 'node:child_process';

/** What a finished command printed, and its exit code (128 when a signal ended it). */
export interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Collects a child's stdout and stderr until it closes. */
export function collect(child: ChildProcess): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr }));
  });
}

/** What a person reads on stderr: the non-empty lines that are not JSON log records. */
export const said = (stderr: string): string[] =>
  stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));

export { closedPort } from '../fakes/net.js';
